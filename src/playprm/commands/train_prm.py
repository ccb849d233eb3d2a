"""``playprm train-prm``: train the process reward model (backbone + scalar head, QLoRA) on a ``prm-data`` dataset."""

from __future__ import annotations

from playprm.train.recipe import add_run_arguments


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "train-prm",
        help="train a PRM on turn labels (BCE) and/or pairs (Bradley-Terry); loads with --prm-path OUT",
        description="QLoRA on the backbone, the scalar head trained in full; one forward pass per episode where "
                    "the turns line up. Any TrainingArguments field and the LoRA fields can be set as "
                    "--field-name VALUE (e.g. --max-steps 2, --bt-weight 0.5, --max-length 2048; "
                    "--full-weights true trains every backbone weight, for models trained from scratch). "
                    "See docs/training.md.",
        allow_abbrev=False,
    )
    add_run_arguments(parser, data_help="folder with train.jsonl, validation.jsonl [, pairs.jsonl] from prm-data",
                      recipe_example="recipes/qwen3.5-27b/prm.yaml")
    parser.add_argument("--loss", default=None, metavar="{auto,bce,bt,both}",
                        help="bce on soft turn labels, bt on pairs.jsonl, or both; auto (default): both where the "
                             "data holds sibling pairs (the loss that ranked siblings best, BENCHMARKS.md), else bce")
    parser.set_defaults(func=run)


def run(args) -> int:
    from playprm.train.prm import train_prm
    from playprm.train.prm_config import PRMTrainingConfig
    from playprm.train.recipe import prepare_run
    from playprm.transformers_runtime import choose_cpu_threads

    config, base, data_dir = prepare_run(args, PRMTrainingConfig, {"loss": args.loss})
    choose_cpu_threads(base.model_id)  # once per run, by the base's size, before it loads
    metrics = train_prm(config, base, data_dir, resume=args.resume)
    if config.process_index == 0:
        auroc, brier = metrics.get("validation_auroc"), metrics.get("validation_brier")
        print(f"wrote the PRM (load it with --prm-path {config.output_dir}), metrics.json and calibration.png: "
              f"validation AUROC {'n/a' if auroc is None else f'{auroc:.3f}'}, "
              f"Brier {'n/a' if brier is None else f'{brier:.3f}'} after {metrics['global_step']} steps")
    return 0
