"""Join shard results dirs (e.g. one per SLURM array task) into one clemcore results dir.

Episode folders (``<model>/<game>/<experiment>/<episode>/``) are copied whole and atomically: every file goes
into a staging folder beside the target (``.<episode>.staging-<pid>``, as eval writes them), which is then
renamed into place, so a killed merge leaves each episode complete or absent, and a rerun finishes the job.
An episode in OUT that holds only part of a shard's files (left by a merge killed before merges were atomic)
is unfinished and replaced. The same episode in two shards is skipped (and counted) when both copies hold the
same files with the same bytes, and is an error otherwise. Files above the episodes (``run.json``,
``experiment.json``, ...) are taken from the first shard that has them, except that ``playprm_run.json``
must carry one run's fingerprint (model, decoding settings, PRM, game instances): merging a greedy and a
best-of-n shard, or shards run with another ``--max-tokens``, would blend two numbers into one. Files at a
shard's top level (``results.csv``, ``raw.csv``: stale reports) and dot-files (unfinished temporaries) are
not copied. Everything is checked before the first file is written, and rerunning into the same OUT copies
nothing new.
"""

from __future__ import annotations

import filecmp
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from playprm.atomic import copy_atomic
from playprm.errors import UsageError
from playprm.results.layout import EPISODE_DEPTH, RUN_METADATA_FILE, result_files
from playprm.results.run_record import RunRecord, fingerprint_differences
from playprm.results.staging import clean_staging, publish, staging_folder


@dataclass
class MergeSummary:
    """What a merge did: episodes and files copied, duplicates skipped, metadata kept from the first shard."""

    episodes: int = 0
    files_copied: int = 0
    duplicate_episodes: int = 0
    already_present: int = 0
    differing_metadata: list[Path] = field(default_factory=list)
    unfinished_replaced: int = 0

    def line(self, out: Path) -> str:
        """One summary line for the terminal."""
        text = (
            f"merged into {out}: {self.episodes} episode(s), {self.files_copied} file(s) copied, "
            f"{self.duplicate_episodes} identical duplicate episode(s) skipped"
        )
        if self.already_present:
            text += f", {self.already_present} file(s) already in place"
        if self.unfinished_replaced:
            text += f", {self.unfinished_replaced} unfinished episode(s) in {out} replaced"
        if self.differing_metadata:
            text += f"; kept the first shard's copy of {len(self.differing_metadata)} differing metadata file(s)"
        return text


def _files(root: Path, folder: Path) -> list[Path]:
    """Every file under ``folder``, relative to ``root``, sorted; files under dot-folders and dot-files skipped."""
    return [path.relative_to(root) for path in result_files(folder)]


def _shard_files(shard: Path) -> list[Path]:
    # a file at the shard root is a report written into it, recomputed from the merged episodes
    return [relative for relative in _files(shard, shard) if len(relative.parts) > 1]


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


def _check_one_run(first: Path, other: Path) -> None:
    """UsageError when two ``playprm_run.json`` files carry fingerprints of different runs."""
    differences = fingerprint_differences(RunRecord.read(first).fingerprint, RunRecord.read(other).fingerprint)
    if differences:
        raise UsageError(f"{first} and {other} record different decoding modes or settings "
                         f"({'; '.join(differences)}); merge only shards of one run")


Episodes = dict[tuple[str, ...], tuple[Path, list[Path]]]  # episode key -> (shard, its files relative to the shard)


def _plan(shards: list[Path], summary: MergeSummary) -> tuple[dict[Path, Path], Episodes]:
    """Metadata files ``{relative target: source}`` and episodes to merge, after checking every duplicate;
    raises UsageError on conflicts."""
    metadata: dict[Path, Path] = {}
    episode_owner: Episodes = {}
    for shard in shards:
        episodes: dict[tuple[str, ...], list[Path]] = {}
        for relative in _shard_files(shard):
            if len(relative.parts) > EPISODE_DEPTH:
                episodes.setdefault(relative.parts[:EPISODE_DEPTH], []).append(relative)
            else:
                _plan_metadata(shard, relative, metadata, summary)
        for key, relatives in episodes.items():
            if key not in episode_owner:
                episode_owner[key] = (shard, relatives)
                continue
            first, first_files = episode_owner[key]
            if not _same_files(first, shard, first_files, relatives):
                raise UsageError(
                    f"episode {'/'.join(key)} differs between shards {first} and {shard}; shards must not "
                    "overlap: remove one copy (or rerun that shard) and merge again"
                )
            summary.duplicate_episodes += 1
    summary.episodes = len(episode_owner)
    return metadata, episode_owner


