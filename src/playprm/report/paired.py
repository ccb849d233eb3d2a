"""Paired comparisons: the clemscore difference of two runs over the same game instances, with a paired CI.

Which clemscore: where the runs have static tasks, Playpen's two numbers each get their own difference
(clemscore over the interactive games, statscore over the static tasks), and clemcore's all-games clemscore a
third row labelled as such; without static tasks the three are one number, clemcore's clemscore.

Two decoding modes evaluated on the same instances are not independent samples: an instance that is easy for
one is usually easy for the other. The paired bootstrap resamples *instances* (within each game, as the
unpaired intervals do), applies the same draw to both runs and recomputes clemscore(A) - clemscore(B) per
replicate; the interval is the 2.5th-97.5th percentile. Only instances both runs played enter (matched by game,
experiment and episode folder); how many is reported beside the difference. A run that played none of them to
the end has no clemscore (clemcore leaves it blank): its difference is blank ("no clemscore"), never paired as 0.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from playprm.errors import UsageError
from playprm.report.bootstrap import _nanmean, _percentiles
from playprm.report.clemscore import CLEMSCORE, INTERACTIVE, STATSCORE
from playprm.report.inputs import run_names

KEYS = ["game", "experiment", "episode"]
PLAYPEN_CLEMSCORE = "Playpen clemscore (interactive games)"
PLAYPEN_STATSCORE = "statscore (static tasks)"
ALL_GAMES = "clemcore clemscore (all games)"
NONE_STATIC = "clemscore (all games; none static)"


@dataclass(frozen=True)
class PairedDifference:
    a: str
    b: str
    difference: float  # clemscore(a) - clemscore(b) on the shared instances
    low: float
    high: float
    episodes: int  # shared instances
    score: str = NONE_STATIC  # which clemscore: PLAYPEN_CLEMSCORE, PLAYPEN_STATSCORE, ALL_GAMES or NONE_STATIC
    value_a: float = float("nan")  # the score of each whole run (the report's table), beside the paired difference
    value_b: float = float("nan")

    @property
    def excludes_zero(self) -> bool:
        return self.low > 0 or self.high < 0

    def as_dict(self) -> dict:
        return {"a": self.a, "b": self.b, "score": self.score, "a_score": self.value_a, "b_score": self.value_b,
                "difference": self.difference, "ci": [self.low, self.high], "episodes": self.episodes}


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
    if (_nanmean(np.stack(point_played, axis=-1), axis=-1) == 0).any():  # a run without a clemscore: no difference
        nan = float("nan")
        return PairedDifference(*names, nan, nan, nan, len(shared))
    point = _clemscore(np.stack(point_played, axis=-1), np.stack(point_quality, axis=-1))  # (2,)
    replicates = _clemscore(np.stack(replicate_played, axis=-1), np.stack(replicate_quality, axis=-1))
    interval = _percentiles(replicates[:, 0] - replicates[:, 1], level)
    return PairedDifference(names[0], names[1], float(point[0] - point[1]), interval.low, interval.high,
                            len(shared))


def resolve_run(comparison: pd.DataFrame, name: str) -> str:
    """The comparison's label of the run a user named (a label, the dir as typed or its folder name)."""
    name = name.rstrip("/")
    if name in comparison.index:
        return name
    runs_in_dir = comparison["results dir"].value_counts()
    matches = [label for label, row in comparison.iterrows()
               if name in run_names(row["results dir"], row["model"], int(runs_in_dir[row["results dir"]]))]
    if len(matches) == 1:
        return matches[0]
    why = "several runs" if matches else "no run"
    raise UsageError(f"--paired: {why} named {name!r}; runs: {', '.join(comparison.index)}")


def static_games(comparison: pd.DataFrame, *labels: str) -> set[str]:
    """The static tasks of the runs ``labels`` of a comparison (its ``static games`` column)."""
    return {game.strip() for label in labels for game in str(comparison.at[label, "static games"]).split(",")
            if game.strip() and game.strip() != "nan"}


def score_kinds(static: set[str], games: set[str]) -> list[tuple[str, str, set[str] | None]]:
    """``(label, comparison column, games or None for all)`` of each clemscore to pair: Playpen's clemscore and
    statscore, then clemcore's all-games clemscore, where ``games`` include a static one; else the one clemscore."""
    if not static & games:
        return [(NONE_STATIC, CLEMSCORE, None)]
    return [(PLAYPEN_CLEMSCORE, INTERACTIVE, games - static), (PLAYPEN_STATSCORE, STATSCORE, static & games),
            (ALL_GAMES, CLEMSCORE, None)]


