"""The configuration of ``train-dpo``: TRL's ``DPOConfig`` with the model card's LoRA fields and schedule."""

from dataclasses import dataclass

from trl import DPOConfig

from playprm.train.qlora import ModelCardArguments, resolve_device_defaults


@dataclass
class DPOTrainingConfig(ModelCardArguments, DPOConfig):
    """Every ``DPOConfig`` / ``TrainingArguments`` field (``beta``, ``loss_type``, ``max_length``, ...), with the
    defaults and extra fields of ``ModelCardArguments`` (the card's LoRA, effective batch 128, early stopping on the
    validation loss, ...), except:

    Parameters:
        learning_rate: 5e-6, not the card's SFT 2e-4: DPO moves a policy that already plays, and the
            preference loss has no fixed target to stop it drifting (TRL's own default, 1e-6, is for full weights;
            a LoRA update needs more).
        effective_batch_size: 64 pairs per optimizer step (each pair is two sequences, as 128 SFT sequences).
    """

    learning_rate: float = 5e-6
    effective_batch_size: int | None = 64

    def __post_init__(self):
        resolve_device_defaults(self)
        super().__post_init__()
