"""clemcore's results layout, as playprm writes and reads it: every file and folder name, the staging rule and
the one walker.

``<results>/<model-pair>/<game>/<experiment>/<episode>/``. The model-pair folder holds clemcore's ``run.json``
(and playprm's ``playprm_run.json``, collect's ``turns.jsonl``), each experiment folder ``experiment.json``,
each episode folder the files below. Folders whose name starts with a dot are not results: staging copies of
episodes being written (``.<episode>.staging-<pid>``, see ``results.staging``), collect's per-tree records,
the run lock. Every reader skips them.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterator
from pathlib import Path

# an episode folder: clemcore's files, then playprm's beside them
INSTANCE_FILE = "instance.json"
INTERACTIONS_FILE = "interactions.json"
SCORES_FILE = "scores.json"  # written by scoring (`clem score`, or the runner at the end of an episode)
COMPLETED_FILE = "completed.json"
ERROR_FILE = "error.json"  # instead of completed.json (and interactions.json) when the episode failed
REQUESTS_SUFFIX = ".requests.json"  # per player: player_1.requests.json
COST_FILE = "cost.json"  # playprm: tokens generated and scored, seconds
CANDIDATES_FILE = "candidates.jsonl"  # playprm: each guided turn's candidates and scores
# what a finished episode folder holds (requests files only for players that spoke); anything less is unfinished
PLAYED_FILES = (INSTANCE_FILE, INTERACTIONS_FILE, SCORES_FILE, COMPLETED_FILE, COST_FILE, CANDIDATES_FILE)
ERRORED_FILES = (INSTANCE_FILE, ERROR_FILE, COST_FILE, CANDIDATES_FILE)

# above the episodes
RUN_FILE = "run.json"  # clemcore's, in the model-pair folder
RUN_METADATA_FILE = "playprm_run.json"  # playprm's: decoding mode, settings, fingerprint
EXPERIMENT_FILE = "experiment.json"
TURNS_FILE = "turns.jsonl"  # collect's rollout trees, in the model-pair folder
TREES_DIR = ".trees"  # collect's per-tree records, from which turns.jsonl is rebuilt

EPISODE_DEPTH = 4  # model-pair / game / experiment / episode
# instance_00000 (clemcore), episode_3 (clembench v2.0), episode_00003_s01_l002 (collect's samples and
# leaves), branch_00001 (clemcore's branching runner, nested in an instance folder)
EPISODE_FOLDER = re.compile(r"(instance|episode|branch)_[0-9A-Za-z][\w.-]*")


def instance_key(game: str, experiment: str, game_id: object) -> tuple[str, str, str]:
    """The key of one game instance, ``(game, experiment, game_id)``: episodes and dataset records sharing it are
    samples of that instance (and stay on one side of every split)."""
    return game, experiment, str(game_id)


def instance_folder(game_id: object) -> str:
    """clemcore 3.7.2's episode folder name for a game instance: ``instance_00007`` (or ``instance_<id>``)."""
    return f"instance_{game_id:05d}" if isinstance(game_id, int) and not isinstance(game_id, bool) \
        else f"instance_{game_id}"


def sample_folder(instance: dict, sample: int) -> str:
    """collect's episode folder for repeated samples of one instance: ``episode_00007_s01``."""
    game_id = instance.get("game_id")
    number = f"{game_id:05d}" if isinstance(game_id, int) else str(game_id)
    return f"episode_{number}_s{sample:02d}"


def requests_file(player_name: str) -> str:
    """clemcore's requests file of a player: "Player 1" -> ``player_1.requests.json``."""
    return "_".join(player_name.lower().split()) + REQUESTS_SUFFIX


def is_finished(episode_dir: Path) -> bool:
    """Resume marker: every file of a played (or errored) episode is there."""
    names = ERRORED_FILES if (episode_dir / ERROR_FILE).is_file() else PLAYED_FILES
    return all((episode_dir / name).is_file() for name in names)


def is_hidden(path: Path, root: Path) -> bool:
    """Whether ``path`` lies in a dot-folder under ``root`` or is a dot-file: staging, not results."""
    return any(part.startswith(".") for part in Path(path).relative_to(root).parts)


def walk_results(root: Path, *, hidden: bool = False) -> Iterator[tuple[Path, list[str], list[str]]]:
    """``os.walk`` of a results folder that follows symlinked folders (a model folder linked in from elsewhere
    is part of the results) and enters each real folder once, so symlink loops end; dot-folders only with
    ``hidden``. Callers may prune ``dirs`` in place, as with ``os.walk``; ``dirs`` come sorted."""
    seen: set[tuple[int, int]] = set()
    for folder, dirs, files in os.walk(root, followlinks=True):
        try:
            status = os.stat(folder)
        except OSError:  # a dangling link
            dirs[:] = []
            continue
        if (status.st_dev, status.st_ino) in seen:
            dirs[:] = []
            continue
        seen.add((status.st_dev, status.st_ino))
        dirs[:] = sorted(name for name in dirs if hidden or not name.startswith("."))
        yield Path(folder), dirs, files


def result_files(root: Path, pattern: str = "*", *, hidden: bool = False) -> list[Path]:
    """Files named like ``pattern`` under ``root``, sorted, symlinked folders followed (each real folder once);
    those in dot-folders and dot-files only with ``hidden``."""
    found = []
    for folder, _, files in walk_results(Path(root), hidden=hidden):
        found += [folder / name for name in files if fnmatch.fnmatch(name, pattern)
                  and (hidden or not name.startswith("."))]
    return sorted(found)
