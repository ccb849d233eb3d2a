"""Where a reference-game guesser goes wrong: reads the work it writes before its answer (issue 61 item 3).

The expert's guesser (and a policy trained on its wins) writes, for each of its three grids, the row the expression
names and whether it is the expression's cells, then its answer::

    first: X X X X X other
    second: ▢ X X X ▢ same
    third: X X X X X other
    ANSWER: second

Each step of that work can be checked against the instance, so a policy at chance says which step it skips:

- describer: the expression names a row that only the target grid has (else no guesser can tell the grids apart);
- copy: each work line's row is that row of the guesser's grid;
- judge: each line's ``same`` / ``other`` is right for the row it copied (the comparison itself);
- answer: the answer is the first line judged ``same`` (it follows its own work), and the answer is the target;
- the answers' and the targets' positions, so a guesser that learned a position shows it.

``python benchmarks/guesser_work.py RESULTS_DIR [RESULTS_DIR ...]`` prints one table, a row per results folder
(an eval's or collect's ``--results-dir``).
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path

from playprm.games.builtin.expert import _ROW_EXPRESSION, GUESSER_LABELS, ROW_WORDS

WORK_LINE = re.compile(r"^\s*(first|second|third)\s*:\s*(.*?)\s+(same|other)\s*$", re.MULTILINE)
ANSWER = re.compile(r"ANSWER:\s*(first|second|third)", re.IGNORECASE)


def _replies(interactions: dict) -> tuple[str | None, str | None]:
    """The describer's and the guesser's replies of one episode (None where that player never spoke)."""
    said = {}
    for turn in interactions.get("turns", []):
        for event in turn:
            if event.get("action", {}).get("type") == "get message":
                said.setdefault(event["from"], event["action"]["content"])
    return said.get("Player 1"), said.get("Player 2")


def episode_work(instance: dict, interactions: dict) -> dict | None:
    """The checks of one episode (None: no guesser reply to read)."""
    expression, reply = _replies(interactions)
    if reply is None:
        return None
    grids = instance["guesser_grids"]
    target = instance["guesser_target"]
    out = {"target": target, "answer": None, "unique": None, "lines": 0, "copied": 0, "judged": 0,
           "judged_true": 0, "follows": None}
    match = _ROW_EXPRESSION.search(expression or "")
    answer = ANSWER.search(reply)
    out["answer"] = answer.group(1).lower() if answer else None
    if not match:
        return out
    row, cells = ROW_WORDS.index(match.group(1)), match.group(2).strip()
    rows = [g.split("\n")[row] if len(g.split("\n")) > row else "" for g in grids]
    target_row = rows[GUESSER_LABELS.index(target)]
    out["unique"] = cells == target_row and sum(r == cells for r in rows) == 1
    lines = {label: (copied.strip(), judgement) for label, copied, judgement in WORK_LINE.findall(reply)}
    out["lines"] = len(lines)
    for label, (copied, judgement) in lines.items():
        truth = rows[GUESSER_LABELS.index(label)]
        out["copied"] += copied == truth
        out["judged"] += (judgement == "same") == (copied == cells)  # right for the row it wrote
        out["judged_true"] += (judgement == "same") == (truth == cells)  # right for the grid's real row
    said_same = [label for label in GUESSER_LABELS if lines.get(label, ("", ""))[1] == "same"]
    if out["answer"] and said_same:
        out["follows"] = out["answer"] == said_same[0]
    return out


def folder_table(results_dir: Path) -> dict:
    """Counts over every reference-game episode under ``results_dir``."""
    rows = []
    for interactions_file in sorted(results_dir.rglob("interactions.json")):
        folder = interactions_file.parent
        if not (folder / "instance.json").is_file() or "referencegame" not in folder.parts:
            continue
        work = episode_work(json.loads((folder / "instance.json").read_text(encoding="utf-8")),
                            json.loads(interactions_file.read_text(encoding="utf-8")))
        if work is not None:
            rows.append(work)
    lines = sum(r["lines"] for r in rows)
    follows = [r["follows"] for r in rows if r["follows"] is not None]
    return {
        "episodes": len(rows),
        "describer names a row only the target has": sum(bool(r["unique"]) for r in rows),
        "work lines (3 an episode)": lines,
        "rows copied right": sum(r["copied"] for r in rows),
        "judged right for the row written": sum(r["judged"] for r in rows),
        "judged right for the grid's row": sum(r["judged_true"] for r in rows),
        "answer follows its work": f"{sum(follows)} of {len(follows)}",
        "answer is the target": sum(r["answer"] == r["target"] for r in rows),
        "answers first/second/third/none": "/".join(str(Counter(r["answer"] for r in rows)[k])
                                                    for k in (*GUESSER_LABELS, None)),
        "targets first/second/third": "/".join(str(Counter(r["target"] for r in rows)[k]) for k in GUESSER_LABELS),
    }


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip().splitlines()[-2], file=sys.stderr)
        return 2
    tables = {path: folder_table(Path(path)) for path in argv}
    keys = list(next(iter(tables.values())))
    print("| check | " + " | ".join(Path(p).name for p in tables) + " |")
    print("| --- |" + " ---: |" * len(tables))
    for key in keys:
        print(f"| {key} | " + " | ".join(str(t[key]) for t in tables.values()) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
