"""Join shard results dirs (e.g. one per SLURM array task) into one clemcore results dir.

Episode folders (``<model>/<game>/<experiment>/<episode>/``) are copied file by file, atomically. The
same episode in two shards is skipped (and counted) when both copies hold the same files with the same
bytes, and is an error otherwise. Files above the episodes (``run.json``, ``experiment.json``, ...) are
taken from the first shard that has them, except that ``playprm_run.json`` must agree on the decoding
mode: merging a greedy and a best-of-n shard would blend two numbers into one. Files at a shard's top
level (``results.csv``, ``raw.csv``: stale reports) and dot-files (unfinished temporaries) are not copied.
Everything is checked before the first file is written, and rerunning into the same OUT copies nothing
new.
"""

from __future__ import annotations

import filecmp
from dataclasses import dataclass, field
from pathlib import Path

from playprm.errors import UsageError
from playprm.report.atomic import copy_atomic
from playprm.report.run_metadata import MODE_FIELDS, RUN_METADATA_FILE, read_run_metadata

EPISODE_DEPTH = 4  # model / game / experiment / episode


@dataclass
class MergeSummary:
    """What a merge did: episodes and files copied, duplicates skipped, metadata kept from the first shard."""

    episodes: int = 0
    files_copied: int = 0
    duplicate_episodes: int = 0
    already_present: int = 0
    differing_metadata: list[Path] = field(default_factory=list)

    def line(self, out: Path) -> str:
        """One summary line for the terminal."""
        text = (
            f"merged into {out}: {self.episodes} episode(s), {self.files_copied} file(s) copied, "
            f"{self.duplicate_episodes} identical duplicate episode(s) skipped"
        )
        if self.already_present:
            text += f", {self.already_present} file(s) already in place"
        if self.differing_metadata:
            text += f"; kept the first shard's copy of {len(self.differing_metadata)} differing metadata file(s)"
        return text


def _shard_files(shard: Path) -> list[Path]:
    files = []
    for path in sorted(shard.rglob("*")):
        relative = path.relative_to(shard)
        if not path.is_file() or any(part.startswith(".") for part in relative.parts):
            continue
        if len(relative.parts) == 1:
            continue  # a report written into the shard root, recomputed from the merged episodes
        files.append(relative)
    return files


def _is_inside(path: Path, folder: Path) -> bool:
    path, folder = path.resolve(), folder.resolve()
    return path == folder or folder in path.parents


def _validate(shards: list[Path], out: Path) -> list[Path]:
    if not shards:
        raise UsageError("no shard given; pass --results-dir A B ... (the shard results dirs)")
    checked = []
    for shard in map(Path, shards):
        if not shard.is_dir():
            raise UsageError(f"shard {shard} is not an existing folder; pass the results dirs the shards wrote")
        if any(shard.resolve() == other.resolve() for other in checked):
            raise UsageError(f"shard {shard} is given twice; pass each shard once")
        if _is_inside(out, shard) or _is_inside(shard, out):
            raise UsageError(f"--out {out} overlaps shard {shard}; choose an output folder outside the shards")
        checked.append(shard)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} exists and is not a folder; choose another path")
    return checked


def _mode(path: Path) -> dict:
    metadata = read_run_metadata(path)
    return {name: metadata.get(name) for name in MODE_FIELDS}


def _plan(shards: list[Path], summary: MergeSummary) -> dict[Path, Path]:
    """{relative target: source file}, after checking every duplicate; raises UsageError on conflicts."""
    plan: dict[Path, Path] = {}
    episode_owner: dict[tuple[str, ...], tuple[Path, list[Path]]] = {}
    for shard in shards:
        files = _shard_files(shard)
        episodes: dict[tuple[str, ...], list[Path]] = {}
        for relative in files:
            if len(relative.parts) > EPISODE_DEPTH:
                episodes.setdefault(relative.parts[:EPISODE_DEPTH], []).append(relative)
            else:
                _plan_metadata(shard, relative, plan, summary)
        for key, relatives in episodes.items():
            if key not in episode_owner:
                episode_owner[key] = (shard, relatives)
                for relative in relatives:
                    plan[relative] = shard / relative
                continue
            first, first_files = episode_owner[key]
            same = sorted(first_files) == sorted(relatives) and all(
                filecmp.cmp(first / r, shard / r, shallow=False) for r in relatives
            )
            if not same:
                raise UsageError(
                    f"episode {'/'.join(key)} differs between shards {first} and {shard}; shards must not "
                    "overlap: remove one copy (or rerun that shard) and merge again"
                )
            summary.duplicate_episodes += 1
    summary.episodes = len(episode_owner)
    return plan


def _plan_metadata(shard: Path, relative: Path, plan: dict[Path, Path], summary: MergeSummary) -> None:
    source = shard / relative
    if relative not in plan:
        plan[relative] = source
        return
    if filecmp.cmp(plan[relative], source, shallow=False):
        return
    if relative.name == RUN_METADATA_FILE and _mode(plan[relative]) != _mode(source):
        raise UsageError(
            f"{plan[relative]} and {source} record different decoding modes "
            f"({_mode(plan[relative])} vs {_mode(source)}); merge only shards of one run"
        )
    summary.differing_metadata.append(relative)


def merge_shards(shards: list[Path], out: Path) -> MergeSummary:
    """Copy the episodes of every shard into ``out`` (one results dir); see the module docstring.

    Raises UsageError, before writing anything, for a missing shard, overlapping paths, conflicting
    episodes, shards of different decoding modes, no episode at all, or files in ``out`` that differ.
    """
    out = Path(out)
    checked = _validate(list(shards), out)
    summary = MergeSummary()
    plan = _plan(checked, summary)
    if not summary.episodes:
        raise UsageError(
            f"no episode folder (<model>/<game>/<experiment>/<episode>/) in {', '.join(map(str, checked))}; "
            "pass the results dirs the shards wrote"
        )
    to_copy = []
    for relative, source in plan.items():
        target = out / relative
        if not target.exists():
            to_copy.append((source, target))
        elif target.is_file() and filecmp.cmp(source, target, shallow=False):
            summary.already_present += 1
        elif len(relative.parts) > EPISODE_DEPTH:
            raise UsageError(f"{target} already exists with other content; merge into an empty --out")
        else:
            summary.differing_metadata.append(relative)
    for source, target in to_copy:
        copy_atomic(source, target)
    summary.files_copied = len(to_copy)
    return summary
