"""``playprm transcribe``: episode pages with the candidates and PRM scores of every guided turn."""

from __future__ import annotations

from pathlib import Path

from playprm.errors import UsageError


def register(subparsers) -> None:
    parser = subparsers.add_parser("transcribe", help="HTML episode pages showing the alternatives and their scores")
    parser.add_argument("--results-dir", type=Path, required=True, help="a results folder (or any folder below one)")
    parser.add_argument("--out", type=Path,
                        help="folder for the pages and index.html, mirroring the results layout (default: "
                             "./playprm-reports/<run>/transcripts/; never inside --results-dir, where clem "
                             "transcribe's own pages live)")
    parser.set_defaults(func=run)


def run(args) -> int:
    if not args.results_dir.is_dir():
        raise UsageError(f"--results-dir {args.results_dir} is not a directory")
    from playprm.report.inputs import DEFAULT_REPORTS, check_output_folder, default_name
    from playprm.results.layout import INTERACTIONS_FILE, walk_results

    default = DEFAULT_REPORTS / default_name([args.results_dir], compare=False) / "transcripts"
    out = check_output_folder(args.out or default, [args.results_dir], replaces=("index.html",))
    if not any(INTERACTIONS_FILE in files for _, _, files in walk_results(args.results_dir)):  # stops at the first
        raise UsageError(f"no {INTERACTIONS_FILE} under {args.results_dir}; run playprm eval first")
    print(f"playprm transcribe: writing into {out}/" + ("" if args.out else " (--out chooses another folder)"),
          flush=True)
    from playprm.report.transcribe import transcribe

    pages, notes = transcribe(args.results_dir, out)
    for note in notes:
        print(f"warning: {note}")
    # an episode has up to two pages (transcript.html, and search.html where it logged candidates): count episodes
    searches = sum(page.name == "search.html" for page in pages)
    print(f"{len({page.parent for page in pages})} episodes ({len(pages) - searches} transcript.html, {searches} "
          f"search.html); open {out / 'index.html'}")
    return 0
