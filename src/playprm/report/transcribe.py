"""Episode pages that show the search: clemcore's transcript, with the alternatives and their PRM scores after
every guided turn.

Built on clemcore's own transcript builder: the alternatives are inserted into a copy of the interactions as
Game Master notes right after the reply that was played, so the page looks like ``clem transcribe``'s and the
original interactions.json is untouched. Writes ``transcript.html`` (clemcore's page, unchanged) per episode,
``search.html`` for episodes with candidate logs (guided turns), and an ``index.html`` listing every episode with
its outcome and Main Score. Pages go into a mirror of the results layout under the output folder (never beside
the episodes: ``clem transcribe``'s own pages live there). An episode whose scores.json is broken but whose
interactions.json reads still gets its page, listed with the problem instead of an outcome.
"""

from __future__ import annotations

import copy
import html
import json
from pathlib import Path

from playprm import atomic
from playprm.results.layout import CANDIDATES_FILE, INTERACTIONS_FILE


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


def _interactions(folder: Path) -> dict | None:
    # an episode skipped for another file (a broken scores.json) still has a page where its events read
    from playprm.results import read_json

    interactions, reason = read_json(folder / INTERACTIONS_FILE)
    turns = interactions.get("turns") if isinstance(interactions, dict) else None
    if reason or not isinstance(turns, list) or not all(isinstance(events, list) for events in turns):
        return None
    return interactions


def transcribe(results_dir: Path, out: Path) -> tuple[list[Path], list[str]]:
    """Write transcript.html (and search.html where candidates.jsonl exists) for every episode under
    ``results_dir`` into the mirror ``out/<model>/<game>/<experiment>/<episode>/``, and ``out/index.html``.
    Returns the pages and one note per kind of episode shown without an outcome or left out, with the count."""
    from clemcore.clemgame.transcripts.builder import build_transcript

    from playprm.report.render import number
    from playprm.results import iter_episodes

    skipped: list[tuple[Path, str]] = []
    pages, rows = [], []
    for episode in iter_episodes(results_dir, on_skip=lambda path, reason: skipped.append((path, reason))):
        if episode.interactions is None:
            continue
        candidates_file = episode.path / CANDIDATES_FILE
        candidates = [json.loads(x) for x in candidates_file.read_text(encoding="utf-8").splitlines() if x.strip()] \
            if candidates_file.exists() else []
        cells = (episode.game, episode.outcome or episode.outcome_problem or "", number(episode.main_score))
        pages += _pages(build_transcript, episode.path, results_dir, out, episode.interactions, candidates, cells,
                        rows)
    shown, left_out = [], []
    for folder, reason in skipped:
        interactions = _interactions(folder)
        if interactions is None:
            left_out.append((folder, reason))
            continue
        shown.append((folder, reason))
        pages += _pages(build_transcript, folder, results_dir, out, interactions, [],
                        (folder.parents[1].name, f"no outcome: {reason}", ""), rows)
    atomic.write_text(out / "index.html", _index(sorted(rows, key=lambda row: str(row[0])), out))
    notes = []
    if shown:
        notes.append(f"{len(shown)} episode(s) shown without an outcome: interactions.json reads, another file "
                     f"does not (first: {shown[0][0]}: {shown[0][1]})")
    if left_out:
        notes.append(f"{len(left_out)} episode(s) left out, nothing to show (first: {left_out[0][0]}: "
                     f"{left_out[0][1]})")
    return pages, notes


def _pages(build_transcript, folder: Path, results_dir: Path, out: Path, interactions: dict, candidates: list,
           cells: tuple, rows: list) -> list[Path]:
    relative = folder.relative_to(results_dir)
    links = []
    try:
        links.append(atomic.write_text(out / relative / "transcript.html", build_transcript(interactions)))
        if candidates:
            links.append(atomic.write_text(out / relative / "search.html",
                                           build_transcript(with_candidates(interactions, candidates))))
    except Exception as error:  # one odd episode must not stop the others' pages
        rows.append((relative, cells, f"not rendered ({type(error).__name__}: {error})"[:160], []))
        return []
    rows.append((relative, cells, "", links))
    return links


def _index(rows: list, out: Path) -> str:
    cells = []
    for relative, (game, outcome, main_score), problem, links in rows:
        anchors = " ".join(f'<a href="{html.escape(str(link.relative_to(out)))}">{link.stem}</a>' for link in links)
        cells.append(
            f"<tr><td>{html.escape(str(relative))}</td><td>{html.escape(game)}</td>"
            f"<td>{html.escape(outcome)}</td><td>{main_score}</td><td>{anchors or html.escape(problem)}</td></tr>")
    return ("<!doctype html><meta charset='utf-8'><title>playprm episodes</title>"
            f"<h1>{len(rows)} episodes</h1><table border='1' cellpadding='3'>"
            "<tr><th>episode</th><th>game</th><th>outcome</th><th>Main Score</th><th>pages</th></tr>\n"
            + "\n".join(cells) + "\n</table>")
