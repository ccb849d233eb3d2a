"""QLoRA, as the model card trains: a frozen base model in 4-bit NF4 (double quantization, bf16 compute), a LoRA
adapter (r=16, alpha=32, dropout 0.05) on every linear projection, and the paged 8-bit AdamW optimizer.

Without CUDA the same run happens unquantized in float32 with ``adamw_torch`` (bitsandbytes is CUDA-only); the
trainers announce that in one line once their inputs are checked (``announce_cpu_fallback``). Both trainers
share the fields and the loader here.
"""

import math
import os
from dataclasses import dataclass, field
from typing import Any

# The model card's optimizer; needs CUDA and bitsandbytes.
CUDA_OPTIM = "paged_adamw_8bit"
CPU_OPTIM = "adamw_torch"


@dataclass
class ModelCardArguments:
    """The settings ``train-sft`` and ``train-prm`` share: the model card's QLoRA run and its schedule.

    Listed first among a config's bases, so its defaults replace those of ``TrainingArguments`` / ``SFTConfig``.

    Parameters:
        lora_r: LoRA rank.
        lora_alpha: LoRA scaling numerator (the update is scaled by alpha / r).
        lora_dropout: dropout on the LoRA input.
        lora_target_modules: ``"all-linear"`` (every linear projection but the output layer), a list of module
            names, or a regular expression PEFT matches against full module names.
        lora_exclude_modules: modules to leave without an adapter (list of names or a regular expression), e.g. a
            vision tower that a text-only run never calls.
        load_in_4bit: 4-bit NF4 base weights; unset means "on CUDA, not on CPU".
        chat_template_kwargs: passed to the chat template (``{"enable_thinking": false}`` for Qwen3.5); unset
            means "from the model's registry entry, else none".
        effective_batch_size: sequences per optimizer step over all processes; sets
            ``gradient_accumulation_steps`` when that is unset (see ``gradient_accumulation_for``).
        early_stopping_patience: evaluations without improvement of ``metric_for_best_model`` before training
            stops; 0 or unset disables early stopping.
        require_cuda: refuse to run without a CUDA device instead of falling back to CPU.
        model_name: name of the trained model in ``model_registry.json`` (default: the output folder's name).
        full_weights: train every weight instead of a LoRA adapter and save the whole model. For models trained
            from random initialisation (the small pipeline), where a low-rank update of random weights teaches
            little; pretrained bases keep the default, LoRA. Not with ``load_in_4bit`` (4-bit weights are frozen).

    Changed ``TrainingArguments`` defaults: lr 2e-4 with a cosine schedule and 3% linear warmup, one epoch, 4
    sequences per device, evaluation and a checkpoint every 10% of training, the best checkpoint (by
    ``metric_for_best_model``, the validation loss unless a config says otherwise) loaded at the end, activation
    checkpointing on, no external loggers. ``optim``, ``bf16`` (and ``load_in_4bit``) follow the device when
    unset: CUDA ``paged_adamw_8bit``, bf16, 4-bit; CPU ``adamw_torch``, float32, unquantized.
    ``gradient_checkpointing`` is transformers' deprecated name of ``activation_checkpointing``.
    """

    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.05
    lora_target_modules: str | list[str] = "all-linear"
    lora_exclude_modules: str | list[str] | None = None
    load_in_4bit: bool | None = None
    chat_template_kwargs: dict[str, Any] | None = None
    effective_batch_size: int | None = 128
    early_stopping_patience: int | None = 3
    require_cuda: bool = False
    full_weights: bool = False
    model_name: str | None = None

    learning_rate: float = 2e-4
    lr_scheduler_type: str = "cosine"
    warmup_steps: float = 0.03
    num_train_epochs: float = 1.0
    per_device_train_batch_size: int = 4
    per_device_eval_batch_size: int = 4
    gradient_accumulation_steps: int | None = None
    optim: str | None = None
    bf16: bool | None = None
    activation_checkpointing: bool | None = True
    gradient_checkpointing: bool | None = None
    logging_steps: float = 10
    eval_strategy: str = "steps"
    eval_steps: float | None = 0.1
    save_strategy: str = "steps"
    save_steps: float = 0.1
    save_total_limit: int | None = 2
    load_best_model_at_end: bool = True
    metric_for_best_model: str | None = None
    greater_is_better: bool | None = None
    report_to: str | list[str] | None = "none"
    # set by resolve_device_defaults: whether this run fell back to CPU
    cpu_fallback: bool = field(default=False, init=False, repr=False)


def gradient_accumulation_for(effective_batch_size: int, per_device_batch_size: int, world_size: int) -> int:
    """Accumulation steps so that ``per_device × steps × world_size`` reaches ``effective_batch_size``.

    ``ceil(effective / (per_device × world))``, at least 1: 128 with 4 per device on one GPU is 32, on 4 GPUs 8,
    on 3 GPUs 11 (an effective batch of 132; never fewer sequences per step than asked for).
    """
    if effective_batch_size < 1 or per_device_batch_size < 1 or world_size < 1:
        raise ValueError("effective_batch_size, per_device_train_batch_size and the world size must be >= 1")
    return max(1, math.ceil(effective_batch_size / (per_device_batch_size * world_size)))


