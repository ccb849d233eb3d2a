"""``playprm train-sft``: QLoRA SFT of the policy on an ``sft-data`` dataset (TRL SFTTrainer + PEFT LoRA)."""

from __future__ import annotations

from playprm.train.recipe import add_run_arguments


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "train-sft",
        help="fine-tune a LoRA adapter on winning dialogues or weighted turns (writes adapter + model_registry.json)",
        description="QLoRA SFT with the model card's defaults, on sft-data's dialogues or, with a weight column "
                    "(sft-data --weights), on single turns whose loss each weight scales. --model is a base model, or "
                    "a train-sft output to train further (its adapter, or its full weights with --full-weights "
                    "true). Any TrainingArguments / SFTConfig field, and the "
                    "LoRA fields (--lora-r, --lora-alpha, --lora-dropout, --lora-target-modules, --load-in-4bit, "
                    "--chat-template-kwargs, --effective-batch-size, --early-stopping-patience, --model-name), "
                    "can be set as --field-name VALUE, e.g. --max-steps 2 --learning-rate 1e-4. "
                    "--loss-weight-pattern REGEX --loss-weight W weighs the reply tokens the pattern matches W in "
                    "the loss (opt-in, effect not yet measured). See docs/training.md.",
        allow_abbrev=False,
    )
    add_run_arguments(parser, data_help="folder with train.jsonl and validation.jsonl from sft-data",
                      recipe_example="recipes/qwen3.5-27b/sft.yaml")
    parser.set_defaults(func=run)


def run(args) -> int:
    from playprm.train.base_model import resolve_start_policy
    from playprm.train.recipe import prepare_run
    from playprm.train.sft import train_sft
    from playprm.train.sft_config import SFTTrainingConfig
    from playprm.transformers_runtime import choose_cpu_threads

    config, start, data_dir = prepare_run(args, SFTTrainingConfig, resolve=resolve_start_policy)
    choose_cpu_threads(start.base.model_id)  # once per run, by the base's size, before it loads
    metrics = train_sft(config, start, data_dir, resume=args.resume)
    if config.process_index == 0:
        what = "model" if config.full_weights else "adapter"
        print(f"wrote the {what}, model_registry.json and metrics.json to {config.output_dir}: validation loss "
              f"{metrics['validation_loss']:.4f}, token accuracy {metrics['validation_token_accuracy']:.1%} "
              f"after {metrics['global_step']} steps")
    return 0
