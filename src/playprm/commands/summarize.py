"""``playprm summarize``: RESULTS.md and results.json of a pipeline work directory (see report.results_doc)."""

from __future__ import annotations

from pathlib import Path

from playprm.errors import UsageError


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "summarize", help="write RESULTS.md and results.json for a `pipeline --preset small` work directory")
    parser.add_argument("--workdir", type=Path, required=True, help="the pipeline's work directory")
    parser.add_argument("--preset", choices=["small"], default="small")
    parser.add_argument("--seed", type=int, default=0, help="the pipeline's seed (also seeds the bootstrap)")
    parser.add_argument("--resamples", type=int, default=1000)
    parser.set_defaults(func=run)


def run(args) -> int:
    from playprm.report.results_doc import write_results
    from playprm.small_preset import PAIRS, ROUND2_ROW, GridRow, SmallPreset

    if not (args.workdir / "results").is_dir():
        raise UsageError(f"--workdir {args.workdir} has no results/ folder; run `playprm pipeline --preset small` "
                         "first")
    command = f"playprm pipeline --preset {args.preset} --seed {args.seed} --workdir {args.workdir}"
    grid = [GridRow("base-greedy", policy="base"), *SmallPreset(seed=args.seed).rows(), GridRow(ROUND2_ROW,
                                                                                               policy="round2")]
    paths = write_results(args.workdir, command=command, seed=args.seed, pairs=PAIRS,
                          grid=[row.as_dict() for row in grid], n_resamples=args.resamples)
    print("wrote " + ", ".join(map(str, paths)))
    return 0
