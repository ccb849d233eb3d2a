"""``playprm report``: clemscore / statscore tables with CIs and plots; ``--compare`` runs side by side."""

from __future__ import annotations

from pathlib import Path

from playprm.errors import UsageError


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "report",
        help="clemscore/statscore table (clemcore's numbers) with bootstrap CIs and plots, or --compare runs",
        description=(
            "Read clemcore results dirs (<model-pair>/<game>/<experiment>/<episode>/scores.json) and write the "
            "report into --out (default ./playprm-reports/<run>/, named on the first line printed; never into an "
            "input folder, and never over a results.csv that clemcore wrote). --results-dir reads all given dirs as one run set (e.g. SLURM shards) and writes "
            "results.csv (clem eval's columns first), results.md and clemscore.png; --compare reads each dir on its "
            "own and writes compare.csv, compare.md, turns.md/.json, and compute.png where runs have cost.json "
            "(runs playprm played). Where a run has static tasks, Playpen's clemscore (interactive games) and "
            "statscore are shown as such, beside clemcore's all-games clemscore."
        ),
    )
    inputs = parser.add_mutually_exclusive_group(required=True)
    inputs.add_argument("--results-dir", nargs="+", type=Path, metavar="DIR", help="results dir(s), read as one")
    inputs.add_argument("--compare", nargs="+", type=Path, metavar="DIR", help="results dirs to set side by side")
    parser.add_argument("--out", type=Path,
                        help="output folder (default: ./playprm-reports/<run>/; never inside an input dir)")
    parser.add_argument(
        "--static-games", metavar="A,B",
        help="comma-separated static games for statscore, overriding the automatic split (default: clemgame.json "
             "tags, the run's metadata, Playpen's static/ folder, Playpen's static suite by name)",
    )
    parser.add_argument(
        "--games-dir", type=Path, metavar="DIR",
        help="extra games folder (e.g. a clembench checkout) whose clemgame.json files mark static games",
    )
    parser.add_argument("--paired", nargs=2, action="append", metavar=("A", "B"), default=[],
                        help="with --compare: clemscore(A) - clemscore(B) over the instances both played (where the "
                             "runs have static tasks: Playpen's clemscore, statscore and clemcore's all-games "
                             "clemscore, each named), with a paired bootstrap 95%% CI, and a per-game table and "
                             "forest plot of where they differ: paired.md/.json, forest_<A>_vs_<B>.png (runs named "
                             "by their --compare folder; repeatable)")
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples for the CIs (default 1000)")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    parser.add_argument(
        "--errored-as-aborted", action="store_true",
        help="score episodes that errored (error.json, no scores.json) as aborted; clemcore leaves them out",
    )
    parser.set_defaults(func=run)


def _static_games(value: str | None) -> set[str] | None:
    if value is None:
        return None
    return {name.strip() for name in value.split(",") if name.strip()}


def run(args) -> int:
    from playprm.report.inputs import check_input_folders, check_output_folder, check_pairs

    # every check reads names only, before pandas and clemcore load (seconds), so a refusal comes at once
    folders = args.compare or args.results_dir
    flag = "--compare" if args.compare else "--results-dir"
    if args.paired and not args.compare:
        raise UsageError("--paired compares runs of --compare; add --compare DIR ...")
    if args.resamples < 1:
        raise UsageError(f"--resamples must be at least 1, got {args.resamples}")
    if args.games_dir is not None and not args.games_dir.is_dir():
        raise UsageError(f"--games-dir {args.games_dir} is not a folder; pass a clembench checkout or a games folder")
    runs = check_input_folders(folders, flag)
    pairs = [tuple(p) for p in args.paired]
    check_pairs(runs, pairs)
    out = check_output_folder(args.out, folders, compare=bool(args.compare),
                              replaces=() if args.compare else ("results.csv",))
    print(f"playprm report: writing into {out}/" + ("" if args.out else " (--out chooses another folder)"),
          flush=True)
    inputs = [run.path for run in runs]
    static_games = _static_games(args.static_games)
    if args.compare:
        from playprm.report.compare import compare_runs, render_comparison
        from playprm.report.outputs import NO_COMPUTE_PLOT, write_comparison, write_paired, write_turns
        from playprm.report.paired import resolve_pairs

        comparison = compare_runs(inputs, static_games, args.resamples, args.seed, args.errored_as_aborted,
                                  args.games_dir)
        pairs = resolve_pairs(comparison, pairs)  # a name that fits no run stops here, before any file is written
        print(render_comparison(comparison), end="")
        written = write_comparison(comparison, out)
        if out / "compute.png" not in written:
            print(NO_COMPUTE_PLOT)
        turns, turn_files = write_turns(comparison, out)
        print("\nReplies that repeat a reply the game rejected, and guided turns (all rows: turns.md)\n" + turns)
        written += turn_files
        if pairs:
            text, paired_files = write_paired(comparison, pairs, out, n_resamples=args.resamples, seed=args.seed)
            print("\n" + text, end="")
            written += paired_files
    else:
        from playprm.report.clemscore import compute_table
        from playprm.report.outputs import write_results
        from playprm.report.render import render_table

        table = compute_table(inputs, static_games, args.resamples, args.seed, args.errored_as_aborted,
                              args.games_dir)
        print(render_table(table), end="")
        written = write_results(table, out)
    print("wrote " + ", ".join(str(path) for path in written))
    return 0
