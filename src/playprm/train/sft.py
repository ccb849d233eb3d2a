"""Supervised fine-tuning of the policy on winning game dialogues (QLoRA on TRL's ``SFTTrainer``).

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
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from playprm import chat
from playprm.errors import UsageError
from playprm.train.base_model import BaseModel
from playprm.train.dataset_files import read_splits, sft_record_problem
from playprm.train.run_dir import (
    METRICS_FILE,
    check_batch_fits,
    checkpoint_to_resume,
    run_summary,
    training_callbacks,
)

IGNORE = -100  # label of tokens outside assistant replies


def conversation_sequences(tokenizer, messages: list[dict], chat_template_kwargs: dict | None = None) -> list[dict]:
    """Training sequences ``{"input_ids", "labels"}`` of one conversation, tokenised turn by turn.

    ``labels`` equal ``input_ids`` on the tokens of every assistant reply (end-of-turn token included) and are
    ``IGNORE`` elsewhere. Usually one sequence; more where the template re-renders earlier turns (see module doc).
    """
    sequences: list[dict] = []
    input_ids: list[int] = []
    labels: list[int] = []
    for index, message in enumerate(messages):
        if message["role"] != "assistant":
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

    def describe(self, name: str, max_length: int | None) -> str:
        extra = len(self.sequences) - self.conversations
        text = f"{name}: {self.conversations} conversations -> {len(self.sequences)} sequences"
        if extra:
            text += f" ({extra} extra: the chat template re-renders earlier turns)"
        if self.too_long:
            text += f", {self.too_long} longer than max_length={max_length} (their last tokens are cut)"
        return text


def tokenize_split(tokenizer, records: list[dict], chat_template_kwargs: dict | None,
                   max_length: int | None) -> TokenizedSplit:
    """All conversations of a split as training sequences (``conversation_sequences`` of each record)."""
    split = TokenizedSplit(conversations=len(records))
    for record in records:
        for sequence in conversation_sequences(tokenizer, record["messages"], chat_template_kwargs):
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
            batch = {key: value.to(trainer.args.device) for key, value in batch.items() if torch.is_tensor(value)}
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


def registry_entry(model_name: str, base_model_id: str, adapter_dir: Path, *, load_in_4bit: bool,
                   chat_template_kwargs: dict, eos_to_cull: str, full_weights: bool = False) -> dict:
    """The clemcore ``model_registry.json`` entry of a trained adapter (``huggingface_local`` backend); of a
    full-weight run, the saved model itself.

    Written so that clemcore 3.7.2's own ``clem run`` plays it as ``playprm eval`` does: its backend reads
    ``premade_chat_template`` and ``eos_to_cull`` unconditionally (a missing one is a KeyError on the first
    reply), builds a bitsandbytes config whenever ``load_in_4bit`` is present, even false (so the key is written
    only when true; playprm reads its absence as false), and guesses the padding side with a warning unless
    ``padding_side`` says it. ``eos_to_cull`` is what playprm culls for the model given by path.
    """
    config: dict = {"premade_chat_template": True, "eos_to_cull": eos_to_cull, "padding_side": "left"}
    if load_in_4bit:
        config["load_in_4bit"] = True
    config["chat_template_kwargs"] = dict(chat_template_kwargs)
    if not full_weights:
        config["peft_model"] = str(Path(adapter_dir).resolve())
    return {
        "model_name": model_name,
        "backend": "huggingface_local",
        "huggingface_id": str(Path(adapter_dir).resolve()) if full_weights else base_model_id,
        "model_config": config,
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


def train_sft(config, base: BaseModel, data_dir: Path, *, resume: bool = False, callbacks=(),
              announce=print) -> dict:
    """Train a LoRA adapter for ``base`` on the SFT dataset in ``data_dir``; returns the metrics written.

    ``config`` is an ``SFTTrainingConfig`` (its ``output_dir`` receives checkpoints, the adapter, the tokenizer,
    ``model_registry.json`` and ``metrics.json``); ``resume`` continues from the last checkpoint there with the
    same data order. ``callbacks`` are extra ``TrainerCallback`` objects. Input problems raise UsageError before
    the model loads.
    """
    from datasets import Dataset
    from transformers import AutoModelForCausalLM
    from trl import SFTTrainer
    from trl.trainer import utils as trl_utils

    from playprm.train.base_model import import_gguf_base, load_base_model
    from playprm.train.qlora import lora_config

    if not hasattr(trl_utils, "add_fused_lm_head"):  # validation metrics call the fused LM head TRL installs
        raise UsageError("this TRL has no fused LM head (playprm's SFT validation needs it); "
                         "install trl>=1.16,<2 as pyproject.toml pins")
    output_dir = Path(config.output_dir)
    splits = read_splits(Path(data_dir), sft_record_problem, "sft-data")
    checkpoint = checkpoint_to_resume(output_dir, resume)
    base = import_gguf_base(base, config, announce)
    tokenizer = load_tokenizer(base)
    template_kwargs = base.template_kwargs(config.chat_template_kwargs)
    train = tokenize_split(tokenizer, splits["train"], template_kwargs, config.max_length)
    validation = tokenize_split(tokenizer, splits["validation"], template_kwargs, config.max_length)
    check_batch_fits(config, len(train.sequences), "sequences")
    main_process = config.process_index == 0
    if main_process:
        announce(f"{train.describe('train', config.max_length)}; "
                 f"{validation.describe('validation', config.max_length)}")

    model = load_base_model(AutoModelForCausalLM, base, config)
    trainer = (full_weight_trainer(SFTTrainer) if config.full_weights else SFTTrainer)(
        model=model,
        args=config,
        train_dataset=Dataset.from_list(train.sequences),
        eval_dataset=Dataset.from_list(validation.sequences),
        processing_class=tokenizer,
        peft_config=None if config.full_weights else lora_config(config, "CAUSAL_LM"),
        callbacks=training_callbacks(config, callbacks),
    )
    result = trainer.train(resume_from_checkpoint=checkpoint)
    metrics = {
        **assistant_token_metrics(trainer),
        **run_summary(trainer, result),
        "train_sequences": len(train.sequences),
        "validation_sequences": len(validation.sequences),
    }
    save_policy_run(trainer, config, base, tokenizer, template_kwargs, metrics, data_dir=data_dir, kind="sft")
    return metrics


def save_policy_run(trainer, config, base: BaseModel, tokenizer, template_kwargs: dict, metrics: dict, *,
                    data_dir: Path | None, kind: str, samples_per_game: dict | None = None) -> None:
    """The end of a policy run (``kind`` "sft", "dpo" or "grpo"): the adapter or model, its ``model_registry.json``
    entry, ``metrics.json`` and the model card, in ``config.output_dir``. ``data_dir``: the training data (None:
    none on disk, GRPO plays its own); ``samples_per_game``: the card's per-game counts where no data files say
    them."""
    from playprm.atomic import write_json
    from playprm.models.registry import write_registry_entry
    from playprm.models.replies import default_eos_to_cull

    output_dir = Path(config.output_dir)
    trainer.save_model(str(output_dir))  # every process joins: DeepSpeed gathers the adapter here
    if config.process_index != 0:
        return
    name = config.model_name or output_dir.resolve().name
    entry = registry_entry(name, base.model_id, output_dir, load_in_4bit=bool(config.load_in_4bit),
                           chat_template_kwargs=template_kwargs, eos_to_cull=default_eos_to_cull(tokenizer),
                           full_weights=config.full_weights)
    write_registry_entry(output_dir, entry)
    write_json(output_dir / METRICS_FILE, metrics)
    from playprm.train.model_card import write_run_card

    # last: it replaces the README.md cards that TRL and PEFT's save_model wrote
    write_run_card(output_dir, kind=kind, trainer=trainer, config=config, base=base, data_dir=data_dir,
                   chat_template_kwargs=template_kwargs, samples_per_game=samples_per_game)
