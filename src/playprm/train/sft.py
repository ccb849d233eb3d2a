"""Supervised fine-tuning of the policy on winning game dialogues (QLoRA on TRL's ``SFTTrainer``), or on single
turns weighted by their value (``sft-data --weights``: each example's loss scaled by its ``weight``).

Tokenisation is turn by turn with ``playprm.chat`` — the functions inference uses — so each assistant reply is
trained on exactly the tokens the policy sees and produces when it plays: the context ``prompt_ids(messages[:j])``
(the model's own chat template with ``chat_template_kwargs`` and the generation prompt), then
``response_ids(reply)`` (the reply and its end-of-turn token). The loss covers every assistant reply and its
end-of-turn token, nothing else (labels are -100 elsewhere).

A conversation is one sequence as long as each turn's context extends the previous tokens exactly. Templates
that re-render earlier turns differently from how they were generated (Qwen3's ``enable_thinking=False`` puts an
empty think block into the generation prompt but leaves it out of the history) break that; the conversation then
continues in a new sequence that starts from the full context of the turn, so every reply is still trained on its
true context, at the cost of re-encoding the history.

A single-turn record (``{"prompt", "completion"}``, TRL's prompt-completion format) is one sequence, the loss on its
completion only: the player's earlier replies in the prompt are context, each trained as its own record. A
``weight`` column (``WEIGHT``) scales each example's loss (``weighted_sft_trainer``); records without one weigh 1.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from playprm import chat
from playprm.errors import UsageError
from playprm.train.base_model import BaseModel, StartPolicy
from playprm.train.dataset_files import read_splits, sft_record_problem
from playprm.train.run_dir import (
    check_batch_fits,
    checkpoint_to_resume,
    print_logs_as_numbers,
    run_summary,
    save_policy_run,
    training_callbacks,
)

IGNORE = -100  # label of tokens outside assistant replies
WEIGHT = "weight"  # the per-example loss weight column (sft-data --weights)


def conversation_sequences(tokenizer, messages: list[dict], chat_template_kwargs: dict | None = None,
                           first_trained: int = 0) -> list[dict]:
    """Training sequences ``{"input_ids", "labels"}`` of one conversation, tokenised turn by turn.

    ``labels`` equal ``input_ids`` on the tokens of every assistant reply from message ``first_trained`` on
    (end-of-turn token included) and are ``IGNORE`` elsewhere. Usually one sequence; more where the template
    re-renders earlier turns (see module doc).
    """
    sequences: list[dict] = []
    input_ids: list[int] = []
    labels: list[int] = []
    for index, message in enumerate(messages):
        if message["role"] != "assistant" or index < first_trained:
            continue
        context = chat.prompt_ids(tokenizer, messages[:index], chat_template_kwargs)
        if context[: len(input_ids)] != input_ids:
            sequences.append({"input_ids": input_ids, "labels": labels})
            input_ids, labels = [], []
        reply = chat.response_ids(tokenizer, message["content"])
        labels = labels + [IGNORE] * (len(context) - len(input_ids)) + reply
        input_ids = context + reply
    sequences.append({"input_ids": input_ids, "labels": labels})
    return sequences


@dataclass
class TokenizedSplit:
    """The sequences of one split and how the conversations became them."""

    sequences: list[dict] = field(default_factory=list)
    conversations: int = 0
    too_long: int = 0  # sequences longer than max_length, truncated at the end by the trainer
    weighted: bool = False  # sequences carry the WEIGHT of their record

    def describe(self, name: str, max_length: int | None) -> str:
        extra = len(self.sequences) - self.conversations
        text = f"{name}: {self.conversations} conversations -> {len(self.sequences)} sequences"
        if extra:
            text += f" ({extra} extra: the chat template re-renders earlier turns)"
        if self.too_long:
            text += f", {self.too_long} longer than max_length={max_length} (their last tokens are cut)"
        if self.weighted and self.sequences:
            weights = [sequence[WEIGHT] for sequence in self.sequences]
            text += (f", weighted (mean {sum(weights) / len(weights):.3f}, {weights.count(0.0)} of weight 0: they "
                     "change nothing)")
        return text


def record_sequences(tokenizer, record: dict, chat_template_kwargs: dict | None) -> list[dict]:
    """The training sequences of one dataset record: a dialogue (``messages``) or a single turn (``prompt`` and
    ``completion``, trained on the completion only)."""
    if "messages" in record:
        return conversation_sequences(tokenizer, record["messages"], chat_template_kwargs)
    return conversation_sequences(tokenizer, [*record["prompt"], *record["completion"]], chat_template_kwargs,
                                  first_trained=len(record["prompt"]))


def tokenize_split(tokenizer, records: list[dict], chat_template_kwargs: dict | None,
                   max_length: int | None, weighted: bool = False) -> TokenizedSplit:
    """All records of a split as training sequences (``record_sequences`` of each); ``weighted``: each sequence
    carries its record's ``WEIGHT`` (1 where the record has none)."""
    split = TokenizedSplit(conversations=len(records), weighted=weighted)
    for record in records:
        for sequence in record_sequences(tokenizer, record, chat_template_kwargs):
            if weighted:
                sequence[WEIGHT] = float(record.get(WEIGHT, 1.0))
            split.sequences.append(sequence)
            split.too_long += bool(max_length and len(sequence["input_ids"]) > max_length)
    return split


