"""A run's ``<model-pair>/playprm_run.json``: which decoding mode produced the episodes beside it.

Written by the runner, e.g. ``{"mode": "best-of-n", "env_lookahead": false, "n_candidates": 8, ...}``.
``env_lookahead: true`` marks searches that saw the game's answers to actions they did not play.
"""

from __future__ import annotations

import json
from pathlib import Path

from playprm.errors import UsageError

RUN_METADATA_FILE = "playprm_run.json"
# the fields that define what a run's number means
MODE_FIELDS = ("mode", "env_lookahead", "n_candidates")


def read_run_metadata(path: Path) -> dict:
    """The JSON object in ``path``; UsageError where it cannot be read (a mode must never be guessed)."""
    try:
        metadata = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise UsageError(f"cannot read {path} ({error}); fix or rewrite it (it records the decoding mode)") from error
    if not isinstance(metadata, dict):
        raise UsageError(f"{path} is not a JSON object; it should hold the run's mode and env_lookahead")
    return metadata


def is_env_lookahead(metadata: dict) -> bool:
    """True when the run metadata says the search looked at game answers to unplayed actions."""
    flag = metadata.get("env_lookahead", False)
    return flag is True or str(flag).strip().lower() in {"true", "1", "yes"}
