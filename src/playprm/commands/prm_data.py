"""``playprm prm-data``: clemcore results (and rollout trees) -> turn-level PRM labels and preference pairs."""

from __future__ import annotations

import sys
from pathlib import Path

from playprm.errors import UsageError


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "prm-data",
        help="build OUT/train.jsonl, OUT/validation.jsonl (and OUT/pairs.jsonl) of labelled LLM turns",
        description="One record per LLM turn with an outcome label (the episode's outcome) and/or a "
                    "Monte-Carlo label (share of successful rollouts below the turn, from the turns.jsonl "
                    "that `playprm collect --branch-factor` writes); split by instance.",
    )
    parser.add_argument("--results-dir", required=True, nargs="+", type=Path, metavar="DIR",
                        help="clemcore results folders or model folders (several allowed)")
    parser.add_argument("--labels", required=True, choices=("outcome", "mc", "both", "advantage"),
                        help="outcome: episode outcome per turn; mc: Monte-Carlo estimate; both: both kinds; "
                             "advantage: a reply's Monte-Carlo value minus the mean of its siblings', as "
                             "(1 + A) / 2 (what separates replies to one context)")
    parser.add_argument("--out", required=True, type=Path, help="folder for the dataset files and README.md")
    parser.add_argument("--val-fraction", type=float, default=0.1,
                        help="share of instances held out for validation (default 0.1)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the instance split (default 0)")
    parser.add_argument("--lose-label", type=float, default=0.0, help="outcome label of lost episodes (default 0)")
    parser.add_argument("--abort-label", type=float, default=0.0,
                        help="outcome label of aborted episodes (default 0)")
    parser.add_argument("--unflagged-label", choices=("none", "main-score"), default="none",
                        help="outcome label of scored episodes whose flags name no outcome (TextArena's games set "
                             "no Success/Lose; contradicting flags): none leaves them out (default), main-score "
                             "labels their turns Main Score / 100")
    parser.set_defaults(func=run)


def run(args) -> int:
    from playprm.data.prm import build_prm_dataset, find_rollout_trees, write_prm_dataset
    from playprm.data.sources import check_dataset_inputs, read_sources

    check_dataset_inputs(args.results_dir, args.out, args.val_fraction)
    for flag, value in (("--lose-label", args.lose_label), ("--abort-label", args.abort_label)):
        if not 0 <= value <= 1:
            raise UsageError(f"{flag} must be in [0, 1], got {value}")
    trees = find_rollout_trees(args.results_dir) if args.labels != "outcome" else []
    if args.labels != "outcome" and not trees:
        raise UsageError(
            f"--labels {args.labels} needs a rollout tree, but no turns.jsonl is in "
            f"{', '.join(map(str, args.results_dir))} or its model folders; `playprm collect` with "
            "--branch-factor writes <results>/<model-pair>/turns.jsonl (or use --labels outcome)")
    scan = read_sources(args.results_dir, require_episodes=not trees)  # a tree alone can be labelled
    dataset = build_prm_dataset(scan, labels=args.labels, trees=trees, val_fraction=args.val_fraction,
                                seed=args.seed, lose_label=args.lose_label, abort_label=args.abort_label,
                                unflagged=args.unflagged_label)
    write_prm_dataset(dataset, args.out, sources=args.results_dir, labels=args.labels,
                      val_fraction=args.val_fraction, seed=args.seed, lose_label=args.lose_label,
                      abort_label=args.abort_label, unflagged=args.unflagged_label)
    if args.labels in ("outcome", "both"):
        from playprm.data.card import no_outcome_line

        unlabelled = [e for e in scan.episodes if e.outcome is None and args.unflagged_label == "none"
                      or e.outcome_problem == "unscored"]
        hint = "" if args.unflagged_label != "none" else "--unflagged-label main-score labels scored ones by Main Score"
        gaps = no_outcome_line(unlabelled, hint)
        if gaps:
            print(gaps, file=sys.stderr)
    for where, reason in dataset.tree_lines_skipped:
        print(f"skipped {where}: {reason}", file=sys.stderr)
    pairs = "" if dataset.pairs is None else f" and {len(dataset.pairs)} pairs"
    print(f"wrote {len(dataset.train)} train and {len(dataset.validation)} validation records{pairs} to "
          f"{args.out} ({len(scan.episodes)} episodes seen, {len(scan.skipped)} skipped)")
    if not dataset.train and not dataset.validation:
        print("no labelled turns found: no episode with a known outcome"
              + (" and no finished rollout in turns.jsonl" if trees else "") + "; the files are empty")
    return 0
