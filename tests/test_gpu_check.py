"""benchmarks/gpu_check.py on a machine without a GPU: the import check names what is missing before any step runs
(a module the steps import, a wheel missing from the installed dependency closure), and every GPU step is one SKIP
line, with exit 0 and the JSON and markdown files written."""

from __future__ import annotations

import importlib.util
import json
import sys
from importlib import metadata
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture()
def gpu_check(monkeypatch, tmp_path):
    spec = importlib.util.spec_from_file_location("gpu_check", REPO_ROOT / "benchmarks" / "gpu_check.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setenv("OUT", str(tmp_path))
    return module


def run(gpu_check, monkeypatch, *args: str) -> int:
    monkeypatch.setattr(sys, "argv", ["gpu_check.py", *args])
    return gpu_check.main()


def test_a_module_a_step_imports_is_named_and_nothing_runs(gpu_check, monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(gpu_check.IMPORTS, "decode", gpu_check.IMPORTS["decode"] + ["playprm_gpu_check_absent"])
    assert run(gpu_check, monkeypatch, "--steps", "decode") == 1
    out = capsys.readouterr().out
    assert "gpu_check: missing playprm_gpu_check_absent: not installed (needed by: decode)" in out
    assert "pip install --no-index --no-deps" in out and "SKIP" not in out
    assert not (tmp_path / "gpu_check.json").exists()


def test_a_wheel_missing_from_the_installed_closure_is_named_with_what_requires_it(gpu_check, monkeypatch):
    requires = {"playprm": ["datasets>=3", "bitsandbytes; extra == 'gpu'"], "datasets": ["xxhash"]}

    def fake_requires(name):
        if name not in requires:
            raise metadata.PackageNotFoundError(name)
        return requires[name]

    monkeypatch.setattr(metadata, "requires", fake_requires)
    # xxhash is absent; bitsandbytes is asked for by an extra only, so the base install does not need it
    assert gpu_check.missing_distributions(["playprm"]) == {"xxhash": "not installed (required by datasets)"}


def test_without_cuda_each_step_is_one_skip_line_exit_0_and_both_files_are_written(gpu_check, monkeypatch,
                                                                                   tmp_path, capsys):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(gpu_check, "DPO_COMMAND", "playprm.commands.no_such_command")
    assert run(gpu_check, monkeypatch, "--steps", "inference", "decode", "dpo") == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("SKIP")]
    assert lines == ["SKIP inference: no CUDA device (torch.cuda.is_available() is False); run on a GPU node",
                     "SKIP decode: no CUDA device (torch.cuda.is_available() is False); run on a GPU node",
                     "SKIP dpo: train-dpo not available (this playprm has no `playprm train-dpo` command yet)"]
    data = json.loads((tmp_path / "gpu_check.json").read_text())
    assert [step["status"] for step in data["steps"].values()] == ["skipped"] * 3
    assert "| dpo | skipped | train-dpo not available" in (tmp_path / "gpu_check.md").read_text()


def test_the_benchmark_tokenizer_needs_no_word_list_and_prompts_need_no_clemcore(monkeypatch):
    from playprm import chat
    from playprm.bench import gpu

    monkeypatch.setitem(sys.modules, "english_words", None)  # importing it now raises ImportError
    monkeypatch.setitem(sys.modules, "clemcore.backends.utils", None)
    tokenizer = gpu.bench_tokenizer(512)
    messages = [{"role": "system", "content": "Play."}, {"role": "user", "content": "Guess."}]
    assert tokenizer.decode(chat.prompt_ids(tokenizer, messages)).startswith("<|im_start|>system\nPlay.")
    with pytest.raises(ImportError):  # messages clemcore would merge still go through clemcore
        chat.prompt_ids(tokenizer, messages + [{"role": "user", "content": "Again."}])
