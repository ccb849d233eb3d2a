"""The configuration of ``train-sft``: TRL's ``SFTConfig`` with the model card's defaults and the QLoRA fields."""

from dataclasses import dataclass

from trl import SFTConfig

from playprm.train.qlora import ModelCardArguments, resolve_device_defaults


@dataclass
class SFTTrainingConfig(ModelCardArguments, SFTConfig):
    """Every ``SFTConfig`` / ``TrainingArguments`` field, with the defaults and extra fields of
    ``ModelCardArguments`` (the model card's QLoRA run: effective batch 128, early stopping on the validation loss,
    ...). ``max_length`` (1024) is SFTConfig's; longer sequences lose their last tokens.
    """

    def __post_init__(self):
        resolve_device_defaults(self)
        super().__post_init__()
