"""``playprm train-dpo``: DPO of a policy (an SFT adapter or full weights) on ``pref-data`` pairs (TRL DPOTrainer)."""

from __future__ import annotations

from playprm.train.recipe import add_run_arguments


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "train-dpo",
        help="train a policy further by DPO on preference pairs (writes adapter or model + model_registry.json)",
        description="DPO (TRL DPOTrainer) from a train-sft adapter folder (trained further, the SFT policy as the "
                    "reference), or from a model folder (a new LoRA adapter, or every weight with --full-weights "
                    "true; the model as the reference). Any TrainingArguments / DPOConfig field (--beta, "
                    "--loss-type, --max-steps, --learning-rate, ...) and the LoRA fields can be set as --field-name "
                    "VALUE. See docs/training.md.",
        allow_abbrev=False,
    )
    add_run_arguments(parser, data_help="folder with train.jsonl and validation.jsonl from pref-data",
                      recipe_example="recipes/qwen3.5-27b/dpo.yaml")
    parser.set_defaults(func=run)


def run(args) -> int:
    from playprm.train.base_model import resolve_start_policy
    from playprm.train.dpo import train_dpo
    from playprm.train.dpo_config import DPOTrainingConfig
    from playprm.train.recipe import prepare_run
    from playprm.transformers_runtime import choose_cpu_threads

    config, start, data_dir = prepare_run(args, DPOTrainingConfig, resolve=resolve_start_policy)
    choose_cpu_threads(start.base.model_id)  # once per run, by the base's size, before it loads
    metrics = train_dpo(config, start, data_dir, resume=args.resume)
    if config.process_index == 0:
        what = "model" if config.full_weights else "adapter"
        accuracy = metrics["validation_reward_accuracy"]
        print(f"wrote the {what}, model_registry.json and metrics.json to {config.output_dir}: validation DPO loss "
              f"{metrics['validation_loss']:.4f}, reward accuracy "
              f"{'n/a' if accuracy is None else f'{accuracy:.1%}'} after {metrics['global_step']} steps")
    return 0
