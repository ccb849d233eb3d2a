"""Episode pages that show the search: clemcore's transcript, with the alternatives and their PRM scores after
every guided turn.

Built on clemcore's own transcript builder: the alternatives are inserted into a copy of the interactions as
Game Master notes right after the reply that was played, so the page looks like ``clem transcribe``'s and the
original interactions.json is untouched. Writes ``transcript.html`` (clemcore's page, unchanged) and
``search.html`` per episode, and an ``index.html`` linking them.
"""

from __future__ import annotations

import copy
import html
import json
from pathlib import Path

from playprm import atomic
from playprm.results.layout import CANDIDATES_FILE, INTERACTIONS_FILE, result_files


def candidates_note(row: dict) -> str:
    """Text of the note shown after a played reply: every candidate with its score, the played one marked."""
    lines = [f"{row.get('mode', 'search')}: {len(row['candidates'])} candidate(s)"]
    for i, c in enumerate(row["candidates"]):
        score = "   -  " if c.get("score") is None else f"{c['score']:.3f}"
        mark = "  <- played" if i == row.get("chosen") else ""
        text = " ".join(str(c["text"]).split())
        lines.append(f"#{i} score {score} ({c.get('tokens', '?')} tok): {text[:300]}{mark}")
    return "\n".join(lines)


def with_candidates(interactions: dict, rows: list[dict]) -> dict:
    """A copy of ``interactions`` with a GM note after each policy reply that has a candidates row."""
    annotated = copy.deepcopy(interactions)
    policy_players = {name for name, info in annotated.get("players", {}).items()
                      if isinstance(info, dict) and name != "GM" and info.get("model_name") != "programmatic"}
    queue = list(rows)
    for round_events in annotated.get("turns", []):
        out = []
        for event in round_events:
            out.append(event)
            action = event.get("action", {})
            if action.get("type") == "get message" and event.get("from") in policy_players and queue:
                row = queue.pop(0)
                out.append({"from": "GM", "to": "GM", "timestamp": event.get("timestamp"),
                            "action": {"type": "candidates", "content": candidates_note(row)}})
        round_events[:] = out
    return annotated


def transcribe(results_dir: Path) -> list[Path]:
    """Write search.html (and clemcore's transcript.html) for every episode under ``results_dir``."""
    from clemcore.clemgame.transcripts.builder import build_transcript

    pages = []
    for interactions_file in result_files(results_dir, INTERACTIONS_FILE):
        folder = interactions_file.parent
        interactions = json.loads(interactions_file.read_text(encoding="utf-8"))
        rows_file = folder / CANDIDATES_FILE
        rows = [json.loads(x) for x in rows_file.read_text(encoding="utf-8").splitlines() if x.strip()] \
            if rows_file.exists() else []
        atomic.write_text(folder / "transcript.html", build_transcript(interactions))
        atomic.write_text(folder / "search.html", build_transcript(with_candidates(interactions, rows)))
        pages.append(folder / "search.html")
    items = "\n".join(
        f'<li><a href="{html.escape(str(p.relative_to(results_dir)))}">{html.escape(str(p.parent.relative_to(results_dir)))}</a></li>'
        for p in pages)
    atomic.write_text(results_dir / "index.html",
                      f"<!doctype html><meta charset='utf-8'><title>playprm episodes</title>"
                      f"<h1>{len(pages)} episodes</h1><ul>\n{items}\n</ul>")
    return pages