def paired_scores(comparison: pd.DataFrame, a: str, b: str, *, n_resamples: int = 1000,
                  seed: int = 0) -> list[PairedDifference]:
    """The paired differences of runs ``a`` and ``b`` (labels of a ``compare_runs`` table), one per clemscore of
    ``score_kinds``, each with both runs' whole-run score from the table."""
    frames = run_frame(comparison, a), run_frame(comparison, b)
    games = set(frames[0]["game"]) | set(frames[1]["game"])
    differences = []
    for label, column, subset in score_kinds(static_games(comparison, a, b), games):
        kept = [frame if subset is None else frame[frame["game"].isin(subset)] for frame in frames]
        difference = paired_difference(*kept, names=(a, b), n_resamples=n_resamples, seed=seed)
        differences.append(replace(difference, score=label, value_a=float(comparison.at[a, column]),
                                   value_b=float(comparison.at[b, column])))
    return differences


def paired_from_comparison(comparison: pd.DataFrame, pairs: list[tuple[str, str]], *, n_resamples: int = 1000,
                           seed: int = 0) -> list[PairedDifference]:
    """The headline paired difference (Playpen's clemscore where runs have static tasks, else clemcore's) of each
    pair of runs of a ``compare_runs`` table, named as ``resolve_run`` reads names."""
    return [paired_scores(comparison, a, b, n_resamples=n_resamples, seed=seed)[0]
            for a, b in resolve_pairs(comparison, pairs)]


def resolve_pairs(comparison: pd.DataFrame, pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Every pair as the comparison's run labels (UsageError for a name that fits no run or several)."""
    return [(resolve_run(comparison, a), resolve_run(comparison, b)) for a, b in pairs]


def run_frame(comparison: pd.DataFrame, label: str) -> pd.DataFrame:
    """Per-episode rows of the run ``label`` of a comparison."""
    return run_episodes(comparison.loc[label, "results dir"], comparison.loc[label, "model"])


def run_episodes(results_dir, model: str | None = None) -> pd.DataFrame:
    """Per-episode rows of one run (a results dir with one model-pair folder, or ``model`` in it)."""
    from playprm.report.episodes import load_episode_scores, per_episode

    episodes = per_episode(load_episode_scores([results_dir]).frame)
    if model is not None:
        episodes = episodes[episodes["model"] == model]
    return episodes


def against_level(comparison: pd.DataFrame, a: str, levels: dict[str, float], *, label: str,
                  n_resamples: int = 1000, seed: int = 0) -> PairedDifference:
    """Run ``a``'s clemscore against a fixed quality per game (``levels``, e.g. a random guess's), on ``a``'s
    episodes of those games: the paired bootstrap against a constant run that played each of them at its game's
    level, so the interval is ``a``'s own resampling, drawn as every paired row's is; named ``(a, label)``."""
    frame = run_frame(comparison, a)
    frame = frame[frame["game"].isin(levels)]
    constant = frame[KEYS].copy()
    constant["played"], constant["quality"] = 1.0, constant["game"].map(levels).astype(float)
    difference = paired_difference(frame, constant, names=(a, label), n_resamples=n_resamples, seed=seed)
    level = float(np.mean(list(levels.values())))  # clemscore of the constant run: the games' macro average
    return replace(difference, value_a=difference.difference + level, value_b=level)


def render_paired(differences: list[PairedDifference]) -> str:
    """A Markdown table of paired differences: which clemscore, each whole run's score, A - B on the shared
    instances with its paired CI."""
    from playprm.report.render import number
    from playprm.tables import markdown_table

    rows = []
    for d in differences:
        blank = not d.episodes or math.isnan(d.difference)
        rows.append([d.a, d.b, d.score, number(d.value_a), number(d.value_b),
                     "no shared instance" if not d.episodes else _no_clemscore(d) if blank else number(d.difference),
                     "" if blank else f"[{number(d.low)}, {number(d.high)}]", str(d.episodes),
                     "" if blank else "yes" if d.excludes_zero else "no"])
    return markdown_table(["A", "B", "score", "A (whole run)", "B (whole run)", "A - B (shared instances)",
                           "paired 95% CI", "shared episodes", "CI excludes 0"], rows)


def _no_clemscore(d: PairedDifference) -> str:
    # which run has no clemscore: the one that played no shared instance to the end
    blank = [name for name, value in ((d.a, d.value_a), (d.b, d.value_b)) if math.isnan(value)]
    return f"no clemscore ({' and '.join(blank)}: no episode played to the end)" if blank else "no clemscore"
