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
from pathlib import Path

import numpy as np
import pandas as pd

from playprm.errors import UsageError
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


def _names(results_dir: str, model: str, runs_in_dir: int) -> set[str]:
    # what a user may type for a run: the dir as given or resolved, its folder name, and with the model folder
    path = Path(results_dir)
    names = {f"{base}/{model}" for base in (results_dir, path.name, str(path.resolve()))}
    if runs_in_dir == 1:
        names |= {results_dir, path.name, str(path.resolve())}
    return names


def check_paired_labels(inputs: list[Path], pairs: list[tuple[str, str]]) -> None:
    """UsageError, before anything is read or written, for a ``--paired`` name that names none of ``inputs``:
    each must be an input dir (as typed, or its folder name), or ``<dir>/<model-pair folder>`` inside one."""
    known: set[str] = set()
    for results_dir in inputs:
        children = [c.name for c in Path(results_dir).iterdir() if c.is_dir() and not c.name.startswith(".")]
        known |= _names(str(results_dir), "", 1)
        for child in children:
            known |= _names(str(results_dir), child, 2)
    unknown = [name for pair in pairs for name in pair if name.rstrip("/") not in known]
    if unknown:
        offered = ", ".join(Path(str(d)).name for d in inputs)
        raise UsageError(f"--paired: {unknown[0]!r} is none of the --compare dirs; name a run by its folder "
                         f"({offered}) or as <folder>/<model-pair folder>")


def resolve_run(comparison: pd.DataFrame, name: str) -> str:
    """The comparison's label of the run a user named (a label, the dir as typed or its folder name)."""
    name = name.rstrip("/")
    if name in comparison.index:
        return name
    runs_in_dir = comparison["results dir"].value_counts()
    matches = [label for label, row in comparison.iterrows()
               if name in _names(row["results dir"], row["model"], int(runs_in_dir[row["results dir"]]))]
    if len(matches) == 1:
        return matches[0]
    why = "several runs" if matches else "no run"
    raise UsageError(f"--paired: {why} named {name!r}; runs: {', '.join(comparison.index)}")


def paired_from_comparison(comparison: pd.DataFrame, pairs: list[tuple[str, str]], *, n_resamples: int = 1000,
                           seed: int = 0) -> list[PairedDifference]:
    """Paired differences between runs of a ``compare_runs`` table, named as ``resolve_run`` reads names."""
    differences = []
    for a, b in resolve_pairs(comparison, pairs):
        frames = [run_frame(comparison, label) for label in (a, b)]
        differences.append(paired_difference(*frames, names=(a, b), n_resamples=n_resamples, seed=seed))
    return differences


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


def render_paired(differences: list[PairedDifference]) -> str:
    """A Markdown table of paired differences."""
    from playprm.report.render import number
    from playprm.tables import markdown_table

    rows = [[d.a, d.b, number(d.difference), f"[{number(d.low)}, {number(d.high)}]", str(d.episodes),
             "yes" if d.excludes_zero else "no"] for d in differences]
    return markdown_table(["A", "B", "clemscore A - B", "paired 95% CI", "shared episodes", "CI excludes 0"],
                          rows)
