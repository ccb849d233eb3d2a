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


def _imports_between_parts() -> dict[str, set[str]]:
    """Part (folder or top-level module of the package) -> the other parts it imports, lazy imports included."""
    import ast

    package = REPO_ROOT / "src" / "playprm"
    part = lambda path: path.relative_to(package).parts[0].removesuffix(".py")  # noqa: E731
    arrows: dict[str, set[str]] = {}
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else []
            if isinstance(node, ast.ImportFrom) and node.module == "playprm":  # from playprm import play
                names = [f"playprm.{a.name}" for a in node.names]
            for name in names:
                if name.startswith("playprm.") and name.split(".")[1] != part(path):
                    arrows.setdefault(part(path), set()).add(name.split(".")[1])
    return arrows


def test_the_lower_floors_import_nothing_above_them_and_no_parts_import_each_other_in_a_cycle():
    arrows = _imports_between_parts()
    floors = {"results", "models", "search", "prm"}  # what a run is built from; play/, train/ and up build on them
    assert {(part, other) for part in floors for other in arrows.get(part, ())
            if other in {"play", "train", "pipeline", "commands", "cli", "report", "bench", "data"}} == set()

    def reaches(start: str, goal: str) -> bool:
        seen, stack = set(), [start]
        while stack:
            for nxt in arrows.get(stack.pop(), ()):
                if nxt == goal:
                    return True
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        return False

    assert [part for part in arrows if reaches(part, part)] == []
    assert len(list((REPO_ROOT / "src" / "playprm").glob("*.py"))) <= 10  # top-level modules


def _imports_between_modules() -> dict[str, set[str]]:
    """Module of the package -> the package's modules it imports, at module level or inside functions
    (``from playprm.x import y`` counts as importing ``playprm.x.y`` where that is a module, else ``playprm.x``)."""
    import ast

    package = REPO_ROOT / "src" / "playprm"

    def name_of(path: Path) -> str:
        parts = path.relative_to(package.parent).with_suffix("").parts
        return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)

    modules = {name_of(path): path for path in package.rglob("*.py")}
    arrows: dict[str, set[str]] = {}
    for module, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: from the module's package, one level up per extra dot
                    anchor = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
                    base = ".".join(anchor[:len(anchor) - node.level + 1] + ([node.module] if node.module else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            else:
                continue
            arrows.setdefault(module, set()).update(t for t in targets if t in modules and t != module)
    return arrows


def test_no_two_modules_import_each_other():
    arrows = _imports_between_modules()
    assert "playprm.play.wiring" in arrows["playprm.commands.eval"]  # imported in a function: the walk sees it
    assert sorted((a, b) for a in arrows for b in arrows[a] if a < b and a in arrows.get(b, ())) == []
