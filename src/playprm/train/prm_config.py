"""The configuration of ``train-prm``: ``TrainingArguments`` with the QLoRA fields and the PRM's own."""

from dataclasses import dataclass

from transformers import TrainingArguments

from playprm.train.qlora import ModelCardArguments, resolve_device_defaults

LOSSES = ("auto", "bce", "bt", "both")


@dataclass
class PRMTrainingConfig(ModelCardArguments, TrainingArguments):
    """Every ``TrainingArguments`` field, with the defaults and extra fields of ``ModelCardArguments``, and:

    Parameters:
        loss: ``bce`` (binary cross-entropy on the soft turn labels of train.jsonl), ``bt`` (Bradley-Terry on
            pairs.jsonl: -log sigmoid(score(chosen) - score(rejected))), ``both`` (their sum, BT weighted by
            ``bt_weight``) or ``auto`` (the default): ``both`` where the data holds sibling pairs (pairs.jsonl with
            at least one pair), else ``bce``. ``both`` is the loss whose PRM ranked siblings best and whose
            best-of-4 beat greedy on held-out instances (BENCHMARKS.md, issue 33's three seeds); the run records
            the loss it resolved to.
        bt_weight: weight of the Bradley-Terry term with ``loss: both``.
        max_length: longest sequence in tokens; records whose context and reply do not fit are skipped (and
            counted), never cut, since the score is read at the reply's last token.

    Defaults follow the SFT run of the model card (lr 2e-4 cosine, 3% warmup, one epoch, 4 sequences per device,
    effective batch 128, QLoRA r=16/alpha=32 on all linear layers; the scalar head is trained in full), with
    early stopping on the validation loss (on validation AUROC with ``loss: bt``, whose scores are only
    meaningful as differences).
    """

    loss: str = "auto"
    bt_weight: float = 1.0
    max_length: int = 1024
    remove_unused_columns: bool = False  # batches are built by PRMCollator, not from named columns

    def __post_init__(self):
        if self.loss not in LOSSES:
            raise ValueError(f"--loss must be one of {', '.join(LOSSES)}, not {self.loss!r}")
        if self.bt_weight < 0:
            raise ValueError(f"--bt-weight must be >= 0, not {self.bt_weight}")
        if self.max_length < 2:
            raise ValueError(f"--max-length must be at least 2 tokens, not {self.max_length}")
        if self.metric_for_best_model is None:
            self.metric_for_best_model = "eval_auroc" if self.loss == "bt" else "eval_loss"
        resolve_device_defaults(self)
        super().__post_init__()
