"""Paired comparisons: the clemscore difference of two runs over the same game instances, with a paired CI.

Two decoding modes evaluated on the same instances are not independent samples: an instance that is easy for
one is usually easy for the other. The paired bootstrap resamples *instances* (within each game, as the
unpaired intervals do), applies the same draw to both runs and recomputes clemscore(A) - clemscore(B) per
replicate; the interval is the 2.5th-97.5th percentile. Only instances both runs played enter (matched by game,
experiment and episode folder); how many is reported beside the difference. A run that played no episode to
the end counts clemscore 0 here (0 % played times any quality), where clemcore leaves it blank.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np
import pandas as pd

from playprm.report.bootstrap import _nanmean, _percentiles

KEYS = ["game", "experiment", "episode"]


@dataclass(frozen=True)
class PairedDifference:
    a: str
    b: str
    difference: float  # clemscore(a) - clemscore(b) on the shared instances
    low: float
    high: float
    episodes: int  # shared instances

    @property
    def excludes_zero(self) -> bool:
        return self.low > 0 or self.high < 0

    def as_dict(self) -> dict:
        return {"a": self.a, "b": self.b, "difference": self.difference, "ci": [self.low, self.high],
                "episodes": self.episodes}


def _clemscore(played: np.ndarray, quality: np.ndarray) -> np.ndarray:
    # (replicates, games) -> clemscore per replicate: macro average over games, as clemeval. A run that played
    # nothing has no quality (clemcore leaves its clemscore blank); its product with 0 % played is 0 here, so
    # that it can be compared
    average_played = _nanmean(played, axis=-1)
    score = average_played / 100.0 * _nanmean(quality, axis=-1)
    return np.where(average_played == 0, 0.0, score)


def paired_difference(a: pd.DataFrame, b: pd.DataFrame, *, names: tuple[str, str] = ("a", "b"),
                      n_resamples: int = 1000, seed: int = 0, level: float = 0.95) -> PairedDifference:
    """``a``, ``b``: one row per episode (columns game, experiment, episode, played, quality — ``per_episode``)."""
    shared = a[KEYS + ["played", "quality"]].merge(b[KEYS + ["played", "quality"]], on=KEYS, suffixes=("_a", "_b"))
    if shared.empty:
        nan = float("nan")
        return PairedDifference(*names, nan, nan, nan, 0)
    point_played, point_quality, replicate_played, replicate_quality = [], [], [], []
    for game, rows in shared.groupby("game", sort=True):
        played = rows[["played_a", "played_b"]].to_numpy(dtype=float) * 100.0
        quality = rows[["quality_a", "quality_b"]].to_numpy(dtype=float)
        stream = np.random.default_rng(np.random.SeedSequence([seed, zlib.crc32(str(game).encode())]))
        draws = stream.integers(0, len(rows), size=(n_resamples, len(rows)))
        point_played.append(_nanmean(played, axis=0))
        point_quality.append(_nanmean(quality, axis=0))
        replicate_played.append(_nanmean(played[draws], axis=1))  # (replicates, 2)
        replicate_quality.append(_nanmean(quality[draws], axis=1))
    point = _clemscore(np.stack(point_played, axis=-1), np.stack(point_quality, axis=-1))  # (2,)
    replicates = _clemscore(np.stack(replicate_played, axis=-1), np.stack(replicate_quality, axis=-1))
    interval = _percentiles(replicates[:, 0] - replicates[:, 1], level)
    return PairedDifference(names[0], names[1], float(point[0] - point[1]), interval.low, interval.high,
                            len(shared))


def paired_from_comparison(comparison: pd.DataFrame, pairs: list[tuple[str, str]], *, n_resamples: int = 1000,
                           seed: int = 0) -> list[PairedDifference]:
    """Paired differences between runs of a ``compare_runs`` table, named by its run labels."""
    from playprm.errors import UsageError

    differences = []
    for a, b in pairs:
        missing = [label for label in (a, b) if label not in comparison.index]
        if missing:
            raise UsageError(f"--paired: no run {', '.join(missing)}; runs: {', '.join(comparison.index)}")
        frames = [run_episodes(comparison.loc[label, "results dir"], comparison.loc[label, "model"])
                  for label in (a, b)]
        differences.append(paired_difference(*frames, names=(a, b), n_resamples=n_resamples, seed=seed))
    return differences


def run_episodes(results_dir, model: str | None = None) -> pd.DataFrame:
    """Per-episode rows of one run (a results dir with one model-pair folder, or ``model`` in it)."""
    from playprm.report.episodes import load_episode_scores, per_episode

    episodes = per_episode(load_episode_scores([results_dir]).frame)
    if model is not None:
        episodes = episodes[episodes["model"] == model]
    return episodes


def render_paired(differences: list[PairedDifference]) -> str:
    """A Markdown table of paired differences."""
    from playprm.report.render import number
    from playprm.tables import markdown_table

    rows = [[d.a, d.b, number(d.difference), f"[{number(d.low)}, {number(d.high)}]", str(d.episodes),
             "yes" if d.excludes_zero else "no"] for d in differences]
    return markdown_table(["A", "B", "clemscore A - B", "paired 95% CI", "shared episodes", "CI excludes 0"],
                          rows)
