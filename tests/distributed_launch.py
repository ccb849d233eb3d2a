"""torchrun entry point of tests/test_distributed.py: runs ``python -m playprm ARGS`` and, on every rank but 0,
records each file the process opens for writing (or renames into place) under ``--output-dir`` in
``$PLAYPRM_WRITES_LOG`` (one ``rank path`` line each), so a test can say which rank wrote what.

Python-level writes are seen by an audit hook (``open``, ``os.rename``); ``torch.save`` and safetensors'
``save_file`` write from C++/Rust, so they are wrapped here as well.
"""

from __future__ import annotations

import os
import runpy
import sys
from pathlib import Path

WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND


def output_dir(argv: list[str]) -> Path:
    return Path(argv[argv.index("--output-dir") + 1]).resolve()


def watch_writes(rank: int, root: Path, log_path: Path) -> None:
    seen: set[str] = set()

    def note(path) -> None:
        if isinstance(path, (str, bytes, os.PathLike)):
            resolved = os.path.abspath(os.fsdecode(path))
            if resolved.startswith(str(root) + os.sep) and resolved not in seen:
                seen.add(resolved)
                with open(log_path, "a") as log:  # not under root: never noted itself
                    log.write(f"{rank} {os.path.relpath(resolved, root)}\n")

    def hook(event: str, args: tuple) -> None:
        if event == "open" and len(args) == 3:
            path, mode, flags = args
            writing = any(c in mode for c in "wax+") if isinstance(mode, str) else bool((flags or 0) & WRITE_FLAGS)
            if writing:
                note(path)
        elif event == "os.rename":
            note(args[1])

    sys.addaudithook(hook)

    import safetensors.torch
    import torch

    def wrapped(function, position):
        def call(*args, **kwargs):
            target = args[position] if len(args) > position else kwargs.get("f", kwargs.get("filename"))
            note(target)
            return function(*args, **kwargs)
        return call

    torch.save = wrapped(torch.save, 1)
    safetensors.torch.save_file = wrapped(safetensors.torch.save_file, 1)


if __name__ == "__main__":
    arguments = sys.argv[1:]
    rank = int(os.environ.get("RANK", "0"))
    if rank != 0:
        watch_writes(rank, output_dir(arguments), Path(os.environ["PLAYPRM_WRITES_LOG"]))
    sys.argv = ["playprm", *arguments]
    runpy.run_module("playprm", run_name="__main__", alter_sys=True)
