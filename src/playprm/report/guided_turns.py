"""What guided turns did, per game: how often guidance overrode the greedy reply, by what score margin, and how
often a played reply repeated a move the game had already rejected.

Two sources, whichever a run has:

- every run's transcripts (``interactions.json``; the published records too): a reply is taken as *rejected* when
  the game asks the same player again in the same round (a re-prompt: "not a valid word, try again"), which needs
  no game-specific code. Some games also ask several times per round by design (matchit_ascii's questions,
  privateshared's probes), so "asked again" is an upper bound on re-prompts there. Counted per game: replies asked
  again, replies that repeat such a reply of earlier in the episode (same player, same text after folding case
  and white space), and aborted episodes that had such a repeat;
- the candidate logs of a guided playprm run (``candidates.jsonl``): per guided turn, whether the chosen reply
  differs from the policy's greedy candidate (where the log names one: ``greedy``), the PRM score margin of the
  chosen candidate over the greedy one, and whether the chosen reply repeats a rejected one (``rejected``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from playprm.results import candidate_records, iter_episodes


def _fold(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().casefold()


@dataclass
class GameTurns:
    """Counts for one game of one run."""

    episodes: int = 0
    aborted: int = 0
    replies: int = 0
    reprompts: int = 0  # replies the game answered by asking the same player again in the same round
    repeats: int = 0  # replies equal to a reply the game had rejected earlier in the episode
    episodes_with_repeat: int = 0
    aborted_after_repeat: int = 0
    guided_turns: int = 0  # turns with a candidates.jsonl record of several candidates
    with_greedy: int = 0  # of those, turns whose log names the greedy candidate
    switched: int = 0  # chosen reply differs from the greedy candidate's
    margins: list[float] = field(default_factory=list)  # chosen score - greedy score, on switched turns
    chosen_rejected: int = 0  # chosen candidate repeats a rejected reply (the log's ``rejected`` list)
    logged_rejected: int = 0  # turns where some candidate repeated a rejected reply

    def as_dict(self) -> dict:
        data = {k: v for k, v in self.__dict__.items() if k != "margins"}
        data["mean_switch_margin"] = sum(self.margins) / len(self.margins) if self.margins else None
        return data


def transcript_counts(episode) -> tuple[int, int, int]:
    """``(replies, re-prompts, repeats of a rejected reply)`` of one ``EpisodeRecord``, over its LLM players."""
    replies = reprompts = repeats = 0
    for player in episode.llm_players():
        turns = episode.llm_turns(player.name)
        rejected: set[str] = set()
        for turn, following in zip(turns, turns[1:] + [None]):
            replies += 1
            text = _fold(turn.response)
            if text in rejected:
                repeats += 1
            if following is not None and following.round == turn.round:
                reprompts += 1
                rejected.add(text)
    return replies, reprompts, repeats


def _count_candidates(counts: GameTurns, records: list[dict]) -> None:
    for record in records:
        candidates = record.get("candidates") or []
        if len(candidates) < 2:
            continue
        counts.guided_turns += 1
        chosen, greedy = record.get("chosen"), record.get("greedy")
        rejected = record.get("rejected") or []
        if rejected:
            counts.logged_rejected += 1
            counts.chosen_rejected += int(chosen in rejected)
        if not isinstance(greedy, int) or not 0 <= greedy < len(candidates) or not isinstance(chosen, int):
            continue
        counts.with_greedy += 1
        if _fold(candidates[chosen]["text"]) != _fold(candidates[greedy]["text"]):
            counts.switched += 1
            scores = candidates[chosen].get("score"), candidates[greedy].get("score")
            if all(isinstance(s, (int, float)) and math.isfinite(s) for s in scores):
                counts.margins.append(scores[0] - scores[1])


def guided_turns(results_dir: Path) -> dict[tuple[str, str], GameTurns]:
    """``{(model folder, game): GameTurns}`` for every episode under ``results_dir``."""
    table: dict[tuple[str, str], GameTurns] = {}
    for episode in iter_episodes(Path(results_dir), on_skip=lambda path, reason: None):
        if episode.interactions is None:
            continue
        counts = table.setdefault((episode.model, episode.game), GameTurns())
        replies, reprompts, repeats = transcript_counts(episode)
        counts.episodes += 1
        aborted = episode.outcome == "aborted"
        counts.aborted += int(aborted)
        counts.replies += replies
        counts.reprompts += reprompts
        counts.repeats += repeats
        counts.episodes_with_repeat += int(repeats > 0)
        counts.aborted_after_repeat += int(aborted and repeats > 0)
        _count_candidates(counts, candidate_records(episode.path))
    return table


def render_guided_turns(table: dict[tuple[str, str], GameTurns], *, only_notable: bool = False) -> str:
    """A Markdown table, one row per (run, game); guidance columns only where a run logged candidates.
    ``only_notable``: only rows with a repeated rejected reply or guided turns (for the terminal)."""
    from playprm.report.render import number
    from playprm.tables import markdown_table

    logged = any(c.guided_turns for c in table.values())
    headers = ["run", "game", "episodes", "aborted", "asked again (re-prompts)", "repeats of a rejected reply",
               "aborted after a repeat"]
    if logged:
        headers += ["guided turns", "switched from greedy", "mean margin when switched", "chosen repeats rejected"]
    rows = []
    for (model, game), c in sorted(table.items()):
        if only_notable and not (c.repeats or c.guided_turns):
            continue
        row = [model, game, str(c.episodes), str(c.aborted), str(c.reprompts), str(c.repeats),
               str(c.aborted_after_repeat)]
        if logged:
            share = f"{c.switched} of {c.with_greedy}" if c.with_greedy else "no greedy logged"
            margin = number(sum(c.margins) / len(c.margins), 3) if c.margins else ""
            row += [str(c.guided_turns), share, margin, f"{c.chosen_rejected} of {c.logged_rejected}"]
        rows.append(row)
    return markdown_table(headers, rows)