def bitsandbytes_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("bitsandbytes") is not None


def resolve_device_defaults(config) -> None:
    """Fill the device-dependent settings a user left unset and reject impossible ones (``ValueError``).

    Called by the config dataclasses before ``TrainingArguments`` validates the rest: ``load_in_4bit``, ``optim``
    and ``bf16`` follow the device; ``gradient_accumulation_steps`` follows ``effective_batch_size``.
    """
    import torch

    if config.full_weights and config.load_in_4bit:
        raise ValueError("--full-weights trains every weight, which 4-bit weights cannot be; "
                         "drop --load-in-4bit (or --full-weights for a LoRA run)")
    if config.full_weights and config.load_in_4bit is None:
        config.load_in_4bit = False
    cuda = torch.cuda.is_available()
    if config.require_cuda and not cuda:
        raise ValueError("--require-cuda is set but no CUDA device is visible (torch.cuda.is_available() is "
                         "False); run on a GPU node or drop --require-cuda to train on CPU")
    for name in ("lora_r", "lora_alpha"):
        if getattr(config, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be >= 1, not {getattr(config, name)}")
    if not 0 <= config.lora_dropout < 1:
        raise ValueError(f"--lora-dropout must be in [0, 1), not {config.lora_dropout}")
    config.cpu_fallback = not cuda
    if config.load_in_4bit is None:
        config.load_in_4bit = cuda
    if config.optim is None:
        config.optim = CUDA_OPTIM if cuda else CPU_OPTIM
    if config.bf16 is None:
        config.bf16 = cuda
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if not cuda:
        config.dataloader_pin_memory = False  # pinning only serves host-to-GPU copies
        if config.bf16:  # the Trainer refuses bf16 without a GPU unless told that the run is on CPU
            config.use_cpu = True
        if world_size > 1:  # torchrun on CPU: accelerate joins the processes only in CPU mode, over gloo
            config.use_cpu = True
            config.ddp_backend = config.ddp_backend or "gloo"
    if not cuda and config.load_in_4bit:
        raise ValueError("--load-in-4bit needs a CUDA device (bitsandbytes 4-bit is CUDA-only); "
                         "drop it to train unquantized on CPU")
    needs_bnb = config.load_in_4bit or "8bit" in str(config.optim) or "bnb" in str(config.optim)
    if needs_bnb and not bitsandbytes_available():
        raise ValueError(f"4-bit loading / {config.optim} need bitsandbytes, which is not installed: "
                         "pip install 'playprm[gpu]', or train unquantized with --load-in-4bit false "
                         f"--optim {CPU_OPTIM}")
    if not cuda and ("8bit" in str(config.optim) or "bnb" in str(config.optim)):
        raise ValueError(f"--optim {config.optim} needs CUDA; use --optim {CPU_OPTIM} on CPU")
    if config.gradient_accumulation_steps is None:
        if config.effective_batch_size is None:
            raise ValueError("set --effective-batch-size or --gradient-accumulation-steps")
        config.gradient_accumulation_steps = gradient_accumulation_for(
            config.effective_batch_size, config.per_device_train_batch_size, world_size)
    if config.early_stopping_patience and not config.load_best_model_at_end:
        raise ValueError("--early-stopping-patience needs --load-best-model-at-end true (early stopping keeps "
                         "the best checkpoint); or set --early-stopping-patience 0")


def cpu_fallback_note(config, command: str) -> str | None:
    """The one line a CPU run prints about what it does differently from the model card's CUDA run."""
    if not config.cpu_fallback:
        return None
    optim = getattr(config.optim, "value", config.optim)
    dtype = "bfloat16" if config.bf16 else "float32"
    return (f"playprm {command}: no CUDA device: training unquantized in {dtype} with {optim} "
            f"(the CUDA run uses 4-bit NF4 weights, bf16 and {CUDA_OPTIM})")


def announce_cpu_fallback(config, command: str, announce=print) -> None:
    """``cpu_fallback_note``, from the main process, once a trainer has checked its inputs (data, resume): a wrong
    input is then the only line the command prints."""
    note = cpu_fallback_note(config, command)
    if note and config.process_index == 0:
        announce(note)


def lora_config(config, task_type: str | None):
    """The PEFT ``LoraConfig`` of the run (``task_type`` ``"CAUSAL_LM"`` for the policy, ``None`` for a backbone)."""
    from peft import LoraConfig

    return LoraConfig(
        r=config.lora_r,
        lora_alpha=config.lora_alpha,
        lora_dropout=config.lora_dropout,
        target_modules=config.lora_target_modules,
        exclude_modules=config.lora_exclude_modules,
        bias="none",
        task_type=task_type,
    )
