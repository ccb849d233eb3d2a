"""Names read from input files that become folder names in a results dir: checked before anything is written.

Game names (clemgame.json, game_registry.json), experiment names and ``game_id``s (instances.json) and
``model_name``s (model_registry.json) all end up as one path component of
``<results>/<model-pair>/<game>/<experiment>/<episode>/``. A name with a separator or ``..`` would place
(and, on rewrite, replace) a folder outside the results dir, so each is refused with a line naming its file
and field. A leading dot is refused too: dot-folders are staging folders that every reader skips.
"""

from __future__ import annotations

from pathlib import Path

from playprm.errors import UsageError

MAX_COMPONENT_BYTES = 200  # file systems allow 255; leave room for the staging prefix and suffix


def component_problem(name: object) -> str | None:
    """Why ``name`` cannot be one path component (``None`` when it can)."""
    text = str(name)
    if not text.strip():
        return "is empty"
    if text in (".", ".."):
        return f"is {text!r}"
    if "/" in text or "\\" in text:
        return "contains a path separator"
    if any(ord(c) < 32 or ord(c) == 127 for c in text):
        return "contains a control character"
    if text.startswith("."):
        return "starts with a dot (dot-folders are staging folders, skipped by every reader)"
    if len(text.encode("utf-8", "surrogatepass")) > MAX_COMPONENT_BYTES:
        return f"is longer than {MAX_COMPONENT_BYTES} bytes"
    return None


def check_component(name: object, *, where: str) -> str:
    """``str(name)`` when it is a safe folder name; otherwise a UsageError saying ``where`` it came from."""
    problem = component_problem(name)
    if problem:
        raise UsageError(f"{where}: {str(name)[:80]!r} {problem}, and it becomes a folder name in the results "
                         f"dir; rename it (letters, digits, '-', '_' are safe)")
    return str(name)


def check_inside(path: Path, root: Path) -> Path:
    """``path`` when it lies inside ``root`` (after resolving links); the last guard before a write or a removal."""
    resolved, base = Path(path).resolve(), Path(root).resolve()
    if resolved != base and base not in resolved.parents:
        raise UsageError(f"{path} lies outside {root}; refusing to write or remove it")
    return path

