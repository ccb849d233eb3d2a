"""The output folder of a training run: checkpoints, the final model, metrics.json; and resuming from it."""

from __future__ import annotations

from pathlib import Path

from playprm.errors import UsageError

METRICS_FILE = "metrics.json"


def checkpoint_to_resume(output_dir: Path, resume: bool) -> str | None:
    """The checkpoint ``--resume`` continues from (None for a fresh run), after checking ``output_dir``.

    A fresh run refuses a folder that already holds checkpoints or a finished run, so nothing is overwritten by
    accident; ``--resume`` needs a ``checkpoint-*`` folder there.
    """
    from transformers.trainer_utils import get_last_checkpoint

    if output_dir.exists() and not output_dir.is_dir():
        raise UsageError(f"--output-dir {output_dir} is a file; give a folder")
    last = get_last_checkpoint(str(output_dir)) if output_dir.is_dir() else None
    if resume:
        if last is None:
            raise UsageError(f"--resume: {output_dir} holds no checkpoint-* folder to continue from; "
                             "run without --resume to start training")
        return last
    if last is not None or (output_dir / METRICS_FILE).exists():
        raise UsageError(f"--output-dir {output_dir} already holds a run ({Path(last).name if last else METRICS_FILE}); "
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
    return {
        "train_loss": result.training_loss,
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


def training_callbacks(config, callbacks=()) -> list:
    """``callbacks`` plus early stopping on ``metric_for_best_model`` when the config asks for it."""
    from transformers import EarlyStoppingCallback

    extra = list(callbacks)
    if config.early_stopping_patience:
        extra.append(EarlyStoppingCallback(early_stopping_patience=config.early_stopping_patience))
    return extra
