"""Direct preference optimisation of the policy on preference pairs (TRL's ``DPOTrainer``).

The run starts from a policy and keeps that policy as the reference:

- an SFT adapter (a ``train-sft`` output folder, or a registry name whose entry has ``peft_model``): the adapter is
  trained further on its base; TRL keeps a frozen copy of it as the ``ref`` adapter, so the reference is the SFT
  policy, not the base;
- full weights (a model folder, ``--full-weights true``): every weight is trained, the reference is a second copy
  of the folder;
- a model folder without ``--full-weights``: a new LoRA adapter, the reference being the model itself (adapter
  disabled).

Pairs are tokenised with ``playprm.chat``, as ``train-sft`` tokenises its dialogues and inference its turns: the
context is ``prompt_ids(prompt)`` and each reply ``response_ids(reply)`` (its tokens and the end-of-turn token).
"""

from __future__ import annotations

import json
from pathlib import Path

from playprm import chat
from playprm.errors import UsageError
from playprm.train.base_model import StartPolicy
from playprm.train.dataset_files import messages_problem, read_splits, reply_problem
from playprm.train.run_dir import (
    check_batch_fits,
    checkpoint_to_resume,
    print_logs_as_numbers,
    run_summary,
    save_policy_run,
    training_callbacks,
)

REFERENCE_ADAPTER = "ref"  # the name TRL gives the frozen copy of a starting adapter


def preference_record_problem(record: dict) -> str | None:
    """Checks a pref-data line: ``prompt`` messages ending with user, ``chosen`` / ``rejected`` one assistant
    message each (TRL's conversational preference format)."""
    problem = messages_problem(record.get("prompt"), "user")
    if problem:
        return problem.replace("'messages'", "'prompt'")
    for key in ("chosen", "rejected"):
        problem = reply_problem(record.get(key), key, "pref-data")
        if problem:
            return problem
    if record["chosen"][0]["content"] == record["rejected"][0]["content"]:
        return "'chosen' and 'rejected' are the same reply; a pair needs two different replies"
    return None


def read_preference_splits(data_dir: Path) -> dict[str, list[dict]]:
    """Train and validation pairs of ``data_dir``, checked; training needs pairs from at least two contexts (one
    context teaches a single answer, not a preference)."""
    splits = read_splits(Path(data_dir), preference_record_problem, "pref-data")
    contexts = {json.dumps(record["prompt"], sort_keys=True) for record in splits["train"]}
    if len(contexts) < 2:
        raise UsageError(f"{Path(data_dir) / 'train.jsonl'}: all {len(splits['train'])} pairs answer one context; "
                         "DPO needs pairs from several contexts (collect more instances and rerun `playprm pref-data`)")
    return splits


def pair_sequences(tokenizer, records: list[dict], chat_template_kwargs: dict | None) -> list[dict]:
    """``{"prompt_ids", "chosen_ids", "rejected_ids"}`` of each pair, tokenised as inference tokenises a turn."""
    return [{"prompt_ids": chat.prompt_ids(tokenizer, record["prompt"], chat_template_kwargs),
             "chosen_ids": chat.response_ids(tokenizer, record["chosen"][0]["content"]),
             "rejected_ids": chat.response_ids(tokenizer, record["rejected"][0]["content"])} for record in records]


def policy_dpo_trainer():
    """TRL's ``DPOTrainer`` taking pairs tokenised by ``pair_sequences``.

    TRL tokenises conversational pairs itself by rendering prompt + reply through the chat template and cutting
    where the two renderings diverge; templates that render a reply differently once it is history (Qwen3's empty
    think block) then train on a context the policy never sees. Here only its length filter is kept.
    """
    from trl import DPOTrainer

    from playprm.train.fused_head import score_labelled_positions_only

    score_labelled_positions_only()

    class PolicyDPOTrainer(DPOTrainer):
        def _prepare_dataset(self, dataset, processing_class, args, dataset_name):
            if args.max_length is None:
                return dataset
            # as TRL: a prompt that fills max_length leaves no reply token to learn from
            return dataset.filter(lambda example: len(example["prompt_ids"]) < args.max_length)

    return PolicyDPOTrainer


