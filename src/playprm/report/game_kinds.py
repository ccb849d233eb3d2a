"""Which games of a results folder are static tasks (statscore) and which are interactive games (clemscore), as
Playpen splits them, decided without flags.

Playpen (``playpen eval``) reports two numbers: clemscore, clemcore's aggregate over the interactive games only,
and statscore, the same aggregate over the static tasks (bbh, cladder, eqbench, ifeval, mmlu_pro in the 2025-09
clembench snapshot). clemcore's own clemscore over a folder that holds both averages all games. A game's kind is
taken from the first source that knows it:

1. ``--static-games`` (the user's list, used alone);
2. the run metadata of a run playprm played (``playprm_run.json``: ``game_benchmarks``, the clemgame.json tags
   eval recorded), so ``report`` needs no ``--games-dir`` after ``eval --games-dir``;
3. playprm's game registry (built-in games, ``game_registry.json``, ``--games-dir``): a ``static_<version>``
   benchmark tag;
4. Playpen's run layout: episodes under ``<run>/static/<model>/`` are static, under ``<run>/clem/<model>/``
   interactive;
5. Playpen's static suite by name (folders written by others, such as the LM Playschool records);
6. otherwise interactive.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from playprm.errors import UsageError
from playprm.report.episodes import EpisodeScores

# Playpen's static tasks: the clemgames under clembench's static/ (tagged "static_1.0"), 2025-09 snapshot
PLAYPEN_STATIC_SUITE = frozenset({"bbh", "cladder", "eqbench", "ifeval", "mmlu_pro"})
# the folders ``playpen eval`` writes above the model folder
PLAYPEN_STATIC_FOLDER = "static"
PLAYPEN_CLEM_FOLDER = "clem"
GAME_BENCHMARKS = "game_benchmarks"  # playprm_run.json: {game: its clemgame.json benchmark tags}


@dataclass
class GameKinds:
    """The static games among those played, and for each game where its kind came from."""

    static: set[str] = field(default_factory=set)
    source: dict[str, str] = field(default_factory=dict)  # game -> "--static-games", "run metadata", ...
    notes: list[str] = field(default_factory=list)  # e.g. a registry that could not be read

    def interactive(self, games) -> list[str]:
        """The games of ``games`` that are not static, sorted."""
        return sorted(game for game in games if game not in self.static)

    def describe(self) -> str:
        """One line: which games statscore averages and why (grouped by source)."""
        if not self.static:
            return ("statscore: blank, no static game in these results (static tasks are games tagged "
                    "static_<version> in clemgame.json, episodes under Playpen's static/ folder, or Playpen's "
                    f"suite {', '.join(sorted(PLAYPEN_STATIC_SUITE))}; --static-games overrides)")
        by_source: dict[str, list[str]] = {}
        for game in sorted(self.static):
            by_source.setdefault(self.source.get(game, "?"), []).append(game)
        reasons = "; ".join(f"{', '.join(games)} ({source})" for source, games in by_source.items())
        return f"statscore: static games {reasons}; clemscore (interactive): the other games"


def _registry_kinds(games_dir: Path | None) -> tuple[dict[str, bool], str]:
    try:
        from playprm.games.registry import discover_games
    except ImportError:
        return {}, "playprm's game registry is not available"
    try:
        games = discover_games(games_dir)
    except UsageError as error:
        if games_dir is not None:
            raise
        return {}, f"the game registry could not be read ({error})"
    return {name: entry.static for name, entry in games.items()}, ""


def _metadata_kinds(episodes: EpisodeScores) -> dict[str, bool]:
    from playprm.games.registry import is_static
    from playprm.results.layout import RUN_METADATA_FILE
    from playprm.results.run_record import RunRecord

    kinds: dict[str, bool] = {}
    for model_dirs in episodes.model_dirs.values():
        for model_dir in model_dirs:
            path = model_dir / RUN_METADATA_FILE
            if not path.is_file():
                continue
            recorded = RunRecord.read(path).settings.get(GAME_BENCHMARKS)
            if isinstance(recorded, dict):
                for game, tags in recorded.items():
                    tags = [tags] if isinstance(tags, str) else tags
                    if isinstance(tags, list):
                        kinds[str(game)] = is_static([str(tag) for tag in tags])
    return kinds


def _layout_kinds(episodes: EpisodeScores) -> dict[str, bool]:
    kinds: dict[str, bool] = {}
    for (_, game, _, _), episode_dir in episodes.episode_dirs.items():
        # <run>/{static,clem}/<model>/<game>/<experiment>/<episode>
        parents = episode_dir.parents
        if len(parents) < 4:
            continue
        above_model = parents[3].name
        if above_model == PLAYPEN_STATIC_FOLDER:
            kinds[game] = True
        elif above_model == PLAYPEN_CLEM_FOLDER:
            kinds.setdefault(game, False)
    return kinds


def classify_games(episodes: EpisodeScores, static_games: set[str] | None = None,
                   games_dir: Path | None = None) -> GameKinds:
    """The kind of every game in ``episodes`` (see the module doc for the order of sources).

    ``static_games``: the user's ``--static-games`` (used alone; an empty set: no static game). ``games_dir``: an
    extra games folder for the registry (a bad one raises UsageError).
    """
    games = sorted(set(episodes.frame["game"]) | {game for _, game in episodes.errored})
    kinds = GameKinds()
    if static_games is not None:
        kinds.static = {game for game in games if game in static_games}
        kinds.source = {game: "--static-games" for game in kinds.static}
        return kinds
    registry, problem = _registry_kinds(games_dir)
    if problem:
        kinds.notes.append(f"game kinds: {problem}; games unknown to it are classified by layout and name")
    sources = [("run metadata", _metadata_kinds(episodes)), ("clemgame.json tags", registry),
               ("Playpen's static/ folder", _layout_kinds(episodes)),
               ("Playpen's static suite", {game: True for game in PLAYPEN_STATIC_SUITE})]
    for game in games:
        for source, known in sources:
            if game in known:
                if known[game]:
                    kinds.static.add(game)
                    kinds.source[game] = source
                break
    return kinds
