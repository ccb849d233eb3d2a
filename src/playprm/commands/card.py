"""``playprm card``: (re)write the model card of a train-sft / train-prm run, adding the evaluation from reports."""

from __future__ import annotations

from pathlib import Path

from playprm.errors import UsageError


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "card",
        help="rewrite a trained model's README.md card, with the clemscore/statscore table of `playprm report`",
        description="Render MODEL_DIR/README.md from the run's files (metrics.json, trainer_state.json, "
                    "training_config.json, run_info.json, adapter_config.json) and add an Evaluation section "
                    "from report folders (compare.csv or results.csv: clemscore and statscore with 95%% CIs per "
                    "decoding mode). What it is given is kept in MODEL_DIR/card.json for later renders. For a "
                    "folder that is not a playprm run, only the Evaluation section of its README.md is replaced.",
    )
    parser.add_argument("--model-dir", required=True, type=Path, help="the --output-dir of train-sft or train-prm")
    parser.add_argument("--report", nargs="+", type=Path, metavar="R",
                        help="report folders or their compare.csv / results.csv (several allowed)")
    parser.add_argument("--companion", help="the PRM folder or id of a policy, or the policy name of a PRM")
    parser.add_argument("--base-model-id", help="hub id of the base model, where training used a local folder")
    parser.add_argument("--license", help="license of the model (default: the base model card's, else unknown)")
    parser.set_defaults(func=run)


def run(args) -> int:
    from playprm.atomic import check_output_path, write_json, write_text
    from playprm.train.card_evaluation import read_report, render_evaluation
    from playprm.train.model_card import (
        CARD_FILE,
        CARD_SETTINGS_FILE,
        is_hub_id,
        is_playprm_run,
        read_json_file,
        replace_evaluation,
        write_model_card,
    )

    model_dir = args.model_dir
    if not model_dir.is_dir():
        raise UsageError(f"--model-dir {model_dir} is not a folder; give the --output-dir of train-sft or train-prm")
    check_output_path(model_dir, "--model-dir")
    if args.base_model_id is not None and not is_hub_id(args.base_model_id):
        raise UsageError(f"--base-model-id {args.base_model_id} is not a hub id (owner/name)")
    rows = [row for report in args.report or [] for row in read_report(report)]
    playprm_run = is_playprm_run(model_dir)
    if not playprm_run and not (model_dir / CARD_FILE).is_file():
        raise UsageError(f"--model-dir {model_dir} holds neither a playprm run (run_info.json, metrics.json) nor a "
                         f"{CARD_FILE} to add the evaluation to")
    if not playprm_run:
        if not rows:
            raise UsageError(f"{model_dir} is not a playprm run: only --report can be added to its {CARD_FILE}")
        card = (model_dir / CARD_FILE).read_text(encoding="utf-8")
        sources = [str(report) for report in args.report]
        write_text(model_dir / CARD_FILE, replace_evaluation(card, render_evaluation(rows, sources)))
        print(f"added the evaluation of {len(rows)} runs to {model_dir / CARD_FILE}")
        return 0
    settings = read_json_file(model_dir / CARD_SETTINGS_FILE)
    if rows:
        settings.update(evaluation=rows, evaluation_sources=[str(report) for report in args.report])
    for key in ("companion", "base_model_id", "license"):
        if getattr(args, key) is not None:
            settings[key] = getattr(args, key)
    write_json(model_dir / CARD_SETTINGS_FILE, settings)
    path = write_model_card(model_dir)
    evaluated = f" with the evaluation of {len(settings['evaluation'])} runs" if settings.get("evaluation") else ""
    print(f"wrote {path}{evaluated}")
    return 0
