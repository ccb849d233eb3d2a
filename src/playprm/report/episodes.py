"""Read episode scores from one or more clemcore results dirs, the way clemcore's ``clemeval`` reads them.

Layout: ``<results>/<model-pair>/<game>/<experiment>/<episode>/scores.json`` where ``<episode>`` is
``instance_00000`` (clemcore 3.7.2), ``episode_3`` (older clembench records) or ``episode_00001``. Like
``clemeval.load_scores`` every file matching ``*scores.json`` counts, and the four folder names above the
file name the episode. Unlike clemeval, a broken file is counted and reported instead of stopping the
report, files under dot-folders (the runner's unfinished staging folders) are skipped, several dirs (SLURM
shards) are read as one, and episodes that stopped with an ``error.json`` but no scores are counted apart.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from clemcore.clemgame import metrics as clemmetrics

from playprm.errors import UsageError
from playprm.report.inputs import check_folder
from playprm.results import episode_scores_oddities, episode_scores_problem, read_json
from playprm.results.layout import ERROR_FILE, is_hidden, result_files

# (model, game, experiment, episode): the key clemeval gives every scores.json
EpisodeKey = tuple[str, str, str, str]

# the columns of clemeval's raw episode-scores frame, in its order
EPISODE_COLUMNS = ["game", "model", "experiment", "episode", "metric", "value"]


@dataclass
class EpisodeScores:
    """Everything read from the results dirs.

    ``frame``: clemeval's long frame (``EPISODE_COLUMNS``), ``Played = 1 - Aborted`` rows included.
    ``episode_dirs``: the folder of each scored episode (where ``cost.json`` sits).
    ``model_dirs``: every ``<model-pair>`` folder seen per model name (one per shard).
    ``errored``: episodes with an ``error.json`` and no scores, per (model, game); ``errored_episodes``
    their keys; ``errored_as_aborted``: whether they were added to ``frame`` as aborted episodes.
    ``unreadable``: (file, reason) for each scores.json that could not be used.
    ``unusual``: (file, note) for each scores.json counted although a value is out of its usual range (a
    negative eqbench Main Score): clemcore counts them, and so does the report.
    ``duplicates``: identical copies of an already read episode that were skipped.
    ``hidden``: scores.json files under dot-folders (the runner's staging folders) that were skipped.
    """

    frame: pd.DataFrame
    episode_dirs: dict[EpisodeKey, Path] = field(default_factory=dict)
    model_dirs: dict[str, list[Path]] = field(default_factory=dict)
    errored: dict[tuple[str, str], int] = field(default_factory=dict)
    errored_episodes: list[EpisodeKey] = field(default_factory=list)
    errored_as_aborted: bool = False
    unreadable: list[tuple[Path, str]] = field(default_factory=list)
    unusual: list[tuple[Path, str]] = field(default_factory=list)
    duplicates: int = 0
    hidden: int = 0

    def unreadable_counts(self) -> dict[tuple[str, str], int]:
        """Unreadable scores.json files per (model, game), from their folder names (files outside the layout
        are left out here; ``summary_lines`` counts every one)."""
        counts: dict[tuple[str, str], int] = {}
        for path, _ in self.unreadable:
            key = _episode_key(path)
            if key is not None:
                counts[key[:2]] = counts.get(key[:2], 0) + 1
        return counts

    def summary_lines(self) -> list[str]:
        """One line per thing a reader of the numbers should know (skipped files, errored episodes)."""
        lines = []
        if self.unreadable:
            first, reason = self.unreadable[0]
            lines.append(
                f"warning: {len(self.unreadable)} episode(s) left out: their scores.json holds no countable scores "
                f"(clemcore could not count them either; the unreadable column counts them; first: {first}: "
                f"{reason})"
            )
        if self.unusual:
            first, note = self.unusual[0]
            lines.append(
                f"{len(self.unusual)} episode(s) with a score out of its usual range, counted as clemcore counts "
                f"them (first: {first}: {note})"
            )
        if self.hidden:
            lines.append(f"{self.hidden} scores.json file(s) in hidden (staging) folders skipped")
        if self.duplicates:
            lines.append(f"{self.duplicates} identical duplicate episode(s) skipped")
        if self.errored:
            total = sum(self.errored.values())
            if self.errored_as_aborted:
                lines.append(f"{total} errored episode(s) (error.json, no scores.json) scored as aborted")
            else:
                lines.append(f"warning: {total} of {total + len(self.episode_dirs)} episode(s) errored (error.json, "
                             f"no scores.json) and are left out of the scores, as clemcore does; pass "
                             f"--errored-as-aborted to score them as aborted")
        return lines


def validate_results_dirs(results_dirs: list[Path]) -> list[Path]:
    """Return the dirs as Paths, or raise UsageError for the first one that is missing or not a folder."""
    if not results_dirs:
        raise UsageError("no results dir given; pass --results-dir DIR (a clemcore results folder)")
    return [check_folder(results_dir) for results_dir in results_dirs]


def _episode_key(scores_file: Path) -> EpisodeKey | None:
    # clemeval names an episode by the four folders above the file, read from the path it globbed
    parts = scores_file.parts
    if len(parts) < 5:
        return None
    model, game, experiment, episode = parts[-5:-1]
    return model, game, experiment, episode


def _read_episode_scores(scores_file: Path) -> tuple[dict | None, str]:
    # Python's json accepts the bare NaN that clemcore writes for aborted episodes' Main Score
    data, reason = read_json(scores_file)
    if reason:
        return None, reason
    if not isinstance(data, dict):
        return None, "no 'episode scores' object"
    problem = episode_scores_problem(data)  # a string or Infinity would break clemscore
    return (None, problem) if problem else (data, "")


def _canonical(data: dict) -> str:
    # NaN != NaN, so compare scores by their JSON text (json.dumps writes NaN as NaN)
    return json.dumps(data, sort_keys=True)


def load_episode_scores(results_dirs: list[Path]) -> EpisodeScores:
    """Read every ``*scores.json`` (and ``error.json``) under ``results_dirs`` into an EpisodeScores.

    Raises UsageError for a missing dir, for no readable scores.json at all, for one episode whose copies
    in two dirs disagree, and for scores that carry clemcore's computed ``Played`` metric themselves.
    """
    roots = validate_results_dirs(results_dirs)
    rows: list[list] = []
    seen: dict[EpisodeKey, tuple[Path, str]] = {}
    result = EpisodeScores(frame=pd.DataFrame(columns=EPISODE_COLUMNS))
    found_any = False
    for root in roots:
        for scores_file in result_files(root, "*scores.json", hidden=True):
            if not scores_file.is_file():
                continue
            if is_hidden(scores_file, root):
                result.hidden += 1  # an unfinished episode's staging folder, not an episode yet
                continue
            found_any = True
            key = _episode_key(scores_file)
            if key is None:
                result.unreadable.append((scores_file, "not inside <model>/<game>/<experiment>/<episode>/"))
                continue
            data, reason = _read_episode_scores(scores_file)
            if data is None:
                result.unreadable.append((scores_file, reason))
                continue
            canonical = _canonical(data["episode scores"])
            if key in seen:
                first_file, first_canonical = seen[key]
                if canonical != first_canonical:
                    raise UsageError(
                        f"episode {'/'.join(key)} has different scores in {first_file} and {scores_file}; "
                        "keep one copy (shards must not overlap) and rerun"
                    )
                result.duplicates += 1
                continue
            seen[key] = (scores_file, canonical)
            oddities = episode_scores_oddities(data)
            if oddities:
                result.unusual.append((scores_file, "; ".join(oddities)))
            result.episode_dirs[key] = scores_file.parent
            model_dir = scores_file.parents[3]
            result.model_dirs.setdefault(key[0], [])
            if model_dir not in result.model_dirs[key[0]]:
                result.model_dirs[key[0]].append(model_dir)
            model, game, experiment, episode = key
            for metric, value in data["episode scores"].items():
                rows.append([game, model, experiment, episode, metric, value])
        _count_errored(root, result)
    if not found_any and not result.errored:
        raise UsageError(
            f"no scores.json under {', '.join(str(r) for r in roots)}; score the episodes first "
            "(`clem score -r DIR`) or pass the folder that holds <model>/<game>/<experiment>/<episode>/"
        )
    if not seen:
        detail = f"; first: {result.unreadable[0][0]}: {result.unreadable[0][1]}" if result.unreadable else ""
        raise UsageError(
            f"no readable scores.json under {', '.join(str(r) for r in roots)} "
            f"({len(result.unreadable)} unreadable{detail}); fix or rescore those episodes"
        )
    result.frame = _with_played(pd.DataFrame(rows, columns=EPISODE_COLUMNS))
    return result


def _count_errored(root: Path, result: EpisodeScores) -> None:
    for error_file in result_files(root, ERROR_FILE):
        episode_dir = error_file.parent
        if any(episode_dir.glob("*scores.json")):
            continue  # scored despite an error record: clemcore scores it, so do we
        key = _episode_key(error_file)
        if key is None:
            continue
        model, game = key[0], key[1]
        result.errored[(model, game)] = result.errored.get((model, game), 0) + 1
        result.errored_episodes.append(key)
        model_dir = error_file.parents[3]
        result.model_dirs.setdefault(model, [])
        if model_dir not in result.model_dirs[model]:
            result.model_dirs[model].append(model_dir)


def _with_played(frame: pd.DataFrame) -> pd.DataFrame:
    # clemeval computes Played itself and refuses scores that already carry it
    if (frame["metric"] == clemmetrics.METRIC_PLAYED).any():
        raise UsageError(
            f"some scores.json already hold a '{clemmetrics.METRIC_PLAYED}' episode score; clemcore computes "
            f"it as 1 - {clemmetrics.METRIC_ABORTED}, so remove it from the game's scorer and rescore"
        )
    played = frame[frame["metric"] == clemmetrics.METRIC_ABORTED].copy()
    played["metric"] = clemmetrics.METRIC_PLAYED
    played["value"] = 1 - pd.to_numeric(played["value"], errors="coerce")
    return pd.concat([frame, played], ignore_index=True)


def per_episode(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per episode: model, game, experiment, episode, ``played`` (0/1) and ``quality`` (Main Score).

    Missing or non-numeric values are NaN, so NaN-skipping means match clemeval's pandas means.
    """
    wanted = frame[frame["metric"].isin([clemmetrics.METRIC_PLAYED, clemmetrics.BENCH_SCORE])].copy()
    wanted["value"] = pd.to_numeric(wanted["value"], errors="coerce").astype(float)
    keys = ["model", "game", "experiment", "episode"]
    table = wanted.groupby([*keys, "metric"])["value"].first().unstack("metric")
    table = table.reindex(columns=[clemmetrics.METRIC_PLAYED, clemmetrics.BENCH_SCORE])
    table.columns = ["played", "quality"]
    return table.reset_index()