def _same_files(first: Path, second: Path, first_files: list[Path], second_files: list[Path]) -> bool:
    return sorted(first_files) == sorted(second_files) and all(
        filecmp.cmp(first / r, second / r, shallow=False) for r in first_files
    )


def _plan_metadata(shard: Path, relative: Path, plan: dict[Path, Path], summary: MergeSummary) -> None:
    source = shard / relative
    if relative not in plan:
        plan[relative] = source
        return
    if filecmp.cmp(plan[relative], source, shallow=False):
        return
    if relative.name == RUN_METADATA_FILE:
        _check_one_run(plan[relative], source)
    summary.differing_metadata.append(relative)


def _needs_copy(out: Path, shard: Path, files: list[Path], summary: MergeSummary) -> bool:
    """Whether an episode must be copied into ``out``: not when an identical copy is there; yes when none is,
    or when the copy there is unfinished (some of the files, the same bytes). UsageError for other content."""
    target = out.joinpath(*files[0].parts[:EPISODE_DEPTH])
    if not target.exists():
        return True
    present = _files(out, target)
    if set(present) <= set(files) and all(filecmp.cmp(shard / r, out / r, shallow=False) for r in present):
        if len(present) == len(files):
            summary.already_present += len(files)
            return False
        summary.unfinished_replaced += 1
        return True
    raise UsageError(f"{target} already exists with other content; merge into an empty --out")


def after_file_copied(path: Path) -> None:
    """Called after each file copied into an episode's staging folder: the point where tests kill a merge."""


def _copy_episode(shard: Path, files: list[Path], out: Path) -> None:
    """Copy one episode's files (relative to ``shard``) into ``out`` through a staging folder, in one rename."""
    key = files[0].parts[:EPISODE_DEPTH]
    target = out.joinpath(*key)
    staging = staging_folder(target)
    shutil.rmtree(staging, ignore_errors=True)
    try:
        for relative in files:
            inside = staging.joinpath(*relative.parts[EPISODE_DEPTH:])
            inside.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(shard / relative, inside)
            after_file_copied(inside)
        publish(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def merge_shards(shards: list[Path], out: Path) -> MergeSummary:
    """Copy the episodes of every shard into ``out`` (one results dir); see the module docstring.

    Raises UsageError, before writing anything, for a missing shard, overlapping paths, conflicting
    episodes, shards of different runs (fingerprints), no episode at all, or files in ``out`` that differ.
    """
    out = Path(out)
    checked = _validate(list(shards), out)
    summary = MergeSummary()
    metadata, episodes = _plan(checked, summary)
    if not summary.episodes:
        raise UsageError(
            f"no episode folder (<model>/<game>/<experiment>/<episode>/) in {', '.join(map(str, checked))}; "
            "pass the results dirs the shards wrote"
        )
    to_copy = []
    for relative, source in metadata.items():
        target = out / relative
        if not target.exists():
            to_copy.append((source, target))
        elif target.is_file() and filecmp.cmp(source, target, shallow=False):
            summary.already_present += 1
        else:
            if relative.name == RUN_METADATA_FILE and target.is_file():
                _check_one_run(target, source)  # a previous merge of another run
            summary.differing_metadata.append(relative)
    to_merge = [(shard, files) for shard, files in episodes.values() if _needs_copy(out, shard, files, summary)]
    clean_staging(out)  # staging folders of merges killed before (their process is gone)
    for source, target in to_copy:
        copy_atomic(source, target)
    for shard, files in to_merge:
        _copy_episode(shard, files, out)
    summary.files_copied = len(to_copy) + sum(len(files) for _, files in to_merge)
    return summary
