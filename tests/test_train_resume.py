"""--resume after a checkpoint save that was cut short (``ValueError: Can't find a valid checkpoint``): the run
continues from the newest complete checkpoint and says which one it skipped; metrics.json's train loss then
covers the whole run, not only the resumed steps."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from playprm.cli import configure_logging, main
from playprm.errors import UsageError
from playprm.train.run_dir import checkpoint_to_resume, whole_run_loss

REPO_ROOT = Path(__file__).resolve().parents[1]
TINY_RECIPE = REPO_ROOT / "recipes" / "tiny" / "sft.yaml"

pytestmark = pytest.mark.usefixtures("one_cpu_thread")


def checkpoint(out: Path, step: int, *, state=True, weights="adapter_model.safetensors") -> Path:
    folder = out / f"checkpoint-{step}"
    folder.mkdir(parents=True)
    if state:
        (folder / "trainer_state.json").write_text(json.dumps({"global_step": step, "log_history": []}))
    if weights:
        (folder / weights).write_bytes(b"weights")
    return folder


def test_the_newest_complete_checkpoint_is_resumed_and_the_incomplete_ones_are_named(tmp_path, caplog):
    checkpoint(tmp_path, 20)
    checkpoint(tmp_path, 40, weights="model.safetensors")  # a PRM checkpoint keeps model.safetensors
    checkpoint(tmp_path, 60, state=False)  # killed while saving: trainer_state.json is written last
    checkpoint(tmp_path, 80, weights=None)
    (checkpoint(tmp_path, 100) / "trainer_state.json").write_text('{"global_step": 1')  # cut off mid-write
    configure_logging(verbose=False)  # as the CLI does: clemcore's logging config silences earlier loggers
    with caplog.at_level("WARNING"):
        assert checkpoint_to_resume(tmp_path, True) == str(tmp_path / "checkpoint-40")
    skipped = " ".join(record.getMessage() for record in caplog.records)
    for name in ("checkpoint-60", "checkpoint-80", "checkpoint-100"):
        assert f"skipping {name}" in skipped
    assert "resuming from checkpoint-40" in skipped


def test_only_incomplete_checkpoints_are_one_line_errors_for_resume_and_for_a_fresh_run(tmp_path):
    checkpoint(tmp_path, 60, state=False)
    with pytest.raises(UsageError, match=r"no complete checkpoint-\* folder .*checkpoint-60: no trainer_state.json"):
        checkpoint_to_resume(tmp_path, True)
    with pytest.raises(UsageError, match=r"already holds a run \(checkpoint-60\)"):
        checkpoint_to_resume(tmp_path, False)


def test_whole_run_loss_counts_each_logged_interval_for_the_steps_it_covers():
    history = [{"step": 2, "loss": 4.0}, {"step": 2, "eval_loss": 9.0}, {"step": 4, "loss": 2.0},
               {"step": 6, "loss": 1.0}]
    # resumed from checkpoint-4: the Trainer's own mean covers steps 5-7 (1.0 over 5-6, so 1.0 at step 7)
    assert whole_run_loss(history, 7, 4, 1.0) == (pytest.approx((4 * 2 + 2 * 2 + 1 * 2 + 1) / 7), 7)
    # a fresh run: the Trainer's mean is already over the whole run
    assert whole_run_loss(history, 6, 0, 2.5) == (2.5, 6)


def train(card_models, data: Path, out: Path, *extra: str) -> int:
    return main(["train-sft", "--config", str(TINY_RECIPE), "--model", str(card_models["policy"]), "--data", str(data),
                 "--output-dir", str(out), "--disable-tqdm", "true", "--logging-steps", "1", "--max-steps", "4",
                 "--save-steps", "2", "--eval-steps", "2", *extra])


def test_resume_after_a_save_cut_short_continues_and_reports_the_loss_of_the_whole_run(card_models, tmp_path,
                                                                                       capsys):
    data = tmp_path / "data"
    data.mkdir()
    conversation = {"messages": [{"role": "user", "content": "Guess a word."},
                                 {"role": "assistant", "content": "GUESS: house"}]}
    for split, count in (("train", 8), ("validation", 2)):
        (data / f"{split}.jsonl").write_text("".join(json.dumps(conversation) + "\n" for _ in range(count)))
    out = tmp_path / "out"
    assert train(card_models, data, out) == 0
    for name in ("trainer_state.json", "adapter_model.safetensors"):  # killed while writing checkpoint-4's weights
        (out / "checkpoint-4" / name).unlink()
    capsys.readouterr()
    assert train(card_models, data, out, "--resume") == 0
    assert "skipping checkpoint-4" in capsys.readouterr().err
    metrics = json.loads((out / "metrics.json").read_text())
    state = json.loads((out / "checkpoint-4" / "trainer_state.json").read_text())  # rewritten by the resumed run
    losses = [entry["loss"] for entry in state["log_history"] if "loss" in entry]
    assert metrics["global_step"] == 4 and metrics["train_loss_steps"] == 4 and len(losses) == 4
    assert metrics["train_loss"] == pytest.approx(sum(losses) / 4, abs=1e-3)


def test_a_full_weight_run_of_the_card_layout_resumes_from_its_checkpoint_weights(card_models, tmp_path, capsys):
    # Qwen3.5 checkpoints are saved in the hub's key layout; the Trainer's own reload matched no key and went on
    # from the base weights. An interrupted run (its last checkpoint gone) must end where an uninterrupted one does.
    import torch
    from safetensors.torch import load_file

    data = tmp_path / "data"
    data.mkdir()
    for split, count in (("train", 8), ("validation", 2)):
        rows = [{"messages": [{"role": "user", "content": f"Guess word {i}."},
                              {"role": "assistant", "content": f"GUESS: house{i}"}]} for i in range(count)]
        (data / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    straight, resumed = tmp_path / "straight", tmp_path / "resumed"
    assert train(card_models, data, straight, "--full-weights", "true", "--learning-rate", "1e-2") == 0
    assert train(card_models, data, resumed, "--full-weights", "true", "--learning-rate", "1e-2") == 0
    for name in ("trainer_state.json", "model.safetensors"):  # as if killed while writing checkpoint-4
        (resumed / "checkpoint-4" / name).unlink()
    assert train(card_models, data, resumed, "--full-weights", "true", "--learning-rate", "1e-2", "--resume") == 0
    assert "unexpected keys" not in capsys.readouterr().err
    expected, actual = load_file(straight / "model.safetensors"), load_file(resumed / "model.safetensors")
    assert expected.keys() == actual.keys()
    for key in expected:
        torch.testing.assert_close(actual[key], expected[key], rtol=1e-4, atol=1e-5)
