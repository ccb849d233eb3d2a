"""Atomic file writes: a temporary file in the same folder, then ``os.replace``, so a killed run never leaves
a half-written results file, copy or figure behind. The file gets the mode ``open()`` would give it (the umask
decides), not ``mkstemp``'s private 0600, so teammates on a shared cluster can read the results. Every file
playprm writes goes through ``save_atomic``."""

from __future__ import annotations

import errno
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from playprm.errors import UsageError


def new_file_mode() -> int:
    """The permission bits a newly created file gets under the current umask (0o644 under umask 022)."""
    umask = os.umask(0)  # the only portable way to read it: set, then restore at once
    os.umask(umask)
    return 0o666 & ~umask


def check_output_path(path: str | Path, flag: str, *, file: bool = False) -> Path:
    """``path`` as a command's output (a folder; with ``file``, a file), checked with the command's other inputs:
    a one-line ``UsageError`` where it, or a folder above it, is a file (a folder, for ``file``), or where the
    nearest folder of it that exists cannot be written. Nothing stays written: ``os.access`` says yes to root in
    a read-only tree such as /proc, so an empty folder is made there and removed at once."""
    path = Path(path)
    if path.exists() and path.is_dir() == file:
        raise UsageError(f"{flag} {path} is a {'folder' if file else 'file'}, choose another "
                         f"{'file name' if file else 'folder'}")
    existing = path.parent if file else path
    while not existing.exists() and not existing.is_symlink() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        what = "a broken link" if existing.is_symlink() and not existing.exists() else "a file"
        raise UsageError(f"{flag} {path}: {existing} is {what}, choose another folder")
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".playprm-write-check-", dir=existing))
    except OSError as error:  # /proc answers "no such file" to a new folder
        why = "it takes no new folders" if error.errno == errno.ENOENT else error.strerror or str(error)
        raise UsageError(f"{flag} {path}: cannot write into {existing} ({why}), choose a writable folder") from None
    return path


def save_atomic(target: str | Path, save: Callable[[Path], object]) -> Path:
    """Call ``save(temporary_path)`` (e.g. a figure's ``savefig``), then move the result onto ``target``,
    creating parent folders; returns ``target``."""
    target = Path(target)
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
    return target


def write_text(path: str | Path, text: str) -> Path:
    def save(temporary: Path) -> None:
        with open(temporary, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())

    return save_atomic(path, save)


def copy_atomic(source: Path, target: Path) -> Path:
    """Copy the bytes of ``source`` to ``target`` atomically, creating parent folders."""
    return save_atomic(target, lambda temporary: shutil.copyfile(source, temporary))


def write_json(path: str | Path, data: Any, *, indent: int | None = 2) -> Path:
    return write_text(path, json.dumps(data, indent=indent, ensure_ascii=False, default=str))


def write_jsonl(path: str | Path, rows: Iterable[Any], *, allow_nan: bool = True) -> Path:
    """One JSON value per line (no rows: an empty file). ``allow_nan=False`` for datasets: a NaN from
    scores.json must not leak into a file strict JSON readers reject (it raises ValueError instead)."""
    return write_text(path, "".join(json.dumps(row, ensure_ascii=False, default=str, allow_nan=allow_nan) + "\n"
                                    for row in rows))
