"""Per-game gating: which games a guided run guides, decided from a validation run's per-game paired comparison.

Snell et al. (2024) choose test-time compute per problem; a game benchmark's natural unit is the game. The
decision is read from the ``paired.json`` that ``playprm report --compare GREEDY GUIDED --paired GUIDED GREEDY``
writes for runs on *validation* instances (never the held-out ones): a game is guided when guidance won clemscore
points there, i.e. the per-game paired point estimate is above 0; every other game plays greedy. A game the
validation run did not play is not guided (nothing says guidance pays there).
"""

from __future__ import annotations

import json
from pathlib import Path

from playprm.errors import UsageError

PAIRED_FILE = "paired.json"


def read_gate(path: Path) -> dict[str, dict]:
    """``{game: {"guided": bool, "points": float, "ci": [low, high], "episodes": int, "reason": str}}`` from a
    report's paired.json (or the folder holding it): its first pair is read as (guided run, greedy run).
    UsageError, one line, where the file is missing or has no per-game table."""
    path = Path(path)
    file = path / PAIRED_FILE if path.is_dir() else path
    if not file.is_file():
        raise UsageError(f"--gate-from {path}: no {PAIRED_FILE}; write one with `playprm report --compare GREEDY "
                         f"GUIDED --paired GUIDED GREEDY --out DIR` on validation runs")
    try:
        document = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise UsageError(f"--gate-from {file} cannot be read ({error}); write it again with playprm report") from error
    pairs = document if isinstance(document, list) else []
    games = pairs[0].get("games") if pairs and isinstance(pairs[0], dict) else None
    if not isinstance(games, list) or not games:
        raise UsageError(f"--gate-from {file} holds no per-game table; write it with a playprm report that has "
                         f"--paired GUIDED GREEDY")
    a, b = pairs[0].get("a"), pairs[0].get("b")
    gate = {}
    for row in games:
        points = float(row.get("points", float("nan")))
        guided = points > 0
        verdict = "guided" if guided else "greedy"
        gate[str(row["game"])] = {
            "guided": guided, "points": points, "ci": row.get("points_ci"), "episodes": row.get("episodes"),
            "reason": f"{verdict}: {a} - {b} = {points:+.2f} clemscore points on {row.get('episodes')} validation "
                      f"episodes",
        }
    return gate
