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

``--loss-weight-pattern P --loss-weight W`` scales the loss of chosen tokens instead: each trained reply token whose
characters overlap a match of the regular expression P in its reply's text weighs W (``TOKEN_WEIGHTS``), every other
trained token 1. The characters come from the reply tokenised alone with offsets, which is exactly how
``chat.response_ids`` tokenises it into the sequence; the end-of-turn tokens have none and weigh 1.
"""

from __future__ import annotations

import re
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
TOKEN_WEIGHTS = "token_weights"  # the per-token loss weights of --loss-weight-pattern, one per input token
PATTERN_MATCHED = "pattern_matched"  # per input token: a trained token overlapping a --loss-weight-pattern match


def matched_reply_tokens(tokenizer, text: str, pattern: re.Pattern) -> list[bool]:
    """Whether each token of ``text``, tokenised alone (as ``chat.response_ids`` does), overlaps a non-empty match
    of ``pattern`` in ``text``, by the tokens' character offsets (a fast tokenizer's ``offset_mapping``)."""
    spans = [match.span() for match in pattern.finditer(text) if match.end() > match.start()]
    offsets = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True).offset_mapping
    return [any(start < end and first < stop for first, end in spans) for start, stop in offsets]


def conversation_sequences(tokenizer, messages: list[dict], chat_template_kwargs: dict | None = None,
                           first_trained: int = 0, pattern: re.Pattern | None = None) -> list[dict]:
    """Training sequences ``{"input_ids", "labels"}`` of one conversation, tokenised turn by turn.

    ``labels`` equal ``input_ids`` on the tokens of every assistant reply from message ``first_trained`` on
    (end-of-turn token included) and are ``IGNORE`` elsewhere. Usually one sequence; more where the template
    re-renders earlier turns (see module doc). With ``pattern`` each sequence also has ``PATTERN_MATCHED``: per
    input token, whether it is a trained token overlapping a match of ``pattern`` in its reply (``matched_reply_tokens``).
    """
    sequences: list[dict] = []
    input_ids: list[int] = []
    labels: list[int] = []
    matched: list[bool] = []

    def close() -> None:
        sequences.append({"input_ids": input_ids, "labels": labels,
                          **({PATTERN_MATCHED: matched} if pattern is not None else {})})

    for index, message in enumerate(messages):
        if message["role"] != "assistant" or index < first_trained:
            continue
        context = chat.prompt_ids(tokenizer, messages[:index], chat_template_kwargs)
        if context[: len(input_ids)] != input_ids:
            close()
            input_ids, labels, matched = [], [], []
        reply = chat.response_ids(tokenizer, message["content"])
        if pattern is not None:
            in_reply = matched_reply_tokens(tokenizer, message["content"], pattern)
            matched = (matched + [False] * (len(context) - len(input_ids)) + in_reply
                       + [False] * (len(reply) - len(in_reply)))  # the end-of-turn tokens: no reply text
        labels = labels + [IGNORE] * (len(context) - len(input_ids)) + reply
        input_ids = context + reply
    close()
    return sequences


@dataclass
class TokenizedSplit:
    """The sequences of one split and how the conversations became them."""

    sequences: list[dict] = field(default_factory=list)
    conversations: int = 0
    too_long: int = 0  # sequences longer than max_length, truncated at the end by the trainer
    weighted: bool = False  # sequences carry the WEIGHT of their record
    trained_tokens: int = 0  # labelled tokens, before the trainer cuts sequences at max_length
    pattern_tokens: int = 0  # of those, the tokens --loss-weight-pattern matches
    token_weighted: bool = False  # sequences carry TOKEN_WEIGHTS (a pattern and a loss weight other than 1)

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

    def describe_pattern(self, weight: float) -> str:
        """How many trained tokens ``--loss-weight-pattern`` weighs, and their share."""
        share = 100 * self.pattern_tokens / self.trained_tokens if self.trained_tokens else 0.0
        return (f"--loss-weight-pattern weighs {self.pattern_tokens:,} of {self.trained_tokens:,} trained tokens "
                f"({share:.1f} %) at {weight}")


def record_sequences(tokenizer, record: dict, chat_template_kwargs: dict | None,
                     pattern: re.Pattern | None = None) -> list[dict]:
    """The training sequences of one dataset record: a dialogue (``messages``) or a single turn (``prompt`` and
    ``completion``, trained on the completion only); ``pattern`` as in ``conversation_sequences``."""
    if "messages" in record:
        return conversation_sequences(tokenizer, record["messages"], chat_template_kwargs, pattern=pattern)
    return conversation_sequences(tokenizer, [*record["prompt"], *record["completion"]], chat_template_kwargs,
                                  first_trained=len(record["prompt"]), pattern=pattern)


def tokenize_split(tokenizer, records: list[dict], chat_template_kwargs: dict | None,
                   max_length: int | None, weighted: bool = False, loss_weight_pattern: str | None = None,
                   loss_weight: float = 1.0) -> TokenizedSplit:
    """All records of a split as training sequences (``record_sequences`` of each); ``weighted``: each sequence
    carries its record's ``WEIGHT`` (1 where the record has none). With ``loss_weight_pattern`` the matched trained
    tokens are counted and, unless ``loss_weight`` is 1 (no column: training as without a pattern), each sequence
    carries ``TOKEN_WEIGHTS``: ``loss_weight`` on those tokens, 1 on every other token."""
    pattern = re.compile(loss_weight_pattern) if loss_weight_pattern is not None else None
    split = TokenizedSplit(conversations=len(records), weighted=weighted,
                           token_weighted=pattern is not None and loss_weight != 1)
    for record in records:
        for sequence in record_sequences(tokenizer, record, chat_template_kwargs, pattern):
            if weighted:
                sequence[WEIGHT] = float(record.get(WEIGHT, 1.0))
            if pattern is not None:
                matched = sequence.pop(PATTERN_MATCHED)
                split.trained_tokens += sum(label != IGNORE for label in sequence["labels"])
                split.pattern_tokens += sum(matched)
                if split.token_weighted:
                    sequence[TOKEN_WEIGHTS] = [loss_weight if hit else 1.0 for hit in matched]
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
                     if torch.is_tensor(value) and key not in (WEIGHT, TOKEN_WEIGHTS)}  # per token, unweighted
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
    """``collate`` (TRL's collator, which keeps only the columns it knows) with the examples' ``WEIGHT`` (one per
    example) and ``TOKEN_WEIGHTS`` (batch x positions, 1 on padding) added to the batch, those the examples carry;
    a module-level class so that dataloader workers can pickle it.

    TRL cuts ``input_ids`` and ``labels`` at ``max_length`` but no other column, so each example's token weights are
    cut here to its tokens, from the end TRL keeps (``keep_end``: the last ones).
    """

    def __init__(self, collate, keep_end: bool = False):
        self.collate, self.keep_end = collate, keep_end

    def __call__(self, examples: list[dict]) -> dict:
        import torch

        batch = self.collate(examples)
        if WEIGHT in examples[0]:
            batch[WEIGHT] = torch.tensor([float(example[WEIGHT]) for example in examples])
        if TOKEN_WEIGHTS in examples[0]:
            token_weights = torch.ones(batch["input_ids"].shape, dtype=torch.float32)
            for row, example in enumerate(examples):
                length = len(example["input_ids"])
                kept = example[TOKEN_WEIGHTS][-length:] if self.keep_end else example[TOKEN_WEIGHTS][:length]
                token_weights[row, :length] = torch.tensor(kept, dtype=torch.float32)
            batch[TOKEN_WEIGHTS] = token_weights
        return batch


def loss_scale(weights, token_weights):
    """What scales the fused LM head's ``log_probs`` (batch x positions - 1): each example's weight (one column,
    broadcast) times each predicted token's weight; None when the batch has neither.

    ``log_probs[:, t]`` is the log-probability of ``input_ids[:, t + 1]`` (TRL's head drops the last hidden state
    and the first label), so a token's weight scales the position that predicts it: ``token_weights[:, 1:]``.
    """
    scale = None if weights is None else weights[:, None]
    if token_weights is not None:
        scale = token_weights[:, 1:] if scale is None else scale * token_weights[:, 1:]
    return scale


def weighted_sft_trainer(trainer_class):
    """``trainer_class`` (TRL's ``SFTTrainer``) scaling each example's loss by its ``WEIGHT`` column, and each
    token's by its ``TOKEN_WEIGHTS`` (``loss_scale``).

    TRL 1.16's SFTTrainer has no per-example weights. Its loss (``loss_type="nll"``) is the fused LM head's
    per-token ``-log_probs`` summed over the batch's labelled tokens and divided by their count
    (``num_items_in_batch`` under gradient accumulation). Scaling each row's ``log_probs`` by its example's weight
    before TRL sums them scales that example's loss, and leaves TRL's normalisation, gradient accumulation,
    multi-process scaling and logged metrics (entropy, token accuracy) as they are: loss = sum_i w_i * (summed NLL of
    example i) / (assistant tokens in the batch). Token weights scale each position the same way: loss =
    sum_t w_t * nll_t / (assistant tokens in the batch), w_t the product of the token's and its example's weights.
    ``weighted_loss_problem`` refuses the settings whose loss is not built from those ``log_probs``.
    """

    class ScaledLogProbs:
        """The model being trained, its fused-head ``log_probs`` multiplied by ``scale`` (``loss_scale``)."""

        def __init__(self, model, scale):
            self.model, self.scale = model, scale

        def __call__(self, *args, **kwargs):
            outputs = self.model(*args, **kwargs)
            if kwargs.get("fused_lm_head"):  # the forward TRL's loss is built from; the others only feed metrics
                outputs.log_probs = outputs.log_probs * self.scale.to(outputs.log_probs.dtype)
            return outputs

    class WeightedSFTTrainer(trainer_class):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.data_collator = WeightCollator(self.data_collator, keep_end=self.args.truncation_mode == "keep_end")

        def _set_signature_columns_if_needed(self):
            super()._set_signature_columns_if_needed()  # the model's inputs: other columns are dropped
            missing = [column for column in (WEIGHT, TOKEN_WEIGHTS) if column not in self._signature_columns]
            self._signature_columns = [*self._signature_columns, *missing]

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            scale = loss_scale(inputs.pop(WEIGHT, None), inputs.pop(TOKEN_WEIGHTS, None))
            return super().compute_loss(model if scale is None else ScaledLogProbs(model, scale), inputs,
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
    weighted by example or by token (``weighted_sft_trainer``), reloading whole-model checkpoints by
    ``from_pretrained`` in a full-weight run."""
    from datasets import Dataset
    from trl import SFTTrainer

    from playprm.train.fused_head import score_labelled_positions_only

    score_labelled_positions_only()
    weighted = train.weighted or train.token_weighted
    trainer_class = weighted_sft_trainer(SFTTrainer) if weighted else SFTTrainer
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
    loss; ``config.loss_weight_pattern`` / ``loss_weight`` the loss of the reply tokens it matches. Input problems
    raise UsageError before the model loads.
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
    pattern = config.loss_weight_pattern
    if pattern is not None and not getattr(tokenizer, "is_fast", False):
        raise UsageError(f"--loss-weight-pattern finds tokens by their character offsets, which the slow tokenizer of "
                         f"{base.model_id} does not give; drop --loss-weight-pattern or use a fast tokenizer")
    train, validation = (tokenize_split(tokenizer, splits[name], template_kwargs, config.max_length, weighted,
                                        pattern, config.loss_weight) for name in ("train", "validation"))
    if pattern is not None and not train.pattern_tokens:
        raise UsageError(f"--loss-weight-pattern '{pattern}' matches no trained token of {data_dir}/train.jsonl "
                         "(it is searched in each assistant reply's text, case-sensitive); fix the pattern or drop it")
    check_batch_fits(config, len(train.sequences), "sequences")
    main_process = config.process_index == 0
    if main_process:
        announce(f"{train.describe('train', config.max_length)}; "
                 f"{validation.describe('validation', config.max_length)}"
                 + (f"; trained further from the adapter {start.adapter}" if start.adapter else ""))
        if pattern is not None:
            announce(train.describe_pattern(config.loss_weight))

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
        **({"pattern_tokens": train.pattern_tokens, "trained_tokens": train.trained_tokens} if pattern else {}),
    }
    save_policy_run(trainer, config, base, tokenizer, template_kwargs, metrics, data_dir=data_dir, kind="sft")
    return metrics
