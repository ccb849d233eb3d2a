"""``playprm merge``: join shard results dirs (e.g. SLURM array tasks) into one clemcore results dir."""

from __future__ import annotations

from pathlib import Path


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "merge",
        help="copy the episodes of shard results dirs into one results dir",
        description=(
            "Copy every <model-pair>/<game>/<experiment>/<episode>/ folder of the shards into OUT. Identical "
            "duplicate episodes are skipped and counted; differing ones, or shards of different decoding "
            "modes, stop the merge before anything is written."
        ),
    )
    parser.add_argument("--results-dir", nargs="+", type=Path, required=True, metavar="DIR", help="shard dirs")
    parser.add_argument("--out", type=Path, required=True, help="merged results dir (new or a previous merge)")
    parser.set_defaults(func=run)


def run(args) -> int:
    from playprm.atomic import check_output_path
    from playprm.results.merge import merge_shards

    check_output_path(args.out, "--out")
    summary = merge_shards(args.results_dir, args.out)
    print(summary.line(args.out))
    return 0
