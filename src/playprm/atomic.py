"""Atomic file writes: a temporary file in the same folder, then ``os.replace``, so a killed run never leaves
a half-written results file behind. The file gets the mode ``open()`` would give it (the umask decides), not
``mkstemp``'s private 0600, so teammates on a shared cluster can read the results."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any


def new_file_mode() -> int:
    """The permission bits a newly created file gets under the current umask (0o644 under umask 022)."""
    umask = os.umask(0)  # the only portable way to read it: set, then restore at once
    os.umask(umask)
    return 0o666 & ~umask


def write_text(path: str | Path, text: str) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, new_file_mode())
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_json(path: str | Path, data: Any, *, indent: int | None = 2) -> Path:
    return write_text(path, json.dumps(data, indent=indent, ensure_ascii=False, default=str))


def write_jsonl(path: str | Path, rows: Iterable[Any]) -> Path:
    return write_text(path, "".join(json.dumps(row, ensure_ascii=False, default=str) + "\n" for row in rows))
