"""``playprm instances``: a folder of the built-in games with new seeded instances (training or held-out splits)."""

from __future__ import annotations

from pathlib import Path


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "instances", help="write the built-in games with freshly generated instances into a folder for --games-dir",
        description="Copies the built-in game folders into OUT and writes each game's in/instances.json from its "
                    "own seeded generator. --exclude drops instances that already occur in another split, so a "
                    "held-out split shares no instance with the training split.")
    parser.add_argument("--out", type=Path, required=True, help="folder to write (use it as --games-dir)")
    parser.add_argument("--seed", type=int, required=True, help="generator seed (splits differ by seed)")
    parser.add_argument("--per-experiment", type=int, default=50, help="instances per experiment (default 50)")
    parser.add_argument("--game", dest="games", action="append", metavar="NAME", help="only this game (repeatable)")
    parser.add_argument("--exclude", nargs="+", type=Path, default=[], metavar="DIR",
                        help="split folders whose instances must not reappear (wordle: nor their secret words)")
    parser.add_argument("--vocabulary", choices=("full", "small"), default="full",
                        help="wordle's word list: full (14,430 allowed guesses, clembench's game) or small (the 300 "
                             "most common words, for a model trained from scratch; targets and guesses both from "
                             "it). Default full")
    parser.set_defaults(func=run)


def run(args) -> int:
    from playprm.atomic import check_output_path
    from playprm.games.splits import write_split

    check_output_path(args.out, "--out")
    summary = write_split(args.out, seed=args.seed, per_experiment=args.per_experiment, games=args.games,
                          exclude=args.exclude, vocabulary=args.vocabulary)
    for game, row in summary["games"].items():
        short = (f"; fewer than asked: the {row['vocabulary']} list has no more targets outside --exclude"
                 if row.get("vocabulary") == "small" and row["instances"] < args.per_experiment else "")
        print(f"{game}: {row['instances']} instances ({row['dropped_as_in_exclude']} dropped as in --exclude, "
              f"{row['target_shared_with_exclude']} share their target with it{short})")
    print(f"wrote {args.out} (use --games-dir {args.out})")
    return 0
