"""Training in two processes, as slurm/train_job.sh runs it (``torchrun --nproc_per_node N -m playprm train-*``),
here on CPU with the gloo backend and the tiny card-layout model: the same effective batch as one process gives
the same losses; rank 0 alone writes the run's files (rank 1 only its RNG state in each checkpoint, as the HF
Trainer does for every process); the PRM's validation metrics cover both ranks' predictions; a resumed run
continues with the same data order.

Each torchrun starts two Python processes that import torch, transformers and TRL: about 30 s per run on two
shared cores; the module runs three of them.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from playprm.cli import main

REPO_ROOT = Path(__file__).resolve().parents[1]
LAUNCH = Path(__file__).with_name("distributed_launch.py")
RECIPES = REPO_ROOT / "recipes" / "tiny"
# every setting that decides the losses, shared by the one- and the two-process runs; no dropout, so that the
# two runs differ only by how the batch is split (dropout masks are drawn per process)
COMMON = ["--max-steps", "4", "--save-steps", "2", "--eval-steps", "2", "--logging-steps", "1",
          "--lora-dropout", "0", "--effective-batch-size", "2", "--disable-tqdm", "true"]

pytestmark = pytest.mark.usefixtures("one_cpu_thread")


def torchrun(command: str, recipe: Path, model: Path, data: Path, out: Path, *extra: str) -> list[str]:
    """Run ``playprm COMMAND`` in two processes (1 sequence per process and step); returns the files that rank 1
    wrote under ``out`` (relative paths)."""
    writes = out.parent / f"{out.name}.rank-writes"
    writes.unlink(missing_ok=True)
    env = {**os.environ, "PLAYPRM_WRITES_LOG": str(writes), "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", str(LAUNCH),
         command, "--config", str(recipe), "--model", str(model), "--data", str(data), "--output-dir", str(out),
         *COMMON, "--per-device-train-batch-size", "1", *extra],
        capture_output=True, text=True, timeout=540, env=env)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-4000:]
    return [line.split(" ", 1)[1] for line in writes.read_text().splitlines()] if writes.exists() else []


def one_process(command: str, recipe: Path, model: Path, data: Path, out: Path) -> None:
    """The same run in this process, 2 sequences per step."""
    assert main([command, "--config", str(recipe), "--model", str(model), "--data", str(data),
                 "--output-dir", str(out), *COMMON, "--per-device-train-batch-size", "2"]) == 0


def step_losses(out: Path) -> list[float]:
    state = json.loads((out / "trainer_state.json").read_text())
    return [entry["loss"] for entry in state["log_history"] if "loss" in entry]


def only_rng_states(files: list[str]) -> list[str]:
    """What rank 1 wrote besides ``checkpoint-*/rng_state_1.pth`` (the Trainer saves each process's RNG)."""
    return [f for f in files if not (f.startswith("checkpoint-") and f.endswith("/rng_state_1.pth"))]


def write_sft_data(folder: Path) -> Path:
    folder.mkdir(parents=True)
    for split, count in (("train", 8), ("validation", 3)):
        rows = [{"messages": [{"role": "user", "content": f"Guess word {i} of {split}."},
                              {"role": "assistant", "content": f"GUESS: {'house river stone'.split()[i % 3]}{i}"}]}
                for i in range(count)]
        (folder / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def write_prm_data(folder: Path) -> Path:
    """8 training and 5 validation episodes of 3 turns; label 1 exactly when the reply says GOOD."""
    rng = random.Random(0)
    folder.mkdir(parents=True)
    for split, episodes in (("train", range(8)), ("validation", range(8, 13))):
        lines = []
        for episode in episodes:
            context = [{"role": "user", "content": f"Game {episode}. Guess a five-letter word."}]
            meta = {"game": "wordle", "experiment": "easy", "game_id": episode, "episode": f"episode_{episode}",
                    "player": "Player 1"}
            for turn in range(3):
                good = rng.random() < 0.5
                reply = f"GUESS: {rng.choice(['apple', 'house', 'river'])} {'GOOD' if good else 'BAD'}"
                lines.append({"messages": list(context), "response": reply, "label": float(good),
                              "label_kind": "outcome", "n_rollouts": 0, "meta": {**meta, "turn": turn}})
                context = context + [{"role": "assistant", "content": reply},
                                     {"role": "user", "content": "Feedback: not yet. Guess again."}]
        (folder / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    return folder


def train_both(command: str, recipe: Path, model: Path, data: Path, root: Path) -> dict:
    """The one-process run (``one``) and the two-process run (``two``) of the same settings, and what rank 1
    wrote."""
    one_process(command, recipe, model, data, root / "one")
    rank1 = torchrun(command, recipe, model, data, root / "two")
    return {"root": root, "data": data, "model": model, "one": root / "one", "two": root / "two", "rank1": rank1}


@pytest.fixture(scope="module")
def sft_runs(card_models, tmp_path_factory):
    root = tmp_path_factory.mktemp("sft-ddp")
    return train_both("train-sft", RECIPES / "sft.yaml", card_models["policy"], write_sft_data(root / "data"), root)


@pytest.fixture(scope="module")
def prm_runs(card_models, tmp_path_factory):
    root = tmp_path_factory.mktemp("prm-ddp")
    return train_both("train-prm", RECIPES / "prm.yaml", card_models["policy"], write_prm_data(root / "data"), root)


def test_two_process_sft_matches_the_one_process_batch_and_only_rank_0_writes_the_run(sft_runs):
    one, two = sft_runs["one"], sft_runs["two"]
    metrics = json.loads((two / "metrics.json").read_text())
    assert metrics["world_size"] == 2 and metrics["gradient_accumulation_steps"] == 1  # 1 x 1 x 2 = effective 2
    assert step_losses(two) == pytest.approx(step_losses(one), rel=1e-3) and len(step_losses(two)) == 4
    assert sorted(p.name for p in two.glob("checkpoint-*")) == ["checkpoint-2", "checkpoint-4"]
    assert [e["model_name"] for e in json.loads((two / "model_registry.json").read_text())] == ["two"]
    assert (two / "README.md").is_file() and (two / "adapter_model.safetensors").is_file()
    assert sft_runs["rank1"], "rank 1's writes were not recorded: its RNG states should be there"
    assert only_rng_states(sft_runs["rank1"]) == []


def test_a_resumed_two_process_sft_run_continues_the_same_data_order(sft_runs):
    from safetensors.torch import load_file

    straight, resumed = sft_runs["two"], sft_runs["root"] / "resumed"
    resumed.mkdir()
    shutil.copytree(straight / "checkpoint-2", resumed / "checkpoint-2")  # as if stopped before checkpoint-4
    rank1 = torchrun("train-sft", RECIPES / "sft.yaml", sft_runs["model"], sft_runs["data"], resumed, "--resume")
    assert only_rng_states(rank1) == []
    assert step_losses(resumed) == pytest.approx(step_losses(straight), rel=1e-4)  # steps 3-4 saw the same data
    expected, actual = load_file(straight / "adapter_model.safetensors"), load_file(resumed / "adapter_model.safetensors")
    assert expected.keys() == actual.keys()
    for key in expected:
        torch.testing.assert_close(actual[key], expected[key], rtol=1e-4, atol=1e-5)


def test_two_process_prm_metrics_cover_both_ranks_predictions(prm_runs):
    from playprm.prm.model import load_prm
    from playprm.prm.scorer import PRMScorer
    from playprm.train.prm_metrics import prm_metrics

    two = prm_runs["two"]
    metrics = json.loads((two / "metrics.json").read_text())
    records = [json.loads(line) for line in (prm_runs["data"] / "validation.jsonl").read_text().splitlines()]
    # 5 validation sequences: 3 on rank 0 and 2 on rank 1 (plus one repeated to even the batches)
    assert metrics["world_size"] == 2 and metrics["validation_sequences"] == 5
    assert metrics["validation_count"] == len(records) == 15
    model, tokenizer, _ = load_prm(two, device="cpu")
    scorer = PRMScorer(model, tokenizer)
    scores = [scorer.score([r["messages"]], [[r["response"]]])[0][0] for r in records]
    expected = prm_metrics(scores, [r["label"] for r in records])
    assert metrics["validation_brier"] == pytest.approx(expected["brier"], abs=1e-4)
    assert metrics.get("validation_auroc") == pytest.approx(expected.get("auroc"), abs=1e-6)


def test_two_process_prm_matches_the_one_process_batch_and_only_rank_0_writes_the_run(prm_runs):
    one, two = prm_runs["one"], prm_runs["two"]
    assert step_losses(two) == pytest.approx(step_losses(one), rel=1e-3) and len(step_losses(two)) == 4
    assert sorted(p.name for p in two.glob("checkpoint-*")) == ["checkpoint-2", "checkpoint-4"]
    assert (two / "README.md").is_file() and (two / "head.safetensors").is_file()
    assert prm_runs["rank1"] and only_rng_states(prm_runs["rank1"]) == []
