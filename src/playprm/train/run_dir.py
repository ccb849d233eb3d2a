"""The output folder of a training run: checkpoints, the final model, metrics.json; and resuming from it. A policy
run (SFT, DPO, GRPO) ends in ``save_policy_run``: the model, its ``model_registry.json`` entry, metrics and card."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

from playprm.errors import UsageError
from playprm.results import read_json
from playprm.train.base_model import BaseModel
from playprm.train.run_record import METRICS_FILE

logger = logging.getLogger(__name__)

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


def log_line(logs: dict) -> str:
    """A Trainer log as one JSON line, numbers as numbers (floats to 4 significant digits), ``total_flos`` left out:
    ``{"loss": 1.234, "grad_norm": 0.5127, "learning_rate": 0.0002, "epoch": 0.5}``."""
    return json.dumps({key: float(f"{value:.4g}") if isinstance(value, float) else value
                       for key, value in logs.items() if key != "total_flos"}, default=str)


def print_logs_as_numbers(trainer) -> None:
    """Swap ``trainer``'s log printer (its progress bar's, or ``PrinterCallback`` without a bar), which prints each
    log as a dict of strings (``{'loss': '1.234'}``), for the same printer writing ``log_line``."""
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    class NumbersProgress(ProgressCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):
            if state.is_world_process_zero and self.training_bar is not None and logs is not None:
                self.training_bar.write(log_line(logs))

    class NumbersPrinter(PrinterCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):
            if state.is_local_process_zero and logs is not None:
                print(log_line(logs))

    for default, numbers in ((ProgressCallback, NumbersProgress), (PrinterCallback, NumbersPrinter)):
        if any(type(callback) is default for callback in trainer.callback_handler.callbacks):
            trainer.remove_callback(default)
            trainer.add_callback(numbers)


def registry_entry(model_name: str, base_model_id: str, adapter_dir: Path, *, load_in_4bit: bool,
                   chat_template_kwargs: dict, eos_to_cull: str, full_weights: bool = False) -> dict:
    """The clemcore ``model_registry.json`` entry of a trained adapter (``huggingface_local`` backend); of a
    full-weight run, the saved model itself.

    Written so that clemcore 3.7.2's own ``clem run`` plays it as ``playprm eval`` does: its backend reads
    ``premade_chat_template`` and ``eos_to_cull`` unconditionally (a missing one is a KeyError on the first
    reply), builds a bitsandbytes config whenever ``load_in_4bit`` is present, even false (so the key is written
    only when true; playprm reads its absence as false), and guesses the padding side with a warning unless
    ``padding_side`` says it. ``eos_to_cull`` is what playprm culls for the model given by path.
    """
    config: dict = {"premade_chat_template": True, "eos_to_cull": eos_to_cull, "padding_side": "left"}
    if load_in_4bit:
        config["load_in_4bit"] = True
    config["chat_template_kwargs"] = dict(chat_template_kwargs)
    if not full_weights:
        config["peft_model"] = str(Path(adapter_dir).resolve())
    return {
        "model_name": model_name,
        "backend": "huggingface_local",
        "huggingface_id": str(Path(adapter_dir).resolve()) if full_weights else base_model_id,
        "model_config": config,
    }


def save_policy_run(trainer, config, base: BaseModel, tokenizer, template_kwargs: dict, metrics: dict, *,
                    data_dir: Path | None, kind: str, samples_per_game: dict | None = None) -> None:
    """The end of a policy run (``kind`` "sft", "dpo" or "grpo"): the adapter or model, its ``model_registry.json``
    entry, ``metrics.json`` and the model card, in ``config.output_dir``. ``data_dir``: the training data (None:
    none on disk, GRPO plays its own); ``samples_per_game``: the card's per-game counts where no data files say
    them."""
    from playprm.atomic import write_json
    from playprm.models.registry import write_registry_entry
    from playprm.models.replies import default_eos_to_cull
    from playprm.train.model_card import write_run_card

    output_dir = Path(config.output_dir)
    trainer.save_model(str(output_dir))  # every process joins: DeepSpeed gathers the adapter here
    if config.process_index != 0:
        return
    name = config.model_name or output_dir.resolve().name
    entry = registry_entry(name, base.model_id, output_dir, load_in_4bit=bool(config.load_in_4bit),
                           chat_template_kwargs=template_kwargs, eos_to_cull=default_eos_to_cull(tokenizer),
                           full_weights=config.full_weights)
    write_registry_entry(output_dir, entry)
    write_json(output_dir / METRICS_FILE, metrics)
    # last: it replaces the README.md cards that TRL and PEFT's save_model wrote
    write_run_card(output_dir, kind=kind, trainer=trainer, config=config, base=base, data_dir=data_dir,
                   chat_template_kwargs=template_kwargs, samples_per_game=samples_per_game)
