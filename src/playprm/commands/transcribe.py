"""``playprm transcribe``: episode pages with the candidates and PRM scores of every guided turn."""

from __future__ import annotations

from pathlib import Path

from playprm.errors import UsageError


def register(subparsers) -> None:
    parser = subparsers.add_parser("transcribe", help="HTML episode pages showing the alternatives and their scores")
    parser.add_argument("--results-dir", type=Path, required=True, help="a results folder (or any folder below one)")
    parser.add_argument("--out", type=Path,
                        help="folder for the pages and index.html, mirroring the results layout (default: beside "
                             "each episode, as clem transcribe writes them)")
    parser.set_defaults(func=run)


def run(args) -> int:
    if not args.results_dir.is_dir():
        raise UsageError(f"--results-dir {args.results_dir} is not a directory")
    from playprm.results.layout import INTERACTIONS_FILE, result_files

    if not result_files(args.results_dir, INTERACTIONS_FILE):
        raise UsageError(f"no {INTERACTIONS_FILE} under {args.results_dir}; run playprm eval first")
    out = args.out if args.out is not None else args.results_dir
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} exists and is not a folder; choose another path")
    from playprm.report.transcribe import transcribe

    pages = transcribe(args.results_dir, out)
    print(f"{len(pages)} episode pages; open {out / 'index.html'}")
    return 0
