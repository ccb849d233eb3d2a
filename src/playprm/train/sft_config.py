"""The configuration of ``train-sft``: TRL's ``SFTConfig`` with the model card's defaults and the QLoRA fields."""

from dataclasses import dataclass

from trl import SFTConfig

from playprm.train.qlora import QLoRAArguments, resolve_device_defaults


@dataclass
class SFTTrainingConfig(SFTConfig, QLoRAArguments):
    """Every ``SFTConfig`` / ``TrainingArguments`` field, plus ``QLoRAArguments``; defaults are the model card's.

    Differences from TRL's defaults: lr 2e-4 with a cosine schedule and 3% linear warmup, one epoch, 4 sequences
    per device and an effective batch of 128 (``gradient_accumulation_steps`` derived), evaluation and a
    checkpoint every 10% of training, early stopping on the validation loss with the best checkpoint loaded at
    the end, no external loggers. ``optim``, ``bf16`` and ``load_in_4bit`` follow the device when unset
    (CUDA: ``paged_adamw_8bit``, bf16, 4-bit; CPU: ``adamw_torch``, float32, unquantized).
    ``gradient_checkpointing`` is transformers' deprecated name of ``activation_checkpointing``.
    """

    learning_rate: float = 2e-4
    lr_scheduler_type: str = "cosine"
    warmup_steps: float = 0.03
    num_train_epochs: float = 1.0
    per_device_train_batch_size: int = 4
    per_device_eval_batch_size: int = 4
    gradient_accumulation_steps: int | None = None
    max_length: int | None = 1024
    optim: str | None = None
    bf16: bool | None = None
    activation_checkpointing: bool | None = True
    gradient_checkpointing: bool | None = None
    eval_strategy: str = "steps"
    eval_steps: float | None = 0.1
    save_strategy: str = "steps"
    save_steps: float = 0.1
    save_total_limit: int | None = 2
    load_best_model_at_end: bool = True
    metric_for_best_model: str | None = "eval_loss"
    greater_is_better: bool | None = False
    report_to: str | list[str] | None = "none"

    def __post_init__(self):
        resolve_device_defaults(self)
        super().__post_init__()
