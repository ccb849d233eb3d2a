"""``playprm collect``: sampled (and branched) rollouts for SFT and PRM data."""

from __future__ import annotations

import argparse
from dataclasses import fields
from pathlib import Path

from playprm.commands.eval import add_game_arguments
from playprm.results.layout import TURNS_FILE


def register(subparsers) -> None:
    # an option left out is left out of args: CollectSettings' own default applies (settings_from_args), so the
    # defaults are written once, there (importing playprm.play.collect here would load clemcore for --help)
    unset = argparse.SUPPRESS
    parser = subparsers.add_parser("collect", help="sample K episodes per instance, optionally branching into trees")
    parser.add_argument("--policy-model", required=True)
    add_game_arguments(parser)
    parser.add_argument("--samples-per-instance", type=int, default=unset, help="episodes per instance")
    parser.add_argument("--temperature", type=float, default=unset)
    parser.add_argument("--max-tokens", type=int, default=unset)
    parser.add_argument("--branch-factor", type=int, default=unset, help="copies of the game at a branching point")
    parser.add_argument("--branch-at", choices=["policy-turns", "first-turn"], default=unset)
    parser.add_argument("--branch-depth", type=int, default=unset,
                        help="with policy-turns: branch at the first D policy turns")
    parser.add_argument("--results-dir", type=Path, default=Path("rollouts"))
    parser.add_argument("--seed", type=int, default=unset)
    parser.add_argument("--batch-size", type=int, default=unset, help="rollout trees in flight")
    parser.add_argument("--prover", default=unset, metavar="MODEL",
                        help="plays the turns after a branch point that do not branch, so a branched reply's "
                             "Monte-Carlo value is measured under MODEL (a model folder, registry name or "
                             "programmatic:expert, an oracle); default: the policy itself")
    parser.set_defaults(func=run, run_log="results_dir")  # clembench.log goes into the run's folder


def settings_from_args(args):
    """The command line's options as CollectSettings (every field has an option of the same name; those left
    out keep the field's default)."""
    from playprm.play.collect import CollectSettings

    given = vars(args)
    return CollectSettings(**{f.name: given[f.name] for f in fields(CollectSettings) if f.name in given})


def run(args) -> int:
    from playprm.play.collect import run_collect

    run_dir, summary = run_collect(args.policy_model, args.games, args.game_all, args.games_dir, args.limit,
                                   args.results_dir, settings_from_args(args), experiment=args.experiment,
                                   instances_file=args.instances, skip_broken_games=args.skip_broken_games)
    print(f"rollouts: {run_dir}\nturns:    {run_dir / TURNS_FILE}")
    for line in summary.lines():
        print(line)
    return 1 if summary.all_errored else 0
