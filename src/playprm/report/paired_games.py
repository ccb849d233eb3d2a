"""Where two runs differ: a per-game paired table of run A against run B on the instances both played.

For every game, three paired differences with a paired bootstrap 95% CI (instances of that game resampled with
replacement, the same draw applied to both runs):

- ``clemscore points``: what that game alone moves clemscore by, clemscore(B with this game's episodes from A)
  - clemscore(B). clemscore is a product of two averages over games, so it does not split into per-game terms;
  swapping one game at a time says how many clemscore points each game wins or loses, in clemscore's own units
  (the points of all games add up to about the total difference);
- ``% played`` (A - B) and ``quality`` (A - B, mean Main Score over the episodes each run played to the end).

Rows are sorted by clemscore points, most lost first, so the games where A loses lead the table.
"""

from __future__ import annotations

import zlib
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from playprm.report.bootstrap import _nanmean, _percentiles
from playprm.report.paired import KEYS


@dataclass(frozen=True)
class GameDifference:
    """One game of a paired comparison: each difference with its CI ``(low, high)``."""

    game: str
    episodes: int  # instances both runs played
    points: float  # clemscore points this game alone moves (A - B)
    points_ci: tuple[float, float]
    played_a: float
    played_b: float
    played: float  # % played, A - B
    played_ci: tuple[float, float]
    quality_a: float
    quality_b: float
    quality: float  # quality, A - B
    quality_ci: tuple[float, float]

    @property
    def excludes_zero(self) -> bool:
        low, high = self.points_ci
        return low > 0 or high < 0


def _clemscore(played: np.ndarray, quality: np.ndarray) -> np.ndarray:
    # macro averages over the last axis (games), clemcore's product; a run that played nothing scores 0 here
    average_played = _nanmean(played, axis=-1)
    return np.where(average_played == 0, 0.0, average_played / 100.0 * _nanmean(quality, axis=-1))


def _means(values: np.ndarray) -> np.ndarray:
    return _nanmean(values, axis=-2)


def per_game_differences(a: pd.DataFrame, b: pd.DataFrame, *, n_resamples: int = 1000, seed: int = 0,
                         level: float = 0.95) -> list[GameDifference]:
    """Per-game paired differences of run ``a`` against run ``b`` (one row per episode each: columns game,
    experiment, episode, played, quality, as ``report.episodes.per_episode`` gives), most lost first."""
    shared = a[KEYS + ["played", "quality"]].merge(b[KEYS + ["played", "quality"]], on=KEYS, suffixes=("_a", "_b"))
    games = sorted(shared["game"].unique())
    if not games:
        return []
    rows = {game: shared[shared["game"] == game] for game in games}
    # point values per game: (games, 2) for A and B
    played = np.array([_means(rows[g][["played_a", "played_b"]].to_numpy(float) * 100.0) for g in games])
    quality = np.array([_means(rows[g][["quality_a", "quality_b"]].to_numpy(float)) for g in games])
    base = _clemscore(played[:, 1], quality[:, 1])
    differences = []
    for index, game in enumerate(games):
        game_rows = rows[game]
        values_played = game_rows[["played_a", "played_b"]].to_numpy(float) * 100.0
        values_quality = game_rows[["quality_a", "quality_b"]].to_numpy(float)
        stream = np.random.default_rng(np.random.SeedSequence([seed, zlib.crc32(str(game).encode())]))
        draws = stream.integers(0, len(game_rows), size=(n_resamples, len(game_rows)))
        replicate_played = _means(values_played[draws])  # (resamples, 2)
        replicate_quality = _means(values_quality[draws])
        # every replicate: B's other games at their point values, this game resampled, once as A played it
        # (swapped) and once as B did (kept)
        kept_played = np.tile(played[:, 1], (n_resamples, 1))
        kept_quality = np.tile(quality[:, 1], (n_resamples, 1))
        swapped_played, swapped_quality = kept_played.copy(), kept_quality.copy()
        kept_played[:, index], kept_quality[:, index] = replicate_played[:, 1], replicate_quality[:, 1]
        swapped_played[:, index], swapped_quality[:, index] = replicate_played[:, 0], replicate_quality[:, 0]
        points = _clemscore(swapped_played, swapped_quality) - _clemscore(kept_played, kept_quality)
        point_played, point_quality = played[:, 1].copy(), quality[:, 1].copy()
        point_played[index], point_quality[index] = played[index, 0], quality[index, 0]
        point = float(_clemscore(point_played, point_quality) - base)
        points_ci = _pair(_percentiles(points, level))
        if not played[:, 0].any() and not played[:, 1].any():  # neither run has a clemscore: no points, never 0
            point, points_ci = float("nan"), (float("nan"), float("nan"))
        differences.append(GameDifference(
            game=str(game), episodes=len(game_rows), points=point, points_ci=points_ci,
            played_a=float(played[index, 0]), played_b=float(played[index, 1]),
            played=float(played[index, 0] - played[index, 1]),
            played_ci=_pair(_percentiles(replicate_played[:, 0] - replicate_played[:, 1], level)),
            quality_a=float(quality[index, 0]), quality_b=float(quality[index, 1]),
            quality=float(quality[index, 0] - quality[index, 1]),
            quality_ci=_pair(_percentiles(replicate_quality[:, 0] - replicate_quality[:, 1], level)),
        ))
    return sorted(differences, key=lambda d: (np.nan_to_num(d.points, nan=0.0), d.game))


def _pair(interval) -> tuple[float, float]:
    return float(interval.low), float(interval.high)


def render_game_differences(a: str, b: str, differences: list[GameDifference],
                            static: set[str] = frozenset()) -> str:
    """A Markdown table of the per-game differences (A - B), most lost first; a static task (in ``static``) is
    marked, and its points are statscore points (an interactive game's: Playpen clemscore points)."""
    from playprm.report.render import number
    from playprm.tables import markdown_table

    def cell(value, interval) -> str:
        text = number(value)
        return f"{text} [{number(interval[0])}, {number(interval[1])}]" if text else ""

    headers = ["game", "episodes", "score points A - B [95% CI]", "% played B -> A", "% played A - B",
               "quality B -> A", "quality A - B"]
    rows = [[f"{d.game} (static)" if d.game in static else d.game, str(d.episodes), cell(d.points, d.points_ci),
             f"{number(d.played_b)} -> {number(d.played_a)}", cell(d.played, d.played_ci),
             f"{number(d.quality_b)} -> {number(d.quality_a)}", cell(d.quality, d.quality_ci)]
            for d in differences]
    sums = []
    for kind, games in (("clemscore", [d for d in differences if d.game not in static]),
                        ("statscore", [d for d in differences if d.game in static])):
        points = [d.points for d in games if not np.isnan(d.points)]
        if games:
            sums.append(f"{kind} points add up to {number(sum(points))}" if points
                        else f"{kind} points are blank (neither run has a {kind}: no episode played to the end)")
    which = ("Points: what each game alone moves its score by (an interactive game: Playpen's clemscore over the "
             "interactive games; a static task: statscore). " if static else
             "Points: what each game alone moves clemscore by. ")
    return (markdown_table(headers, rows) + f"\n\nA = {a}, B = {b}. {which}The games' " + " and ".join(sums)
            + " (a score is a product of averages, so the sum is close to, not equal to, the paired total).")


def game_differences_json(a: str, b: str, differences: list[GameDifference]) -> dict:
    """The table as a JSON-ready object."""
    return {"a": a, "b": b, "games": [asdict(d) for d in differences]}
