"""Episode pages that show the search: clemcore's transcript, with the alternatives and their PRM scores after
every guided turn.

Built on clemcore's own transcript builder: the alternatives are inserted into a copy of the interactions as
Game Master notes right after the reply that was played, so the page looks like ``clem transcribe``'s and the
original interactions.json is untouched. Writes ``transcript.html`` (clemcore's page, unchanged) per episode,
``search.html`` for episodes with candidate logs (guided turns), and an ``index.html`` listing every episode with
its outcome and Main Score. Pages go beside the episodes (as ``clem transcribe`` writes them) or into a mirror of
the layout under another folder.
"""

from __future__ import annotations

import copy
import html
import json
from pathlib import Path

from playprm import atomic
from playprm.results.layout import CANDIDATES_FILE


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


def transcribe(results_dir: Path, out: Path | None = None) -> list[Path]:
    """Write transcript.html (and search.html where candidates.jsonl exists) for every episode under
    ``results_dir`` into ``out`` (default: beside each episode), and ``out/index.html``. Returns the pages."""
    from clemcore.clemgame.transcripts.builder import build_transcript

    from playprm.report.render import number
    from playprm.results import iter_episodes

    out = results_dir if out is None else out
    pages, rows = [], []
    for episode in iter_episodes(results_dir, on_skip=lambda path, reason: None):
        if episode.interactions is None:
            continue
        relative = episode.path.relative_to(results_dir)
        folder = out / relative
        candidates_file = episode.path / CANDIDATES_FILE
        candidates = [json.loads(x) for x in candidates_file.read_text(encoding="utf-8").splitlines() if x.strip()] \
            if candidates_file.exists() else []
        links = []
        try:
            links.append(atomic.write_text(folder / "transcript.html", build_transcript(episode.interactions)))
            if candidates:
                links.append(atomic.write_text(folder / "search.html",
                                               build_transcript(with_candidates(episode.interactions, candidates))))
        except Exception as error:  # one odd episode must not stop the others' pages
            rows.append((relative, episode, f"not rendered ({type(error).__name__}: {error})"[:160], []))
            continue
        pages += links
        rows.append((relative, episode, "", links))
    atomic.write_text(out / "index.html", _index(rows, out, number))
    return pages


def _index(rows: list, out: Path, number) -> str:
    cells = []
    for relative, episode, problem, links in rows:
        anchors = " ".join(f'<a href="{html.escape(str(link.relative_to(out)))}">{link.stem}</a>' for link in links)
        cells.append(
            f"<tr><td>{html.escape(str(relative))}</td><td>{html.escape(episode.game)}</td>"
            f"<td>{html.escape(episode.outcome or episode.outcome_problem or '')}</td>"
            f"<td>{number(episode.main_score)}</td><td>{anchors or html.escape(problem)}</td></tr>")
    return ("<!doctype html><meta charset='utf-8'><title>playprm episodes</title>"
            f"<h1>{len(rows)} episodes</h1><table border='1' cellpadding='3'>"
            "<tr><th>episode</th><th>game</th><th>outcome</th><th>Main Score</th><th>pages</th></tr>\n"
            + "\n".join(cells) + "\n</table>")
