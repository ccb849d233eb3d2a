"""Training the process reward model: a LoRA-adapted backbone and a fully trained scalar head
(``playprm.prm.model.ProcessRewardModel``), on the HF ``Trainer`` with a PRM loss.

One forward pass per episode: the turn records of one player in one episode, sorted by turn, are chained into one
sequence whenever each record's context, tokenised as inference does (``chat.prompt_ids``), starts with exactly
the tokens of the previous record's context and reply (``chat.response_ids``). The head is read at every reply's
end-of-turn token. Attention is causal, so the score at a reply's last token depends on nothing after it: it is
the very score the scorer computes for that (context, reply) alone, while the shared history is encoded once
instead of once per turn. Records that do not line up (another candidate for the same turn, a template that
re-renders earlier turns — Qwen3 with ``enable_thinking=False`` — or a chain that would pass ``max_length``) get
a sequence of their own.

Losses: binary cross-entropy with the soft labels (``bce``), Bradley-Terry on ``pairs.jsonl`` (``bt``), or both
(a second loss term in the same trainer, not TRL's RewardTrainer, whose sequence-classification head reads one
score per sequence where this PRM reads one per turn).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from pathlib import Path

import torch
from torch.nn import functional
from transformers import Trainer

from playprm import chat
from playprm.data.records import instance_of
from playprm.train.dataset_files import pair_record_problem, prm_record_problem, read_jsonl, read_splits
from playprm.train.run_dir import (
    check_batch_fits,
    checkpoint_to_resume,
    print_logs_as_numbers,
    run_summary,
    training_callbacks,
)
from playprm.train.run_record import METRICS_FILE

logger = logging.getLogger(__name__)

PAIRS_FILE = "pairs.jsonl"
CALIBRATION_PLOT = "calibration.png"
IGNORE = -100.0  # label of padding positions
EPISODE_FIELDS = ("game", "experiment", "game_id", "episode", "player")


def episode_key(record: dict) -> tuple | None:
    """The (game, experiment, game_id, episode, player) a turn record belongs to; None when meta lacks them."""
    meta = record.get("meta") or {}
    if any(meta.get(name) is None for name in ("game", "experiment", "episode", "player")):
        return None
    return tuple(str(meta.get(name)) for name in EPISODE_FIELDS)


def _turn(record: dict) -> float:
    turn = (record.get("meta") or {}).get("turn")
    return float(turn) if isinstance(turn, int | float) and not isinstance(turn, bool) else math.inf


@dataclass
class SequenceStats:
    records: int = 0
    sequences: int = 0
    chained: int = 0  # records that share their sequence with an earlier turn
    too_long: int = 0  # records skipped: context + reply longer than max_length

    def describe(self, name: str, max_length: int) -> str:
        text = (f"{name}: {self.records} turn records -> {self.sequences} sequences "
                f"({self.chained} records scored inside an earlier turn's sequence)")
        if self.too_long:
            text += f", {self.too_long} skipped (longer than max_length={max_length})"
        return text


def scored_sequences(tokenizer, records: list[dict], chat_template_kwargs: dict | None,
                     max_length: int) -> tuple[list[dict], SequenceStats]:
    """Sequences ``{"input_ids", "positions", "labels", "records"}``: the head is read at each position against
    its label; ``records`` are the indices in ``records`` of the turns read there.

    Records of one episode and player are chained into one sequence where their tokens line up (module doc).
    """
    groups: dict[object, list[int]] = {}
    for index, record in enumerate(records):
        groups.setdefault(episode_key(record) or ("record", index), []).append(index)
    stats = SequenceStats(records=len(records))
    sequences: list[dict] = []
    for members in groups.values():
        chains: list[dict] = []
        for index in sorted(members, key=lambda i: (_turn(records[i]), i)):
            record = records[index]
            context = chat.prompt_ids(tokenizer, record["messages"], chat_template_kwargs)
            input_ids = context + chat.response_ids(tokenizer, record["response"])
            if len(input_ids) > max_length:
                stats.too_long += 1
                continue
            chain = next((c for c in reversed(chains) if context[: len(c["input_ids"])] == c["input_ids"]), None)
            if chain is None:
                chain = {"input_ids": [], "positions": [], "labels": [], "records": []}
                chains.append(chain)
            else:
                stats.chained += 1
            chain["input_ids"] = input_ids
            chain["positions"].append(len(input_ids) - 1)
            chain["labels"].append(float(record["label"]))
            chain["records"].append(index)
        sequences.extend(chains)
    stats.sequences = len(sequences)
    return sequences, stats


def pair_sequences(tokenizer, pairs: list[dict], chat_template_kwargs: dict | None,
                   max_length: int) -> tuple[list[dict], int]:
    """``({"chosen_ids", "rejected_ids"} per pair that fits max_length, number skipped)``."""
    items, skipped = [], 0
    for pair in pairs:
        context = chat.prompt_ids(tokenizer, pair["messages"], chat_template_kwargs)
        chosen = context + chat.response_ids(tokenizer, pair["chosen"])
        rejected = context + chat.response_ids(tokenizer, pair["rejected"])
        if max(len(chosen), len(rejected)) > max_length:
            skipped += 1
            continue
        items.append({"chosen_ids": chosen, "rejected_ids": rejected})
    return items, skipped


def split_pairs(pairs: list[dict], validation_records: list[dict]) -> dict[str, list[dict]]:
    """Pairs of instances that validation.jsonl holds go to validation, the rest to training, so the split
    by instance of ``prm-data`` (``data.records.instance_of``) holds for pairs too."""

    def instance(record: dict) -> tuple | None:  # None for a record without that meta (hand-made pairs)
        try:
            return instance_of(record)
        except (KeyError, TypeError):
            return None

    held_out = {instance(record) for record in validation_records}
    split: dict[str, list[dict]] = {"train": [], "validation": []}
    for pair in pairs:
        split["validation" if instance(pair) in held_out else "train"].append(pair)
    return split


@dataclass
class PRMCollator:
    """Pads a batch of scored sequences and pairs into one forward pass.

    Output: ``input_ids``/``attention_mask`` (rows, length), right-padded; ``positions``/``labels`` (rows, k):
    where to read the head and the label there (``IGNORE`` pads); ``pairs`` (n, 4): chosen row, chosen position,
    rejected row, rejected position; ``item_rows`` / ``item_is_pair`` (items,): each item's first row and kind,
    so predictions can be reported per dataset item (what distributed evaluation gathers and de-duplicates).
    """

    pad_token_id: int

    def __call__(self, items: list[dict]) -> dict[str, torch.Tensor]:
        rows, positions, labels, pairs, item_rows = [], [], [], [], []
        for item in items:
            item_rows.append(len(rows))
            if "chosen_ids" in item:
                first = len(rows)
                rows += [item["chosen_ids"], item["rejected_ids"]]
                positions += [[], []]
                labels += [[], []]
                pairs.append([first, len(item["chosen_ids"]) - 1, first + 1, len(item["rejected_ids"]) - 1])
            else:
                rows.append(item["input_ids"])
                positions.append(item["positions"])
                labels.append(item["labels"])
        length = max(len(row) for row in rows)
        width = max(1, max(len(p) for p in positions))
        return {
            "input_ids": torch.tensor([row + [self.pad_token_id] * (length - len(row)) for row in rows]),
            "attention_mask": torch.tensor([[1] * len(row) + [0] * (length - len(row)) for row in rows]),
            "positions": torch.tensor([p + [0] * (width - len(p)) for p in positions]),
            "labels": torch.tensor([y + [IGNORE] * (width - len(y)) for y in labels], dtype=torch.float32),
            "pairs": torch.tensor(pairs, dtype=torch.long).reshape(-1, 4),
            "item_rows": torch.tensor(item_rows),
            "item_is_pair": torch.tensor(["chosen_ids" in item for item in items]),
        }


class PRMTrainer(Trainer):
    """The HF Trainer with the PRM loss; checkpoints hold only the trained weights (LoRA and head, or every
    weight with ``full_weights``).

    ``loss`` is ``bce``, ``bt`` or ``both`` (``bt_weight`` scales the Bradley-Terry term).
    """

    def __init__(self, *args, loss: str = "bce", bt_weight: float = 1.0, **kwargs):
        super().__init__(*args, **kwargs)
        self.prm_loss = loss
        self.bt_weight = bt_weight
        # the loss is a mean over this micro-batch; the Trainer divides it by the accumulation steps
        self.loss_is_scaled_for_ga = False

    def _scores(self, model, inputs):
        logits = model(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"]).logits.float()
        record_logits = logits.gather(1, inputs["positions"])
        pairs = inputs["pairs"]
        margins = logits[pairs[:, 0], pairs[:, 1]] - logits[pairs[:, 2], pairs[:, 3]]
        return logits, record_logits, margins

    def _loss(self, logits, record_logits, labels, margins):
        zero = logits.sum() * 0  # keeps every parameter in the graph when a batch lacks one kind of example
        mask = labels != IGNORE
        bce = functional.binary_cross_entropy_with_logits(record_logits[mask], labels[mask]) if mask.any() else zero
        bt = -functional.logsigmoid(margins).mean() if margins.numel() else zero
        if self.prm_loss == "bce":
            return bce
        if self.prm_loss == "bt":
            return bt
        return bce + self.bt_weight * bt

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        logits, record_logits, margins = self._scores(model, inputs)
        loss = self._loss(logits, record_logits, inputs["labels"], margins)
        return (loss, {"record_logits": record_logits, "margins": margins}) if return_outputs else loss

    def prediction_step(self, model, inputs, prediction_loss_only, ignore_keys=None):
        inputs = self._prepare_inputs(inputs)
        with torch.no_grad(), self.compute_loss_context_manager():
            logits, record_logits, margins = self._scores(model, inputs)
            loss = self._loss(logits, record_logits, inputs["labels"], margins)
        if prediction_loss_only:
            return loss.detach(), None, None
        rows, is_pair = inputs["item_rows"], inputs["item_is_pair"]
        item_margins = torch.zeros(len(rows), device=margins.device)
        item_margins[is_pair] = margins  # pairs are collated in item order
        # one entry per item: a pair item's labels are all IGNORE, a record item's margin is unused
        return (loss.detach(), (torch.sigmoid(record_logits[rows]), item_margins),
                (inputs["labels"][rows], is_pair.long()))  # integers gather on every backend

    def _save(self, output_dir: str | None = None, state_dict=None) -> None:
        from safetensors.torch import save_file
        from transformers.trainer import TRAINING_ARGS_NAME
        from transformers.utils import SAFE_WEIGHTS_NAME

        if not self.args.should_save:
            return
        output = Path(output_dir or self.args.output_dir)
        output.mkdir(parents=True, exist_ok=True)
        model = self.accelerator.unwrap_model(self.model)
        trained = {name for name, parameter in model.named_parameters() if parameter.requires_grad}
        state_dict = model.state_dict() if state_dict is None else state_dict
        save_file({k: v.detach().contiguous().cpu() for k, v in state_dict.items() if k in trained},
                  str(output / SAFE_WEIGHTS_NAME), metadata={"format": "pt"})
        if self.processing_class is not None:
            self.processing_class.save_pretrained(str(output))
        torch.save(self.args, output / TRAINING_ARGS_NAME)

    def _issue_warnings_after_load(self, load_result) -> None:
        # checkpoints hold only the trained weights, so the frozen base weights are "missing" by design
        if load_result.unexpected_keys:
            logger.warning("unexpected keys in the PRM checkpoint: %s", load_result.unexpected_keys)


def scored_items(prediction):
    """``(probabilities, labels, pair margins)`` of the labelled turns and the pairs in a Trainer prediction."""
    (probabilities, margins), (labels, is_pair) = prediction.predictions, prediction.label_ids
    mask = labels != IGNORE
    return probabilities[mask], labels[mask], margins[is_pair.astype(bool)]


def compute_prm_metrics(prediction) -> dict:
    """``Trainer`` hook: AUROC, Brier score (and pair accuracy) of the validation predictions."""
    from playprm.train.prm_metrics import prm_metrics

    metrics = prm_metrics(*scored_items(prediction))
    return {key: metrics[key] for key in ("auroc", "brier", "pair_accuracy") if key in metrics}


def build_prm(base, config, *, initial_label_rate: float):
    """A ``ProcessRewardModel`` on ``base`` loaded as ``config`` asks, with a LoRA adapter on the backbone (every
    backbone weight trained with ``full_weights``) and a fresh head whose bias starts at the training labels'
    log-odds (so the first scores are calibrated)."""
    from peft import get_peft_model
    from transformers import set_seed

    from playprm.prm.model import ProcessRewardModel, TextBackbone
    from playprm.train.base_model import load_base_model
    from playprm.train.qlora import lora_config

    set_seed(config.seed)  # the adapter and the head start from the run's seed, so a resumed run matches
    backbone = load_base_model(TextBackbone, base, config)
    hidden_size = backbone.config.get_text_config().hidden_size
    if not config.full_weights:
        backbone = get_peft_model(backbone, lora_config(config, None))
    model = ProcessRewardModel(backbone, hidden_size)
    rate = min(max(initial_label_rate, 1e-3), 1 - 1e-3)
    with torch.no_grad():
        model.head.bias.fill_(math.log(rate / (1 - rate)))
    if config.load_in_4bit:
        from transformers.utils.quantization_config import QuantizationMethod

        model.head.to(next(backbone.parameters()).device)
        # the weights sit on this process's GPU already: the Trainer must not move (or DataParallel) them
        model.is_loaded_in_4bit = True
        model.quantization_method = QuantizationMethod.BITS_AND_BYTES
    return model


def resolve_loss(loss: str, data_dir: Path) -> str:
    """The loss ``auto`` stands for on ``data_dir``: ``both`` where pairs.jsonl holds a sibling pair, else ``bce``;
    any other loss as it is."""
    if loss != "auto":
        return loss
    pairs_file = Path(data_dir) / PAIRS_FILE
    if pairs_file.is_file():
        with pairs_file.open(encoding="utf-8") as lines:
            if any(line.strip() for line in lines):
                return "both"
    return "bce"


def read_prm_dataset(data_dir: Path, loss: str) -> dict[str, list[dict]]:
    """``{"train", "validation", "pairs_train", "pairs_validation"}`` from ``data_dir``; checks that the chosen
    loss has its data (``bt`` / ``both`` need pairs.jsonl)."""
    from playprm.errors import UsageError

    splits = read_splits(data_dir, prm_record_problem, "prm-data")
    pairs_file = data_dir / PAIRS_FILE
    if loss != "bce" and not pairs_file.is_file():
        raise UsageError(f"--loss {loss} needs {pairs_file} (chosen/rejected pairs, written by `playprm prm-data`); "
                         "or use --loss bce")
    pairs = read_jsonl(pairs_file, pair_record_problem, producer="prm-data") if loss != "bce" else []
    pair_split = split_pairs(pairs, splits["validation"])
    return {**splits, "pairs_train": pair_split["train"], "pairs_validation": pair_split["validation"]}


def train_prm(config, base, data_dir: Path, *, resume: bool = False, callbacks=(), announce=print) -> dict:
    """Train a PRM on ``base`` with the dataset in ``data_dir``; returns the metrics written.

    ``config`` is a ``PRMTrainingConfig``. Its ``output_dir`` receives checkpoints, the PRM
    (``ProcessRewardModel.save``: loads with ``load_prm(output_dir)``, i.e. ``--prm-path``), ``metrics.json``
    (validation AUROC, Brier score, calibration bins, sibling accuracy and per-game Delta/sigma on the validation
    siblings: ``prm_metrics.sibling_metrics``), ``calibration.png`` and, when validation holds different
    replies to one context, ``switch_margin.json`` (``eval --switch-margin auto``). Input problems raise UsageError
    before the model loads.
    """
    from playprm.atomic import write_json
    from playprm.errors import UsageError
    from playprm.prm import switch_margin
    from playprm.train.base_model import import_gguf_base, shards_parameters
    from playprm.train.prm_metrics import calibration_bins, plot_calibration, prm_metrics, sibling_metrics
    from playprm.train.qlora import announce_cpu_fallback
    from playprm.train.sft import load_tokenizer

    output_dir = Path(config.output_dir)
    if shards_parameters(config):
        raise UsageError("train-prm runs under DDP (torchrun / accelerate launch without DeepSpeed or FSDP): "
                         "a 4-bit 27B backbone fits one 48 GB GPU per process; drop --deepspeed / --fsdp")
    config.loss = resolve_loss(config.loss, Path(data_dir))  # recorded as resolved (metrics.json, card, config)
    data = read_prm_dataset(Path(data_dir), config.loss)
    checkpoint = checkpoint_to_resume(output_dir, resume)
    announce_cpu_fallback(config, "train-prm", announce)
    base = import_gguf_base(base, config, announce)
    tokenizer = load_tokenizer(base)
    template_kwargs = base.template_kwargs(config.chat_template_kwargs)
    train, train_stats = scored_sequences(tokenizer, data["train"], template_kwargs, config.max_length)
    validation, validation_stats = scored_sequences(tokenizer, data["validation"], template_kwargs,
                                                    config.max_length)
    train_pairs, skipped_train_pairs = pair_sequences(tokenizer, data["pairs_train"], template_kwargs,
                                                      config.max_length)
    validation_pairs, _ = pair_sequences(tokenizer, data["pairs_validation"], template_kwargs, config.max_length)
    train_items = (train if config.loss != "bt" else []) + (train_pairs if config.loss != "bce" else [])
    validation_items = validation + (validation_pairs if config.loss != "bce" else [])
    if not validation:
        raise UsageError(f"no validation record of {data_dir} fits max_length={config.max_length}; "
                         "raise --max-length")
    check_batch_fits(config, len(train_items), "sequences and pairs" if config.loss != "bce" else "sequences")
    main_process = config.process_index == 0
    if main_process:
        text = f"{train_stats.describe('train', config.max_length)}; "
        text += validation_stats.describe("validation", config.max_length)
        if config.loss != "bce":
            text += (f"; pairs: {len(train_pairs)} train, {len(validation_pairs)} validation"
                     + (f", {skipped_train_pairs} skipped (too long)" if skipped_train_pairs else ""))
        announce(text)

    train_labels = [label for sequence in train for label in sequence["labels"]]
    model = build_prm(base, config, initial_label_rate=sum(train_labels) / len(train_labels) if train_labels else 0.5)
    trainer = PRMTrainer(
        model=model,
        args=config,
        data_collator=PRMCollator(tokenizer.pad_token_id),
        train_dataset=train_items,
        eval_dataset=validation_items,
        processing_class=tokenizer,
        compute_metrics=compute_prm_metrics,
        callbacks=training_callbacks(config, callbacks),
        loss=config.loss,
        bt_weight=config.bt_weight,
    )
    print_logs_as_numbers(trainer)
    result = trainer.train(resume_from_checkpoint=checkpoint)
    prediction = trainer.predict(validation_items, metric_key_prefix="validation")
    probabilities, labels, margins = scored_items(prediction)
    scores = prm_metrics(probabilities, labels, margins)
    bins = calibration_bins(probabilities, labels)
    # predictions come in item order, the validation sequences first: their positions' records, in order
    scored = [data["validation"][index] for sequence in validation for index in sequence["records"]]
    scores.update(sibling_metrics(scored, probabilities[:len(scored)].tolist()))
    metrics = {
        **{f"validation_{key}": value for key, value in scores.items()},
        "validation_loss": prediction.metrics.get("validation_loss"),
        "calibration": bins,
        **run_summary(trainer, result),
        "loss": config.loss,
        "train_records": train_stats.records, "train_sequences": train_stats.sequences,
        "train_records_chained": train_stats.chained, "train_records_too_long": train_stats.too_long,
        "validation_records": validation_stats.records, "validation_sequences": validation_stats.sequences,
        "train_pairs": len(train_pairs), "validation_pairs": len(validation_pairs),
    }
    if main_process:
        trainer.model.save(output_dir, tokenizer=tokenizer, base_model=base.model_id,
                           chat_template_kwargs=template_kwargs, trust_remote_code=base.trust_remote_code)
        plot_calibration(bins, output_dir / CALIBRATION_PLOT,
                         f"PRM calibration on validation (AUROC {scores.get('auroc', float('nan')):.3f})")
        write_json(output_dir / METRICS_FILE, metrics)
        switch_margin.write(output_dir, scored, probabilities[:len(scored)].tolist())
        from playprm.train.model_card import write_run_card

        # last: the card reads every file written above
        write_run_card(output_dir, kind="prm", trainer=trainer, config=config, base=base, data_dir=data_dir,
                       chat_template_kwargs=template_kwargs)
    return metrics
