"""``playprm train-prm``: train the process reward model (backbone + scalar head, QLoRA) on a ``prm-data`` dataset."""

from __future__ import annotations

from pathlib import Path

from playprm.train.recipe import accept_overrides


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "train-prm",
        help="train a PRM on turn labels (BCE) and/or pairs (Bradley-Terry); loads with --prm-path OUT",
        description="QLoRA on the backbone, the scalar head trained in full; one forward pass per episode where "
                    "the turns line up. Any TrainingArguments field and the LoRA fields can be set as "
                    "--field-name VALUE (e.g. --max-steps 2, --bt-weight 0.5, --max-length 2048). "
                    "See docs/training.md.",
        allow_abbrev=False,
    )
    parser.add_argument("--model", help="base model: a Hugging Face folder, a model_registry.json name or a hub id")
    parser.add_argument("--data", type=Path, help="folder with train.jsonl, validation.jsonl [, pairs.jsonl]")
    parser.add_argument("--output-dir", type=Path, help="folder for checkpoints, the PRM and metrics")
    parser.add_argument("--loss", default=None, metavar="{bce,bt,both}",
                        help="bce on soft turn labels (default), bt on pairs.jsonl, or both")
    parser.add_argument("--config", type=Path, help="YAML recipe, e.g. recipes/qwen3.5-27b/prm.yaml")
    parser.add_argument("--resume", action="store_true", help="continue from the last checkpoint in --output-dir")
    parser.add_argument("--require-cuda", action="store_true", help="fail instead of falling back to CPU")
    accept_overrides(parser)
    parser.set_defaults(func=run)


def run(args) -> int:
    from playprm.train.base_model import resolve_base_model
    from playprm.train.prm_config import PRMTrainingConfig
    from playprm.train.qlora import cpu_fallback_note
    from playprm.train.recipe import build_config, command_settings

    settings, inputs = command_settings(args, PRMTrainingConfig, {
        "output_dir": str(args.output_dir) if args.output_dir else None,
        "require_cuda": True if args.require_cuda else None,
        "loss": args.loss,
    })
    config = build_config(PRMTrainingConfig, settings)
    base = resolve_base_model(str(inputs["model"]))
    note = cpu_fallback_note(config, "train-prm")
    if note and config.process_index == 0:
        print(note)

    from playprm.train.prm import train_prm

    metrics = train_prm(config, base, Path(inputs["data"]), resume=args.resume)
    if config.process_index == 0:
        auroc = metrics.get("validation_auroc")
        brier = metrics.get("validation_brier")
        print(f"wrote the PRM (load it with --prm-path {config.output_dir}), metrics.json and calibration.png: "
              f"validation AUROC {'n/a' if auroc is None else f'{auroc:.3f}'}, "
              f"Brier {'n/a' if brier is None else f'{brier:.3f}'} after {metrics['global_step']} steps")
    return 0
