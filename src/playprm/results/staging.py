"""Staging folders: a folder is written beside its final place as ``.<name>.staging-<pid>``, then renamed
into place in one step, so it exists complete or not at all. Episodes (eval, collect) and merged episodes
(merge) are written this way; every reader skips dot-folders.

A process killed mid-write leaves its staging folder behind. It is stale once that process is gone, or when
the folder is not this process's own while this process holds the run folder's lock; only stale ones are
removed, so a live run's half-written episode is never touched.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path


def staging_folder(final: Path) -> Path:
    """Where this process stages ``final`` before renaming it into place: ``.<name>.staging-<pid>`` beside it."""
    return final.parent / f".{final.name}.staging-{os.getpid()}"


def publish(staging: Path, final: Path) -> Path:
    """Rename a completely written staging folder onto ``final`` in one step (replacing an unfinished folder)."""
    if final.exists():  # unfinished: an older layout, or a copy from a merge killed before this one
        shutil.rmtree(final)
    os.replace(staging, final)
    return final


def _staging_pid(path: Path) -> int | None:
    suffix = path.name.rpartition(".staging-")[2]
    return int(suffix) if suffix.isdigit() else None


def is_alive(pid: int) -> bool:
    """Whether a process with this id runs on this machine."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it runs, as another user
        return True
    return True


def clean_staging(root: Path, *, locked: bool = False) -> int:
    """Remove stale staging folders (left by killed runs) under ``root``; returns how many.

    Stale: its process (the pid in its name) is gone, or, when this process holds the run folder's lock
    (``locked``), it is not this process's own. A live run's staging folder is never touched.
    """
    removed = 0
    if not root.is_dir():
        return 0
    for path in root.rglob(".*.staging-*"):
        pid = _staging_pid(path)
        stale = pid is None or not is_alive(pid) or (locked and pid != os.getpid())
        # rglob may follow a symlinked folder out of the run: remove only what lies inside it
        if stale and path.is_dir() and not path.is_symlink() and root.resolve() in path.resolve().parents:
            shutil.rmtree(path, ignore_errors=True)
            removed += 1
    return removed
