"""``playprm bench``: the CPU benchmark suite, written to BENCHMARKS.md (see ``playprm.bench``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from playprm.atomic import check_output_path
from playprm.errors import UsageError


def register(subparsers) -> None:
    from playprm.bench import FIGURES

    parser = subparsers.add_parser(
        "bench", help="run the CPU benchmark suite (alternated A/B timings) and write BENCHMARKS.md")
    parser.add_argument("--out", type=Path, default=Path("BENCHMARKS.md"),
                        help="markdown file to write; its text outside the generated block is kept "
                             "(default: BENCHMARKS.md)")
    parser.add_argument("--quick", action="store_true",
                        help="tiny sizes and one round (seconds; checks that the suite runs, numbers mean nothing)")
    parser.add_argument("--only", action="append", choices=FIGURES, metavar="FIGURE",
                        help=f"run only this figure (repeatable): {', '.join(FIGURES)}")
    parser.add_argument("--json", type=Path, help="also write every figure, raw times included, as JSON here")
    parser.add_argument("--work", type=Path,
                        help="folder for the tiny models and run results (kept, models reused); default: a "
                             "temporary folder")
    parser.set_defaults(func=run)


def run(args) -> int:
    check_output_path(args.out, "--out", file=True)
    if not args.out.parent.exists() and str(args.out.parent) not in ("", "."):
        raise UsageError(f"--out {args.out}: folder {args.out.parent} does not exist; create it first")
    if args.work is not None:
        check_output_path(args.work, "--work")
    if args.json is not None:
        check_output_path(args.json, "--json", file=True)
    # libgomp threads spin while they wait for each other; on cores shared with other busy processes that
    # spinning costs several-fold (see figure 0), so the suite waits passively unless told otherwise. It must be
    # set before torch loads its OpenMP runtime.
    if "torch" not in sys.modules and "OMP_WAIT_POLICY" not in os.environ:
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
        os.environ["PLAYPRM_BENCH_SET_WAIT_POLICY"] = "1"  # so that the user processes it starts run without it
    from playprm.bench.suite import run_suite, write_outputs
    from playprm.transformers_runtime import choose_cpu_threads

    choose_cpu_threads()  # as playprm's runs decide them (the in-process figures time their paths with it)

    command = "playprm " + " ".join(sys.argv[1:]) if "bench" in sys.argv[1:] else "playprm bench"
    figures, machine, total = run_suite(quick=args.quick, only=args.only, work=args.work,
                                        log=lambda line: print(line, file=sys.stderr, flush=True))
    path = write_outputs(figures, machine, total, out=args.out, command=command, json_path=args.json)
    for figure in figures:
        for goal in figure.goals:
            print(f"{figure.title}: {goal.text}: {goal.measured:.2f} ({'met' if goal.met else 'missed'})")
    print(f"wrote {path} ({total:.0f} s)")
    return 0
