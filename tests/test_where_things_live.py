"""docs/where-things-live.md names every folder and top-level module of the package."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def test_every_folder_and_top_level_module_has_a_row():
    doc = (REPO_ROOT / "docs" / "where-things-live.md").read_text(encoding="utf-8")
    rows = [line for line in doc.splitlines() if line.startswith("| ")]
    package = REPO_ROOT / "src" / "playprm"
    parts = [p for p in package.iterdir() if p.suffix == ".py" or (p / "__init__.py").is_file()]
    named = lambda part: any(f"`{part.name}" in row or f"`{part.stem}/" in row for row in rows)  # noqa: E731
    assert [part.name for part in parts if not named(part)] == []
