"""``playprm collect``: sampled (and branched) rollouts for SFT and PRM data."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

from playprm.commands.eval import add_game_arguments
from playprm.results.layout import TURNS_FILE


def register(subparsers) -> None:
    parser = subparsers.add_parser("collect", help="sample K episodes per instance, optionally branching into trees")
    parser.add_argument("--policy-model", required=True)
    add_game_arguments(parser)
    parser.add_argument("--samples-per-instance", type=int, default=4)
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--branch-factor", type=int, default=1, help="copies of the game at a branching point")
    parser.add_argument("--branch-at", choices=["policy-turns", "first-turn"], default="policy-turns")
    parser.add_argument("--branch-depth", type=int, default=2,
                        help="with policy-turns: branch at the first D policy turns (default 2)")
    parser.add_argument("--results-dir", type=Path, default=Path("rollouts"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch-size", type=int, default=32, help="rollout trees in flight")
    parser.add_argument("--prover", default=None, metavar="MODEL",
                        help="plays the turns after a branch point that do not branch, so a branched reply's "
                             "Monte-Carlo value is measured under MODEL (a model folder, registry name or "
                             "programmatic:expert, an oracle); default: the policy itself")
    parser.set_defaults(func=run)


def run(args) -> int:
    from playprm.collect import CollectSettings, run_collect

    settings = CollectSettings(**{f.name: getattr(args, f.name) for f in fields(CollectSettings)})
    run_dir, summary = run_collect(args.policy_model, args.games, args.game_all, args.games_dir, args.limit,
                                   args.results_dir, settings)
    print(f"rollouts: {run_dir}\nturns:    {run_dir / TURNS_FILE}")
    for line in summary.lines():
        print(line)
    return 1 if summary.all_errored else 0
