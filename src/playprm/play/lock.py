"""One run at a time per run folder: an exclusive lock on ``<run folder>/.playprm.lock`` while a run plays.

Two processes writing one run folder would resume each other's half-played episodes and remove each other's
staging folders; the second one stops with one line naming the first one's pid. The lock is the kernel's
(``fcntl.flock``), so a killed run releases it with its last file descriptor: there is never a stale lock to
remove by hand. The file is a dot-file, which every reader of a results dir skips.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from playprm.errors import UsageError

LOCK_FILE = ".playprm.lock"


@contextmanager
def hold(run_dir: Path) -> Iterator[None]:
    """Hold ``run_dir``'s lock for the ``with`` block (creating the folder); UsageError if another run holds it."""
    run_dir.mkdir(parents=True, exist_ok=True)
    handle = os.open(run_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(handle, 32, 0).decode("ascii", "replace").strip() or "unknown"
            raise UsageError(f"{run_dir} is in use by another playprm run (pid {holder}); wait for it to end, "
                             f"or pass another --results-dir") from None
        os.ftruncate(handle, 0)
        os.pwrite(handle, f"{os.getpid()}\n".encode("ascii"), 0)
        yield
    finally:
        os.close(handle)  # releases the lock; the file stays (removing it would race with the next run)