def final_evaluation(trainer) -> dict:
    """The validation metrics of the trained weights: the Trainer's own evaluation at the last step when it ran one
    there (``--eval-steps`` dividing the run, as the presets set it) and kept those weights (no best checkpoint
    reloaded, or the best one is the last step's), else one more pass (a validation pass of SmolLM2 pairs took 4-6
    minutes, twice, before)."""
    state = trainer.state
    evaluations = [entry for entry in state.log_history if "eval_loss" in entry]
    last = evaluations[-1] if evaluations else {}
    kept = not trainer.args.load_best_model_at_end or getattr(state, "best_global_step", None) == state.global_step
    if last.get("step") == state.global_step and kept:
        return last
    return trainer.evaluate()


def train_dpo(config, start: StartPolicy, data_dir: Path, *, resume: bool = False, callbacks=(),
              announce=print) -> dict:
    """DPO of the ``start`` policy on the pairs in ``data_dir``; returns the metrics written.

    ``config`` is a ``DPOTrainingConfig`` (its ``output_dir`` receives checkpoints, the adapter or model, the
    tokenizer, ``model_registry.json``, ``metrics.json`` and the model card); ``resume`` continues from the last
    checkpoint there. Input problems raise UsageError before the model loads.
    """
    from datasets import Dataset
    from transformers import AutoModelForCausalLM

    from playprm.train.base_model import check_start_policy, import_gguf_base, load_start_policy
    from playprm.train.qlora import announce_cpu_fallback
    from playprm.train.sft import full_weight_trainer, load_tokenizer

    check_start_policy(start, config)
    output_dir = Path(config.output_dir)
    splits = read_preference_splits(Path(data_dir))
    checkpoint = checkpoint_to_resume(output_dir, resume)
    announce_cpu_fallback(config, "train-dpo", announce)
    base = import_gguf_base(start.base, config, announce)
    tokenizer = load_tokenizer(base)
    template_kwargs = base.template_kwargs(config.chat_template_kwargs)
    train = pair_sequences(tokenizer, splits["train"], template_kwargs)
    validation = pair_sequences(tokenizer, splits["validation"], template_kwargs)
    check_batch_fits(config, len(train), "pairs")
    main_process = config.process_index == 0
    if main_process:
        announce(f"train: {len(train)} pairs; validation: {len(validation)} pairs; reference: the starting policy "
                 f"({'the adapter ' + str(start.adapter) if start.adapter else base.model_id})")

    model, peft_config = load_start_policy(AutoModelForCausalLM, base, start.adapter, config)
    trainer_class = policy_dpo_trainer()
    trainer = (full_weight_trainer(trainer_class) if config.full_weights else trainer_class)(
        model=model,
        args=config,
        train_dataset=Dataset.from_list(train),
        eval_dataset=Dataset.from_list(validation),
        processing_class=tokenizer,
        peft_config=peft_config,
        callbacks=training_callbacks(config, callbacks),
    )
    print_logs_as_numbers(trainer)
    result = trainer.train(resume_from_checkpoint=checkpoint)
    evaluation = final_evaluation(trainer)
    metrics = {
        "validation_loss": evaluation.get("eval_loss"),
        "validation_reward_accuracy": evaluation.get("eval_rewards/accuracies"),
        "validation_reward_margin": evaluation.get("eval_rewards/margins"),
        **run_summary(trainer, result),
        "train_pairs": len(train),
        "validation_pairs": len(validation),
        "beta": config.beta,
        "start": str(start.adapter or base.model_id),
    }
    unwrapped = trainer.accelerator.unwrap_model(trainer.model)
    if REFERENCE_ADAPTER in getattr(unwrapped, "peft_config", {}):
        unwrapped.delete_adapter(REFERENCE_ADAPTER)  # the reference is the starting adapter, already on disk
    save_policy_run(trainer, config, base, tokenizer, template_kwargs, metrics, data_dir=data_dir, kind="dpo")
    return metrics
