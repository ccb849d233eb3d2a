"""``playprm eval``: play games with a policy, plain or PRM-guided, into clemcore's results layout."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

from playprm.play.config import MODES, SAMPLING_TEMPERATURE, SCORERS, EvalConfig, field_defaults, parse_shard
from playprm.search.base import AGGREGATES
from playprm.search.modes import mode_help
from playprm.search.selection import SELECTION_HELP, SELECTIONS


def add_game_arguments(parser) -> None:
    parser.add_argument("--game", "-g", dest="games", action="extend", nargs="+", default=[], metavar="NAME|SPEC",
                        help="games to play (repeatable; -g A B as in clem run): a name, or a clemcore GameSpec dict "
                             "as clem run's -g takes it, e.g. \"{'benchmark': ['2.0']}\"")
    parser.add_argument("--game-all", action="store_true", help="play every available game")
    parser.add_argument("--games-dir", type=Path, help="a clembench checkout; its games shadow built-in ones")
    parser.add_argument("--limit", type=int, help="play the first N instances of each experiment")
    parser.add_argument("-e", "--experiment", help="play only this experiment (clem run's -e)")
    parser.add_argument("-i", "--instances", metavar="NAME",
                        help="the instances file in each game's in/, without .json (clem run's -i)")
    parser.add_argument("--skip-broken-games", action="store_true",
                        help="play the games that load; a game whose code fails to load (a missing package) gets "
                             "its episodes recorded as errors instead of stopping the command")


def register(subparsers) -> None:
    card = field_defaults(EvalConfig)  # every option's default is its EvalConfig field's (set below)
    parser = subparsers.add_parser("eval", help=f"play games with a policy ({', '.join(MODES)})")
    parser.add_argument("--policy-model", required=True,
                        help="model name from model_registry.json (cwd, then clemcore's) or a local HF model dir")
    parser.add_argument("--mode", choices=MODES, help=mode_help())
    parser.add_argument("--prm-path", type=Path, help="PRM folder (train-prm or make-tiny output)")
    add_game_arguments(parser)
    parser.add_argument("--results-dir", type=Path)
    parser.add_argument("--n-candidates", type=int,
                        help=f"candidates per guided turn (default {card['n_candidates']})")
    parser.add_argument("--temperature", type=float,
                        help=f"default 0 for greedy, {SAMPLING_TEMPERATURE} for sampling modes")
    parser.add_argument("--max-tokens", type=int, help=f"default {card['max_tokens']}")
    parser.add_argument("--beam-width", type=int, help=f"default {card['beam_width']}")
    parser.add_argument("--num-beam-iterations", type=int, help=f"default {card['num_beam_iterations']}")
    parser.add_argument("--aggregate", choices=AGGREGATES,
                        help=f"how turn scores combine along a trajectory (default {card['aggregate']})")
    parser.add_argument("--guide-roles", nargs="+", metavar="ROLE",
                        help="guide only these game roles (default: every policy player)")
    parser.add_argument("--guide-games", metavar="auto|G1,G2",
                        help="guided modes: guide only these games, the others play greedy; auto: the games where "
                             "guidance beat greedy on validation runs, or where the PRM ranks siblings (--gate-from)")
    parser.add_argument("--gate-from", type=Path, metavar="PAIRED|PRM",
                        help="--guide-games auto: the paired.json (or its folder) of `playprm report --compare "
                             "GREEDY GUIDED --paired GUIDED GREEDY` on validation instances, or a train-prm folder "
                             "(guides the games where its validation sibling Δ/σ is at least 1)")
    parser.add_argument("--seed", type=int, help=f"default {card['seed']}")
    parser.add_argument("--batch-size", type=int, help=f"episodes in flight (default {card['batch_size']})")
    parser.add_argument("--shard", help="i/n: play every n-th planned episode starting at i (zero-based)")
    parser.add_argument("--retry-errors", action="store_true", help="replay episodes that ended in error.json")
    parser.add_argument("--scorer", choices=SCORERS,
                        help="best-of-n: rank candidates by the PRM (default), the policy's mean token "
                             "log-probability (the no-PRM baseline) or the programmatic expert (an upper bound for "
                             "built-in games; sees only the player's context)")
    parser.add_argument("--selection", choices=SELECTIONS, help=f"best-of-n: {SELECTION_HELP}")
    parser.add_argument("--switch-margin", metavar="FLOAT|auto",
                        help="--selection anchored: how much a candidate's score must beat the greedy reply's to "
                             "replace it; auto (the default with the PRM) reads it for this N from --prm-path's "
                             "switch_margin.json (train-prm's validation rollouts); 0 = argmax over a set with greedy")
    parser.set_defaults(func=run, run_log="results_dir",  # clembench.log goes into the run's folder
                        **{name: value for name, value in card.items() if name != "shard"})


def config_from_args(args) -> EvalConfig:
    """The command line's options as an EvalConfig (every field has an option of the same name)."""
    values = {f.name: getattr(args, f.name) for f in fields(EvalConfig) if f.init}
    return EvalConfig(**{**values, "shard": parse_shard(args.shard)})


def run(args) -> int:
    from playprm.play.wiring import run_eval

    run_dir, summary = run_eval(config_from_args(args))
    print(f"results: {run_dir}")
    for line in summary.lines():
        print(line)
    try:
        from playprm.report.clemscore import compute_table
        from playprm.report.render import render_table

        table = compute_table([run_dir.parent], n_resamples=200)
        if run_dir.name in table.index:
            table = table.loc[[run_dir.name]]
        print(render_table(table))
    except Exception as error:  # the table is a convenience here; `playprm report` is the real one
        print(f"(no clemscore table: {error})")
    return 1 if summary.all_errored else 0
