"""The inputs every dataset command shares: results folders, an output folder and a split, checked once."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from playprm.atomic import check_output_path
from playprm.errors import UsageError
from playprm.results import ResultsScan, scan_results


def check_dataset_inputs(results_dirs: Sequence[Path], out: Path, val_fraction: float) -> None:
    """Raise ``UsageError`` unless every results folder exists, ``out`` can be written as a folder and
    ``0 <= val_fraction < 1``."""
    for results_dir in results_dirs:
        if not results_dir.is_dir():
            raise UsageError(f"--results-dir {results_dir} is not a directory; pass a clemcore results "
                             "folder (the one `clem run -r` wrote) or one of its model folders")
    check_output_path(out, "--out")
    if not 0 <= val_fraction < 1:
        raise UsageError(f"--val-fraction must be in [0, 1), got {val_fraction}; e.g. 0.1")


def read_sources(results_dirs: Sequence[Path], *, require_episodes: bool = True) -> ResultsScan:
    """Scan ``results_dirs``, printing one line per unreadable episode to stderr.

    With ``require_episodes``, raises ``UsageError`` when not a single episode folder (readable or not) is
    found, which means the folders are not clemcore results.
    """
    scan = scan_results(results_dirs)
    for path, reason in scan.skipped:
        print(f"skipped {path}: {reason}", file=sys.stderr)
    if require_episodes and not scan.episodes and not scan.skipped:
        folders = ", ".join(map(str, results_dirs))
        raise UsageError(f"no episodes found under {folders}; expected clemcore results laid out as "
                         "<model>/<game>/<experiment>/instance_00000/interactions.json (or episode_<k>/)")
    return scan
