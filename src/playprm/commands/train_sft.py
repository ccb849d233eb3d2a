"""``playprm train-sft``: QLoRA SFT of the policy on an ``sft-data`` dataset (TRL SFTTrainer + PEFT LoRA)."""

from __future__ import annotations

from pathlib import Path

from playprm.train.recipe import accept_overrides


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "train-sft",
        help="fine-tune a LoRA adapter on winning dialogues (writes adapter + model_registry.json)",
        description="QLoRA SFT with the model card's defaults. Any TrainingArguments / SFTConfig field, and the "
                    "LoRA fields (--lora-r, --lora-alpha, --lora-dropout, --lora-target-modules, --load-in-4bit, "
                    "--chat-template-kwargs, --effective-batch-size, --early-stopping-patience, --model-name), "
                    "can be set as --field-name VALUE, e.g. --max-steps 2 --learning-rate 1e-4. "
                    "See docs/training.md.",
        allow_abbrev=False,
    )
    parser.add_argument("--model", help="base model: a Hugging Face folder, a model_registry.json name or a hub id")
    parser.add_argument("--data", type=Path, help="folder with train.jsonl and validation.jsonl from sft-data")
    parser.add_argument("--output-dir", type=Path, help="folder for checkpoints, the adapter and metrics")
    parser.add_argument("--config", type=Path, help="YAML recipe, e.g. recipes/qwen3.5-27b/sft.yaml")
    parser.add_argument("--resume", action="store_true", help="continue from the last checkpoint in --output-dir")
    parser.add_argument("--require-cuda", action="store_true", help="fail instead of falling back to CPU")
    accept_overrides(parser)
    parser.set_defaults(func=run)


def run(args) -> int:
    from playprm.train.base_model import resolve_base_model
    from playprm.train.qlora import cpu_fallback_note
    from playprm.train.recipe import build_config, command_settings
    from playprm.train.sft_config import SFTTrainingConfig

    settings, inputs = command_settings(args, SFTTrainingConfig, {
        "output_dir": str(args.output_dir) if args.output_dir else None,
        "require_cuda": True if args.require_cuda else None,
    })
    config = build_config(SFTTrainingConfig, settings)
    base = resolve_base_model(str(inputs["model"]))
    note = cpu_fallback_note(config, "train-sft")
    if note and config.process_index == 0:
        print(note)

    from playprm.train.sft import train_sft

    metrics = train_sft(config, base, Path(inputs["data"]), resume=args.resume)
    if config.process_index == 0:
        accuracy = metrics["validation_token_accuracy"]
        print(f"wrote the adapter, model_registry.json and metrics.json to {config.output_dir}: validation loss "
              f"{metrics['validation_loss']:.4f}, token accuracy {accuracy:.1%} after {metrics['global_step']} steps")
    return 0