def load_tokenizer(base: BaseModel):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(base.model_id, trust_remote_code=base.trust_remote_code)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def assistant_token_metrics(trainer) -> dict:
    """Validation loss and next-token accuracy, each a mean over all assistant tokens (not over batches).

    Runs the model's fused LM head (installed by ``SFTTrainer``), which scores only labelled positions, so the
    full vocabulary logits of a long batch are never built.
    """
    import torch

    model = trainer.model
    model.eval()
    totals = torch.zeros(3, dtype=torch.float64)
    with torch.no_grad():
        for batch in trainer.get_eval_dataloader():
            batch = {key: value.to(trainer.args.device) for key, value in batch.items()
                     if torch.is_tensor(value) and key != WEIGHT}  # per assistant token, unweighted
            with trainer.compute_loss_context_manager():
                outputs = model(**batch, fused_lm_head=True, use_cache=False)
            per_sequence = torch.stack([
                -outputs.log_probs.float().sum(dim=1),
                outputs.is_top1.float().sum(dim=1),
                outputs.label_mask.float().sum(dim=1),
            ], dim=1)
            totals += trainer.accelerator.gather_for_metrics(per_sequence).sum(dim=0).double().cpu()
    nll, correct, tokens = totals.tolist()
    return {
        "validation_loss": nll / tokens if tokens else None,
        "validation_token_accuracy": correct / tokens if tokens else None,
        "validation_tokens": int(tokens),
    }


def full_weight_trainer(trainer_class):
    """``trainer_class`` reloading whole-model checkpoints (the best one at the end, the last one on resume) through
    ``from_pretrained``.

    ``save_pretrained`` writes a Qwen3.5 checkpoint in the hub's key layout (``model.language_model.*``) while the
    text-only class being trained names its weights ``model.*``; the Trainer reloads with a plain
    ``load_state_dict``, which then matches no key and only warns, so the best checkpoint was never loaded and a
    resumed run went on from the base weights. ``from_pretrained`` maps the layout; the weights are then copied in
    strictly.
    """

    class FullWeightTrainer(trainer_class):
        def _load_weights(self, folder: str) -> None:
            model = self.accelerator.unwrap_model(self.model)
            saved = type(model).from_pretrained(folder, dtype=next(model.parameters()).dtype)
            model.load_state_dict(saved.state_dict(), strict=True)

        def _load_from_checkpoint(self, resume_from_checkpoint, model=None):
            self._load_weights(resume_from_checkpoint)

        def _load_best_model(self):
            self._load_weights(self.state.best_model_checkpoint)

    return FullWeightTrainer


class WeightCollator:
    """``collate`` (TRL's collator, which keeps only the columns it knows) with each example's ``WEIGHT`` added to
    the batch; a module-level class so that dataloader workers can pickle it."""

    def __init__(self, collate):
        self.collate = collate

    def __call__(self, examples: list[dict]) -> dict:
        import torch

        batch = self.collate(examples)
        batch[WEIGHT] = torch.tensor([float(example[WEIGHT]) for example in examples])
        return batch


def weighted_sft_trainer(trainer_class):
    """``trainer_class`` (TRL's ``SFTTrainer``) scaling each example's loss by its ``WEIGHT`` column.

    TRL 1.16's SFTTrainer has no per-example weights. Its loss (``loss_type="nll"``) is the fused LM head's
    per-token ``-log_probs`` summed over the batch's labelled tokens and divided by their count
    (``num_items_in_batch`` under gradient accumulation). Scaling each row's ``log_probs`` by its example's weight
    before TRL sums them scales that example's loss, and leaves TRL's normalisation, gradient accumulation,
    multi-process scaling and logged metrics (entropy, token accuracy) as they are: loss = sum_i w_i * (summed NLL of
    example i) / (assistant tokens in the batch). ``weighted_loss_problem`` refuses the settings whose loss is not
    built from those ``log_probs``.
    """

    class ScaledLogProbs:
        """The model being trained, its fused-head ``log_probs`` scaled row by row by ``weights``."""

        def __init__(self, model, weights):
            self.model, self.weights = model, weights

        def __call__(self, *args, **kwargs):
            outputs = self.model(*args, **kwargs)
            if kwargs.get("fused_lm_head"):  # the forward TRL's loss is built from; the others only feed metrics
                outputs.log_probs = outputs.log_probs * self.weights.to(outputs.log_probs.dtype)[:, None]
            return outputs

    class WeightedSFTTrainer(trainer_class):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.data_collator = WeightCollator(self.data_collator)

        def _set_signature_columns_if_needed(self):
            super()._set_signature_columns_if_needed()  # the model's inputs: other columns are dropped
            if WEIGHT not in self._signature_columns:
                self._signature_columns = [*self._signature_columns, WEIGHT]

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            weights = inputs.pop(WEIGHT, None)
            return super().compute_loss(model if weights is None else ScaledLogProbs(model, weights), inputs,
                                        return_outputs=return_outputs, num_items_in_batch=num_items_in_batch)

    return WeightedSFTTrainer


