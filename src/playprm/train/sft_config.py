"""The configuration of ``train-sft``: TRL's ``SFTConfig`` with the model card's defaults and the QLoRA fields."""

from dataclasses import dataclass

from trl import SFTConfig

from playprm.train.qlora import ModelCardArguments, resolve_device_defaults


@dataclass
class SFTTrainingConfig(ModelCardArguments, SFTConfig):
    """Every ``SFTConfig`` / ``TrainingArguments`` field, with the defaults and extra fields of
    ``ModelCardArguments`` (the model card's QLoRA run: effective batch 128, early stopping on the validation loss,
    ...). ``max_length`` (1024) is SFTConfig's; longer sequences lose their last tokens.

    Parameters:
        full_weights: train every weight instead of a LoRA adapter and save the whole model. For models trained
            from random initialisation (the small pipeline), where a low-rank update of random weights teaches
            little; pretrained bases keep the default, LoRA. Not with ``load_in_4bit`` (4-bit weights are frozen).
    """

    full_weights: bool = False

    def __post_init__(self):
        if self.full_weights and self.load_in_4bit:
            raise ValueError("--full-weights trains every weight, which 4-bit weights cannot be; "
                             "drop --load-in-4bit (or --full-weights for a LoRA run)")
        if self.full_weights and self.load_in_4bit is None:
            self.load_in_4bit = False
        resolve_device_defaults(self)
        super().__post_init__()
