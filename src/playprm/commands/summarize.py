"""``playprm summarize``: RESULTS.md and results.json of a pipeline work directory (see pipeline.summary)."""

from __future__ import annotations

from pathlib import Path

from playprm.errors import UsageError


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "summarize", help="write RESULTS.md and results.json for a `pipeline --preset small|smol|tiny` work directory")
    parser.add_argument("--workdir", type=Path, required=True, help="the pipeline's work directory")
    parser.add_argument("--preset", choices=["small", "smol", "tiny"], default="small", help="the preset the work "
                        "directory was run with (its grid and paired comparisons)")
    parser.add_argument("--seed", type=int, default=0, help="the pipeline's seed (also seeds the bootstrap)")
    parser.add_argument("--game", default="referencegame", help="small preset: the game it ran (pipeline --game)")
    parser.add_argument("--pipeline-flags", default="", help="the pipeline's further options, for RESULTS.md's "
                        "command line (the pipeline passes them)")
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples behind every 95%% CI "
                        "and paired difference of RESULTS.md (default 1000)")
    parser.set_defaults(func=run)


def run(args) -> int:
    from playprm.atomic import check_output_path
    from playprm.pipeline.small import small_preset
    from playprm.pipeline.smol import SmolPreset
    from playprm.pipeline.stages import check_run_identity, run_identity
    from playprm.pipeline.summary import summarize_small, summarize_smol, summarize_tiny
    from playprm.transformers_runtime import choose_cpu_threads

    check_output_path(args.workdir, "--workdir")
    check_run_identity(args.workdir, run_identity(args.preset, args.seed, args.game))
    if not (args.workdir / "results").is_dir():
        raise UsageError(f"--workdir {args.workdir} has no results/ folder; run "
                         f"`playprm pipeline --preset {args.preset}` "
                         "first")
    # once per run, before the PRM loads (held-out calibration), by its backbone's size (the smol preset's PRM
    # scores SFT greedy's 192 held-out turns on SmolLM2)
    prm = args.workdir / "prm"
    choose_cpu_threads(prm if prm.is_dir() else None)
    command = " ".join(["playprm pipeline --preset", args.preset,
                        *(["--seed", str(args.seed)] if args.preset != "tiny" else []),  # tiny has no seed
                        *args.pipeline_flags.split(), "--workdir", str(args.workdir)])
    if args.preset == "tiny":
        paths = summarize_tiny(args.workdir, command=command, n_resamples=args.resamples)
    elif args.preset == "smol":
        paths = summarize_smol(args.workdir, SmolPreset(seed=args.seed), command=command, n_resamples=args.resamples)
    else:
        paths = summarize_small(args.workdir, small_preset(args.game, seed=args.seed), command=command,
                                n_resamples=args.resamples)
    print("wrote " + ", ".join(map(str, paths)))
    return 0