def weighted_loss_problem(config) -> str | None:
    """Why ``config`` cannot train on weighted examples (its loss is not the fused head's NLL, or a batch row is not
    one example), or None."""
    if config.loss_type != "nll":
        return f"--loss-type {config.loss_type}"
    if config.label_smoothing_factor:
        return "--label-smoothing-factor (its loss is computed from the full logits)"
    if config.packing or config.eval_packing or config.padding_free:
        return "--packing / --padding-free (a batch row then holds several examples)"
    parallelism = config.parallelism_config
    if parallelism is not None and getattr(parallelism, "sp_enabled", False):
        return "sequence parallelism (the model computes its own loss)"
    return None


def build_sft_trainer(config, model, tokenizer, train: TokenizedSplit, validation: TokenizedSplit, *, peft_config,
                      callbacks=()):
    """The trainer of a train-sft run: TRL's ``SFTTrainer`` on the tokenised splits, weighted when ``train`` is
    (``weighted_sft_trainer``), reloading whole-model checkpoints by ``from_pretrained`` in a full-weight run."""
    from datasets import Dataset
    from trl import SFTTrainer

    from playprm.train.fused_head import score_labelled_positions_only

    score_labelled_positions_only()
    trainer_class = weighted_sft_trainer(SFTTrainer) if train.weighted else SFTTrainer
    trainer = (full_weight_trainer(trainer_class) if config.full_weights else trainer_class)(
        model=model,
        args=config,
        train_dataset=Dataset.from_list(train.sequences),
        eval_dataset=Dataset.from_list(validation.sequences),
        processing_class=tokenizer,
        peft_config=peft_config,
        callbacks=training_callbacks(config, callbacks),
    )
    print_logs_as_numbers(trainer)
    return trainer


def train_sft(config, start: StartPolicy, data_dir: Path, *, resume: bool = False, callbacks=(),
              announce=print) -> dict:
    """Train a LoRA adapter (or every weight) on the SFT dataset in ``data_dir``, from the ``start`` policy: a base
    model, or a train-sft adapter trained further; returns the metrics written.

    ``config`` is an ``SFTTrainingConfig`` (its ``output_dir`` receives checkpoints, the adapter, the tokenizer,
    ``model_registry.json`` and ``metrics.json``); ``resume`` continues from the last checkpoint there with the
    same data order. ``callbacks`` are extra ``TrainerCallback`` objects. A ``weight`` column scales each example's
    loss. Input problems raise UsageError before the model loads.
    """
    from transformers import AutoModelForCausalLM
    from trl.trainer import utils as trl_utils

    from playprm.train.base_model import check_start_policy, import_gguf_base, load_start_policy
    from playprm.train.qlora import announce_cpu_fallback

    if not hasattr(trl_utils, "add_fused_lm_head"):  # validation metrics call the fused LM head TRL installs
        raise UsageError("this TRL has no fused LM head (playprm's SFT validation needs it); "
                         "install trl>=1.16,<2 as pyproject.toml pins")
    check_start_policy(start, config)
    output_dir = Path(config.output_dir)
    splits = read_splits(Path(data_dir), sft_record_problem, "sft-data")
    weighted = any(WEIGHT in record for records in splits.values() for record in records)
    problem = weighted_loss_problem(config) if weighted else None
    if problem:
        raise UsageError(f"{data_dir} has a '{WEIGHT}' column (sft-data --weights), which scales each example's NLL; "
                         f"{problem} does not keep that loss: drop it")
    checkpoint = checkpoint_to_resume(output_dir, resume)
    announce_cpu_fallback(config, "train-sft", announce)
    base = import_gguf_base(start.base, config, announce)
    tokenizer = load_tokenizer(base)
    template_kwargs = base.template_kwargs(config.chat_template_kwargs)
    train = tokenize_split(tokenizer, splits["train"], template_kwargs, config.max_length, weighted)
    validation = tokenize_split(tokenizer, splits["validation"], template_kwargs, config.max_length, weighted)
    check_batch_fits(config, len(train.sequences), "sequences")
    main_process = config.process_index == 0
    if main_process:
        announce(f"{train.describe('train', config.max_length)}; "
                 f"{validation.describe('validation', config.max_length)}"
                 + (f"; trained further from the adapter {start.adapter}" if start.adapter else ""))

    model, peft_config = load_start_policy(AutoModelForCausalLM, base, start.adapter, config)
    trainer = build_sft_trainer(config, model, tokenizer, train, validation, peft_config=peft_config,
                                callbacks=callbacks)
    result = trainer.train(resume_from_checkpoint=checkpoint)
    metrics = {
        **assistant_token_metrics(trainer),
        **run_summary(trainer, result),
        "train_sequences": len(train.sequences),
        "validation_sequences": len(validation.sequences),
        "start": str(start.adapter or base.model_id),
    }
    save_policy_run(trainer, config, base, tokenizer, template_kwargs, metrics, data_dir=data_dir, kind="sft")
    return metrics
