"""Warn when a LoRA adapter is loaded on another base model than the one it was trained on.

PEFT loads an adapter onto any base whose module shapes match, without a word, and the policy then plays
with weights that mean nothing there. ``adapter_config.json`` records the base as ``base_model_name_or_path``
(a hub id or the local folder it was trained from); ``other_base`` compares it with the base being loaded.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

logger = logging.getLogger(__name__)


def recorded_base(adapter_dir: str | Path) -> str | None:
    """``base_model_name_or_path`` from the adapter folder's ``adapter_config.json`` (None when absent)."""
    try:
        config = json.loads((Path(adapter_dir) / "adapter_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    value = config.get("base_model_name_or_path") if isinstance(config, dict) else None
    return value if isinstance(value, str) and value else None


def _same_base(recorded: str, loading: str) -> bool:
    if recorded == loading:
        return True
    a, b = Path(recorded).expanduser(), Path(loading).expanduser()
    if a.exists() == b.exists():  # two folders, or two hub ids
        return a.exists() and a.resolve() == b.resolve()
    # a hub id against a local copy of it (/models/Qwen3.5-27B, or the hub cache's models--Qwen--Qwen3.5-27B),
    # or a base folder that has moved since: the folder names must agree
    local, other = (b, recorded) if b.exists() else (a, loading)
    other_name = other.rstrip("/").split("/")[-1]
    return local.name == other_name or f"models--{other.replace('/', '--')}" in local.as_posix()


def other_base(adapter_dir: str | Path, base: str) -> str | None:
    """The base recorded for ``adapter_dir`` when it is not ``base`` (the model id or folder being loaded)."""
    recorded = recorded_base(adapter_dir)
    return None if recorded is None or _same_base(recorded, base) else recorded


def warn_if_other_base(adapter_dir: str | Path, base: str) -> None:
    """Log a warning when ``adapter_dir`` was trained on another base than ``base``."""
    recorded = other_base(adapter_dir, base)
    if recorded is not None:
        logger.warning("adapter %s was trained on %s but is loaded on %s; PEFT loads it wherever the shapes "
                       "match, so check the entry's huggingface_id", adapter_dir, recorded, base)
