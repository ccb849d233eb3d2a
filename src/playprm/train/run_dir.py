"""The output folder of a training run: checkpoints, the final model, metrics.json; and resuming from it."""

from __future__ import annotations

import logging
import re
from pathlib import Path

from playprm.errors import UsageError
from playprm.results import read_json

logger = logging.getLogger(__name__)

METRICS_FILE = "metrics.json"
CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")  # transformers' PREFIX_CHECKPOINT_DIR-<global step>
TRAINER_STATE = "trainer_state.json"  # the Trainer writes it last, after weights, optimizer and RNG states
# what transformers' Trainer._load_from_checkpoint accepts as weights (DeepSpeed / FSDP keep them in subfolders)
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                "pytorch_model.bin.index.json", "adapter_model.safetensors", "adapter_model.bin")


def checkpoint_problem(folder: Path) -> str:
    """Why ``folder`` is not a checkpoint the Trainer can resume from (a save killed midway), or ""."""
    if not (folder / TRAINER_STATE).is_file():
        return f"no {TRAINER_STATE} (the save was cut short)"
    state, reason = read_json(folder / TRAINER_STATE)
    if reason or not isinstance(state, dict):
        return f"{TRAINER_STATE} cannot be read ({reason or 'not an object'})"
    if not any((folder / name).is_file() for name in WEIGHT_FILES) and not any(p.is_dir() for p in folder.iterdir()):
        return "no weights file"
    return ""


def complete_checkpoint(output_dir: Path) -> tuple[str | None, list[tuple[str, str]]]:
    """The newest complete ``checkpoint-<step>`` folder in ``output_dir`` (None if none) and
    ``(name, problem)`` for each newer one that is incomplete."""
    steps = sorted(((int(match[1]), path) for path in output_dir.iterdir()
                    if path.is_dir() and (match := CHECKPOINT.match(path.name))), reverse=True)
    skipped = []
    for _, path in steps:
        problem = checkpoint_problem(path)
        if not problem:
            return str(path), skipped
        skipped.append((path.name, problem))
    return None, skipped


def checkpoint_to_resume(output_dir: Path, resume: bool) -> str | None:
    """The checkpoint ``--resume`` continues from (None for a fresh run), after checking ``output_dir``.

    A fresh run refuses a folder that already holds checkpoints or a finished run, so nothing is overwritten by
    accident; ``--resume`` needs a ``checkpoint-*`` folder there.
    """
    if output_dir.exists() and not output_dir.is_dir():
        raise UsageError(f"--output-dir {output_dir} is a file; give a folder")
    last, skipped = complete_checkpoint(output_dir) if output_dir.is_dir() else (None, [])
    if resume:
        if last is None and skipped:
            raise UsageError(f"--resume: {output_dir} holds no complete checkpoint-* folder to continue from "
                             f"({skipped[0][0]}: {skipped[0][1]}); remove them and run without --resume to start "
                             "training")
        if last is None:
            raise UsageError(f"--resume: {output_dir} holds no checkpoint-* folder to continue from; "
                             "run without --resume to start training")
        for name, problem in skipped:
            logger.warning("skipping %s in %s: %s; resuming from %s", name, output_dir, problem, Path(last).name)
        return last
    held = last or (skipped[0][0] if skipped else None)
    if held is not None or (output_dir / METRICS_FILE).exists():
        raise UsageError(f"--output-dir {output_dir} already holds a run ({Path(held).name if held else METRICS_FILE}); "
                         "pass --resume to continue it, or choose a new folder")
    return None


def check_batch_fits(config, train_size: int, what: str) -> None:
    """Refuse a batch larger than the training set (a step would repeat examples within itself)."""
    world_size = config.world_size
    per_step = config.per_device_train_batch_size * world_size
    if per_step > train_size:
        raise UsageError(f"the batch of {per_step} ({config.per_device_train_batch_size} per device x {world_size} "
                         f"processes) is larger than the {train_size} training {what}; lower "
                         "--per-device-train-batch-size")
    effective = per_step * config.gradient_accumulation_steps
    if effective > train_size:
        raise UsageError(f"the effective batch of {effective} ({config.per_device_train_batch_size} per device x "
                         f"{config.gradient_accumulation_steps} accumulation steps x {world_size} processes) is "
                         f"larger than the {train_size} training {what}; lower --effective-batch-size")


def run_summary(trainer, result) -> dict:
    """What metrics.json reports about the training run itself (``result`` is ``trainer.train()``'s output)."""
    config = trainer.args
    train_loss, loss_steps = whole_run_loss(trainer.state.log_history, trainer.state.global_step,
                                            getattr(trainer, "_initial_global_step", 0), result.training_loss)
    return {
        "train_loss": train_loss,
        "train_loss_steps": loss_steps,
        "global_step": trainer.state.global_step,
        "train_runtime_s": result.metrics.get("train_runtime"),
        "train_steps_per_second": result.metrics.get("train_steps_per_second"),
        "best_checkpoint": trainer.state.best_model_checkpoint,
        "best_metric": trainer.state.best_metric,
        "load_in_4bit": bool(config.load_in_4bit),
        "optim": str(getattr(config.optim, "value", config.optim)),
        "gradient_accumulation_steps": config.gradient_accumulation_steps,
        "world_size": config.world_size,
    }


def whole_run_loss(log_history: list[dict], global_step: int, resumed_at: int,
                   resumed_loss: float) -> tuple[float, int]:
    """The mean training loss over the whole run and the number of steps it covers.

    The Trainer's own ``training_loss`` covers only the steps since ``resumed_at`` (the checkpoint's step). The
    log history (kept in every checkpoint) holds a mean loss per logging interval: each counts for the steps it
    covers, and the steps after the last log are what ``resumed_loss`` leaves over. Steps between the last log
    before the checkpoint and the checkpoint itself were never logged and are not covered.
    """
    if not resumed_at:
        return resumed_loss, global_step
    total, covered, previous, resumed_logged = 0.0, 0, 0, 0.0
    for entry in log_history:
        step, loss = entry.get("step"), entry.get("loss")
        if not isinstance(step, int) or not isinstance(loss, (int, float)) or step <= previous:
            continue
        start = resumed_at if previous < resumed_at < step else previous  # losses restart at the resume
        total += loss * (step - start)
        covered += step - start
        if step > resumed_at:
            resumed_logged += loss * (step - start)
        previous = step
    tail = global_step - max(previous, resumed_at)
    if tail > 0:
        total += resumed_loss * (global_step - resumed_at) - resumed_logged
        covered += tail
    return (total / covered if covered else resumed_loss), covered


def training_callbacks(config, callbacks=()) -> list:
    """``callbacks`` plus the CPU threads following the machine between steps (``FollowThreads``) and early
    stopping on ``metric_for_best_model`` when the config asks for it (and evaluates: with ``--eval-strategy no``
    there is nothing to stop on, and transformers' callback would stop the run)."""
    from transformers import EarlyStoppingCallback, TrainerCallback

    class FollowThreads(TrainerCallback):
        """Between optimizer steps the threads follow the cores idle now (``follow_cpu_threads``)."""

        def on_step_end(self, args, state, control, **kwargs):
            from playprm.transformers_runtime import follow_cpu_threads

            follow_cpu_threads()

    extra = [*callbacks, FollowThreads()]
    if config.early_stopping_patience and str(getattr(config.eval_strategy, "value", config.eval_strategy)) != "no":
        extra.append(EarlyStoppingCallback(early_stopping_patience=config.early_stopping_patience))
    return extra
