"""``playprm games``: list the games playprm can play, and make them visible to clemcore's own CLI."""

from __future__ import annotations

from pathlib import Path

from playprm.tables import text_table


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "games", help="list the available games (built-in, game_registry.json, --games-dir)"
    )
    parser.add_argument(
        "--games-dir",
        type=Path,
        default=None,
        help="an extra folder of clemgames, e.g. a clembench checkout; its games shadow others",
    )
    parser.add_argument(
        "--register",
        action="store_true",
        help="write game_registry.json here so that `clem run/list` finds the built-in games and --games-dir's",
    )
    parser.set_defaults(func=run)


def run(args) -> int:
    from playprm.games.registry import discover_games, write_game_registry

    games = discover_games(args.games_dir)
    rows = [["name", "players", "source", "benchmarks", "path"]]
    for entry in sorted(games.values(), key=lambda e: e.name):
        rows.append(
            [entry.name, str(entry.players), entry.source, ",".join(entry.benchmarks) or "-", str(entry.path)]
        )
    print(text_table(rows[0], rows[1:], align="l" * len(rows[0]), rule=False))
    if args.register:
        path = write_game_registry(Path.cwd(), args.games_dir)
        also = f" and those of {args.games_dir}" if args.games_dir else ""
        print(f"\nwrote {path}: clemcore's `clem list games` / `clem run` started in {path.parent} now find the "
              f"built-in games{also}")
    return 0
