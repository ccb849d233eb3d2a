"""The configuration of ``train-sft``: TRL's ``SFTConfig`` with the model card's defaults and the QLoRA fields."""

import math
import re
from dataclasses import dataclass

from trl import SFTConfig

from playprm.train.qlora import ModelCardArguments, resolve_device_defaults


@dataclass
class SFTTrainingConfig(ModelCardArguments, SFTConfig):
    """Every ``SFTConfig`` / ``TrainingArguments`` field, with the defaults and extra fields of
    ``ModelCardArguments`` (the model card's QLoRA run: effective batch 128, early stopping on the validation loss,
    ...). ``max_length`` (1024) is SFTConfig's; longer sequences lose their last tokens.

    Parameters:
        loss_weight_pattern: a Python regular expression searched in each trained assistant reply's text; every
            trained token whose characters overlap a match has its loss scaled by ``loss_weight`` (e.g.
            ``same|other|ANSWER: \\w+`` for the judgements and the answer of the reference game's guesser). Unset:
            every trained token weighs 1.
        loss_weight: the weight of those tokens (> 0); every other trained token weighs 1. Needs the pattern.
    """

    loss_weight_pattern: str | None = None
    loss_weight: float = 1.0

    def __post_init__(self):
        resolve_device_defaults(self)
        super().__post_init__()
        check_loss_weight(self)


def check_loss_weight(config) -> None:
    """Reject ``--loss-weight-pattern`` / ``--loss-weight`` settings that cannot train as asked (``ValueError``)."""
    from playprm.train.sft import weighted_loss_problem

    pattern, weight = config.loss_weight_pattern, config.loss_weight
    if not math.isfinite(weight) or weight <= 0:
        raise ValueError(f"--loss-weight must be a finite number > 0, not {weight} (1 leaves the loss as it is)")
    if pattern is None:
        if weight != 1:
            raise ValueError(f"--loss-weight {weight} needs --loss-weight-pattern (a regular expression naming the "
                             "reply text whose tokens it weighs); give one or drop --loss-weight")
        return
    if not pattern:
        raise ValueError("--loss-weight-pattern is empty: give a regular expression such as 'ANSWER: \\w+', or "
                         "drop it")
    try:
        re.compile(pattern)
    except re.error as error:
        raise ValueError(f"--loss-weight-pattern '{pattern}' is not a valid Python regular expression ({error}); "
                         "fix it (escape literal characters such as ( [ + ? with a backslash)") from None
    problem = weighted_loss_problem(config)
    if problem:
        raise ValueError(f"--loss-weight-pattern scales the fused LM head's per-token NLL; {problem} does not keep "
                         "that loss: drop it or drop --loss-weight-pattern")
