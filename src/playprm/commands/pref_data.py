"""``playprm pref-data``: rollout trees or scored best-of-N candidates -> DPO preference pairs (TRL's format)."""

from __future__ import annotations

import sys
from pathlib import Path

from playprm.errors import UsageError


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "pref-data",
        help="build OUT/train.jsonl and OUT/validation.jsonl of preference pairs (prompt, chosen, rejected) for DPO",
        description="Pairs of two replies to the same context, in TRL's conversational preference format, split by "
                    "instance. --source mc: sibling replies in the rollout trees of `playprm collect "
                    "--branch-factor` (turns.jsonl), ranked by their Monte-Carlo values; --source candidates: the "
                    "best- against the worst-scored candidate of each turn of a best-of-N run (candidates.jsonl), "
                    "ranked by that run's scorer. See docs/training.md.",
    )
    parser.add_argument("--results-dir", required=True, nargs="+", type=Path, metavar="DIR",
                        help="clemcore results folders or model folders (several allowed)")
    parser.add_argument("--source", choices=("mc", "candidates"), default="mc",
                        help="mc (default): sibling replies of the rollout trees by Monte-Carlo value; candidates: "
                             "best-of-N candidates by their scorer's scores")
    parser.add_argument("--min-gap", type=float, default=0.5,
                        help="least difference of values (mc) or scores (candidates) between chosen and rejected "
                             "(default 0.5)")
    parser.add_argument("--out", required=True, type=Path, help="folder for the dataset files and README.md")
    parser.add_argument("--val-fraction", type=float, default=0.1,
                        help="share of instances held out for validation (default 0.1)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the instance split (default 0)")
    parser.set_defaults(func=run)


def run(args) -> int:
    from playprm.data.preference import build_preference_dataset, write_preference_dataset
    from playprm.data.prm import find_rollout_trees
    from playprm.data.sources import check_dataset_inputs, read_sources

    check_dataset_inputs(args.results_dir, args.out, args.val_fraction)
    if args.min_gap < 0:
        raise UsageError(f"--min-gap must be >= 0, got {args.min_gap}")
    folders = ", ".join(map(str, args.results_dir))
    if args.source == "mc" and not find_rollout_trees(args.results_dir):
        raise UsageError(f"--source mc needs a rollout tree, but no turns.jsonl is in {folders} or its model "
                         "folders; `playprm collect --branch-factor 2` writes one (or use --source candidates on a "
                         "best-of-N run)")
    scan = read_sources(args.results_dir, require_episodes=args.source == "candidates")
    dataset = build_preference_dataset(scan, source=args.source, results_dirs=args.results_dir,
                                       min_gap=args.min_gap, val_fraction=args.val_fraction, seed=args.seed)
    pairs = len(dataset.train) + len(dataset.validation)
    if not pairs:
        found = f"{dataset.below_gap} pairs differ by less than --min-gap {args.min_gap:g}" if dataset.below_gap \
            else "no context has two replies of different value"
        more = ("collect more rollouts (--samples-per-instance, --branch-factor)" if args.source == "mc"
                else "run best-of-N with more --n-candidates and a scorer")
        raise UsageError(f"no preference pairs in {folders}: {found}; lower --min-gap or {more}")
    write_preference_dataset(dataset, args.out, sources=args.results_dir, val_fraction=args.val_fraction,
                             seed=args.seed)
    for where, reason in dataset.skipped:
        print(f"skipped {where}: {reason}", file=sys.stderr)
    print(f"wrote {len(dataset.train)} train and {len(dataset.validation)} validation pairs to {args.out} "
          f"({dataset.below_gap} below --min-gap {args.min_gap:g} left out; {len(scan.episodes)} episodes seen)")
    return 0
