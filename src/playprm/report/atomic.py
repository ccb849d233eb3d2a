"""Atomic copies and figure saves (text files go through ``playprm.atomic.write_text``).

Both write a temporary file beside the target, then ``os.replace`` it, so a reader or a resumed merge never
sees a half-copied scores.json or a half-drawn plot. The file's mode follows the umask, as ``open()``'s would.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from playprm.atomic import new_file_mode


def save_atomic(target: Path, save: Callable[[Path], object]) -> None:
    """Call ``save(temporary_path)`` (e.g. a figure's ``savefig``), then move the result onto ``target``."""
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    os.close(handle)
    try:
        os.chmod(temporary, new_file_mode())
        save(Path(temporary))
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def copy_atomic(source: Path, target: Path) -> None:
    """Copy the bytes of ``source`` to ``target`` atomically, creating parent folders."""
    save_atomic(target, lambda temporary: shutil.copyfile(source, temporary))
