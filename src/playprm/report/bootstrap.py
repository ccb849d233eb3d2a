"""Bootstrap confidence intervals for clemscore, statscore and the per-game numbers behind them.

Method (stratified percentile bootstrap): for one model, every game's episodes are resampled with
replacement, keeping that game's episode count, ``n_resamples`` times. Each resample gives a game's
% Played (mean of Played x 100) and Quality Score (mean Main Score, NaN-skipping, as clemeval does); the
game-level interval is the 2.5th-97.5th percentile of those. Resample ``b`` of every game together gives one
replicate of the macro averages over games and of clemscore = Average % Played / 100 x Average Quality
Score (statscore: the same over the static games only; Playpen's clemscore over the others); their
percentiles are the aggregate intervals.
Games are strata because clemscore weights games, not episodes, equally. The random stream of a
(model, game) pair depends only on the seed and the two names, so adding a model or a game never moves
another one's interval.
"""

from __future__ import annotations

import warnings
import zlib
from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class Interval:
    """A confidence interval; NaN bounds where there was nothing to resample."""

    low: float
    high: float


@dataclass
class ModelIntervals:
    """Intervals for one model: per game ``played``/``quality``, and the aggregates over games."""

    played: dict[str, Interval]
    quality: dict[str, Interval]
    clemscore: Interval  # every game (clemcore's)
    statscore: Interval  # the static games (NaN bounds where none)
    interactive: Interval  # the other games (Playpen's clemscore)


def _stream(seed: int, model: str, game: str) -> np.random.Generator:
    names = [zlib.crc32(model.encode("utf-8")), zlib.crc32(game.encode("utf-8"))]
    return np.random.default_rng(np.random.SeedSequence([seed, *names]))


def _nanmean(values: np.ndarray, axis: int) -> np.ndarray:
    # an all-NaN resample (every drawn episode aborted) has no quality, like clemeval's NaN mean
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(values, axis=axis)


def _percentiles(replicates: np.ndarray, level: float) -> Interval:
    finite = replicates[~np.isnan(replicates)]
    if finite.size == 0:
        return Interval(float("nan"), float("nan"))
    tail = (1.0 - level) / 2.0 * 100.0
    low, high = np.percentile(finite, [tail, 100.0 - tail])
    return Interval(float(low), float(high))


def _aggregate(played: np.ndarray, quality: np.ndarray) -> np.ndarray:
    # played, quality: (resamples, games); macro average over games, then clemscore's product
    return _nanmean(played, axis=1) / 100.0 * _nanmean(quality, axis=1)


def _subset(played: np.ndarray, quality: np.ndarray, columns: list[int], level: float) -> Interval:
    # the aggregate over some games' columns; NaN bounds where there are none
    if not columns:
        return Interval(float("nan"), float("nan"))
    return _percentiles(_aggregate(played[:, columns], quality[:, columns]), level)


def bootstrap_intervals(
    episodes: pd.DataFrame,
    static_games: set[str] | None,
    n_resamples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> dict[str, ModelIntervals]:
    """Intervals per model from ``episodes`` (columns model, game, played, quality; one row per episode).

    ``static_games`` None or empty gives NaN statscore intervals. Returns {model: ModelIntervals}.
    """
    intervals = {}
    for model, model_episodes in episodes.groupby("model", sort=True):
        played_columns, quality_columns, games = [], [], []
        per_game_played, per_game_quality = {}, {}
        for game, game_episodes in model_episodes.groupby("game", sort=True):
            played = game_episodes["played"].to_numpy(dtype=float)
            quality = game_episodes["quality"].to_numpy(dtype=float)
            draws = _stream(seed, str(model), str(game)).integers(0, len(played), size=(n_resamples, len(played)))
            played_replicates = _nanmean(played[draws], axis=1) * 100.0
            quality_replicates = _nanmean(quality[draws], axis=1)
            per_game_played[game] = _percentiles(played_replicates, level)
            per_game_quality[game] = _percentiles(quality_replicates, level)
            played_columns.append(played_replicates)
            quality_columns.append(quality_replicates)
            games.append(game)
        played_matrix = np.column_stack(played_columns)
        quality_matrix = np.column_stack(quality_columns)
        static = [i for i, game in enumerate(games) if static_games and game in static_games]
        interactive = [i for i in range(len(games)) if i not in static]

        intervals[str(model)] = ModelIntervals(
            played=per_game_played,
            quality=per_game_quality,
            clemscore=_percentiles(_aggregate(played_matrix, quality_matrix), level),
            statscore=_subset(played_matrix, quality_matrix, static, level),
            interactive=_subset(played_matrix, quality_matrix, interactive, level),
        )
    return intervals
