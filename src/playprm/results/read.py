"""Read clemcore results directories of both generations into one ``EpisodeRecord`` type (an episode on disk;
``playprm.episode.Episode`` is one being played).

Two generations of the layout ``<results>/<model-folder>/<game>/<experiment>/<episode>/`` exist:

- clemcore 3.7.2 writes ``instance_00000/`` (and our ``collect`` writes ``episode_00001/`` for repeated
  samples of one instance) holding ``instance.json``, ``interactions.json`` with a ``meta`` block (game_name,
  experiment_name, game_id, ...) and ``players`` as ``{"game_role", "model_name"}`` dicts, ``completed.json``
  or ``error.json``, per-player ``requests.json`` and, once scored, ``scores.json``;
- the clembench v2.0 records have ``episode_<k>/`` with ``interactions.json`` (no ``meta``; ``players`` as
  strings such as ``"Word Guesser (Llama-3.3-70B-Instruct)"``, keyed ``Player 1`` or ``Player_1``) and
  ``scores.json``; without ``instance.json`` the game id is the episode folder name.

A player's chat perspective is rebuilt from the events, as clemcore's players and backends build it: GM ->
player ``send message`` events are user messages, player -> GM ``get message`` events assistant messages,
consecutive same-role messages merge with two newlines (clemcore's ``ensure_alternating_roles``), and a
message labelled ``forget`` is seen once but not remembered.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from playprm.results.layout import (
    CANDIDATES_FILE,
    EPISODE_FOLDER,
    ERROR_FILE,
    INSTANCE_FILE,
    INTERACTIONS_FILE,
    SCORES_FILE,
    instance_key,
    walk_results,
)

logger = logging.getLogger(__name__)

# clemcore's programmatic and human model names (ModelSpec.PROGRAMMATIC_SPECS, HUMAN_SPECS) plus the names
# older records and custom players use: none of them is an LLM whose turns can be learned.
NON_LLM_MODELS = frozenset({"programmatic", "mock", "dry_run", "custom", "human", "terminal", "gm"})

OUTCOMES = ("success", "lose", "aborted")
# clemcore's files nest a few levels (interactions: turns > rounds > events > action > content); a file nested
# far deeper is hostile, and at about 1,000 levels Python's json raises RecursionError
MAX_JSON_DEPTH = 100


@dataclass(frozen=True)
class PlayerInfo:
    """One player of an episode: ``name`` as the events spell it ("Player 1"), its role and model."""

    name: str
    game_role: str | None
    model_name: str

    @property
    def is_llm(self) -> bool:
        return self.name != "GM" and bool(self.model_name) and self.model_name.lower() not in NON_LLM_MODELS


@dataclass(frozen=True)
class RecordedTurn:
    """One reply of a player: the messages it saw before replying (ending with a user message), the reply,
    its 0-based index among that player's replies and the game round it fell in."""

    context: list[dict]
    response: str
    index: int
    round: int


@dataclass
class EpisodeRecord:
    """One played episode read from disk.

    ``model`` is the model folder (``<model-pair>``), ``episode`` the episode folder name, possibly nested
    (``instance_00000/branch_00001``); ``interactions`` is None only for an episode that ended with
    ``error.json``.
    """

    path: Path
    model: str
    game: str
    experiment: str
    episode: str
    interactions: dict | None
    scores: dict | None
    instance: dict | None
    error: dict | None

    @property
    def model_dir(self) -> Path:
        """The model folder this episode lies in (``<results>/<model-pair>``)."""
        parents = self.path.resolve().parents
        return parents[min(len(self.episode.split("/")) + 1, len(parents) - 1)]

    @property
    def game_id(self) -> int | str:
        """The instance id: from interactions' meta, else instance.json, else the episode folder name."""
        return self._game_id()[0]

    @property
    def game_id_source(self) -> str:
        """Where ``game_id`` came from: "interactions meta", "instance.json" or "episode folder"."""
        return self._game_id()[1]

    def _game_id(self) -> tuple[int | str, str]:
        meta = (self.interactions or {}).get("meta") or {}
        if meta.get("game_id") is not None:
            return meta["game_id"], "interactions meta"
        if self.instance and self.instance.get("game_id") is not None:
            return self.instance["game_id"], "instance.json"
        return self.episode.split("/")[0], "episode folder"

    @property
    def instance_key(self) -> tuple[str, str, str]:
        """``(game, experiment, game_id)``: episodes sharing it are samples of one game instance."""
        return instance_key(self.game, self.experiment, self.game_id)

    @property
    def outcome(self) -> str | None:
        """"success", "lose" or "aborted" from scores.json's episode scores (the flags clemcore scores by); None
        when the episode is unscored (no scores.json: clemcore's report leaves it out, so training data does too),
        its flags name no outcome (TextArena's games set none), or they contradict each other (Success and Lose
        both set: never passed as a win). ``outcome_problem`` says which."""
        return self._outcome()[0]

    @property
    def outcome_problem(self) -> str:
        """Why ``outcome`` is None ("unscored", "no outcome flag", "Success and Lose both set"), else ""."""
        return self._outcome()[1]

    def _outcome(self) -> tuple[str | None, str]:
        from clemcore.clemgame.metrics import KEY_EPISODE_SCORES, METRIC_ABORTED, METRIC_LOSE, METRIC_SUCCESS

        episode_scores = (self.scores or {}).get(KEY_EPISODE_SCORES)
        if not isinstance(episode_scores, dict):
            return None, "unscored"
        flags = {key: _flag(episode_scores.get(key)) for key in (METRIC_ABORTED, METRIC_SUCCESS, METRIC_LOSE)}
        if flags[METRIC_ABORTED]:  # aborted first: an aborted episode never passes as a win
            return "aborted", ""
        if flags[METRIC_SUCCESS] and flags[METRIC_LOSE]:
            return None, "Success and Lose both set"
        if flags[METRIC_SUCCESS]:
            return "success", ""
        if flags[METRIC_LOSE]:
            return "lose", ""
        return None, "no outcome flag"

    @property
    def main_score(self) -> float | None:
        """The episode's Main Score (clemcore's BENCH_SCORE) where scores.json holds a finite one, else None."""
        from clemcore.clemgame.metrics import BENCH_SCORE, KEY_EPISODE_SCORES

        value = ((self.scores or {}).get(KEY_EPISODE_SCORES) or {}).get(BENCH_SCORE)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            return None
        return float(value)

    def players(self) -> list[PlayerInfo]:
        """Every player of the episode, GM included, with old records' names normalised ("Player_1")."""
        raw = (self.interactions or {}).get("players") or {}
        return [_player_info(name, value) for name, value in raw.items()]

    def llm_players(self) -> list[PlayerInfo]:
        """The players whose model is an LLM (not the GM, not programmatic, mock, custom or human)."""
        return [player for player in self.players() if player.is_llm]

    def _events(self, player_name: str) -> Iterator[tuple[int, str, str, bool]]:
        """``(round, role, content, remembered)`` for each message between the GM and ``player_name``."""
        for round_index, round_events in enumerate((self.interactions or {}).get("turns") or []):
            for event in round_events:
                action = event["action"]
                sender, receiver = _player_name(event["from"]), _player_name(event["to"])
                if sender == "GM" and receiver == player_name and action.get("type") == "send message":
                    role = "user"
                elif sender == player_name and receiver == "GM" and action.get("type") == "get message":
                    role = "assistant"
                else:
                    continue
                yield round_index, role, _text(action.get("content")), action.get("label") != "forget"

    def dialogue(self, player_name: str) -> list[dict]:
        """Everything ``player_name`` saw and said, as alternating chat messages starting with the user.

        Replies before any context are dropped (nothing to condition them on); a trailing user message is
        kept, so callers that need a dialogue ending with the assistant trim it.
        """
        messages = [{"role": role, "content": content} for _, role, content, _ in self._events(player_name)]
        while messages and messages[0]["role"] == "assistant":
            messages.pop(0)
        return alternating(messages)

    def llm_turns(self, player_name: str) -> list[RecordedTurn]:
        """Each reply of ``player_name`` with the exact context it answered (its memory plus new messages)."""
        memory: list[dict] = []
        pending: list[tuple[dict, bool]] = []  # user messages since its last reply, and whether remembered
        turns: list[RecordedTurn] = []
        for round_index, role, content, remembered in self._events(player_name):
            message = {"role": role, "content": content}
            if role == "user":
                pending.append((message, remembered))
                continue
            context = alternating(memory + [seen for seen, _ in pending])
            turns.append(RecordedTurn(context=context, response=content, index=len(turns), round=round_index))
            memory += [seen for seen, keep in pending if keep]
            pending = []
            if remembered:
                memory.append(message)
        return turns


def alternating(messages: list[dict]) -> list[dict]:
    """``messages`` with consecutive same-role messages merged by two newlines, as clemcore's backends do."""
    if not messages:
        return []
    from clemcore.backends.utils import ensure_alternating_roles

    return ensure_alternating_roles(messages, cull_system_message=False)


def iter_episodes(
    results_dir: Path, *, on_skip: Callable[[Path, str], None] | None = None
) -> Iterator[EpisodeRecord]:
    """Every readable episode under ``results_dir``, in sorted path order.

    ``results_dir`` may be a results root, a model folder or any folder below. Model, game and experiment
    come from the path (``<model>/<game>/<experiment>/<episode>``), game and experiment from interactions'
    meta where present. An episode that cannot be read (a JSON file that does not parse, ``interactions.json``
    missing or without a ``turns`` list) is not yielded; ``on_skip(path, reason)`` is called once for it
    (default: a logged warning).
    """
    report = on_skip or (lambda path, reason: logger.warning("skipping %s: %s", path, reason))
    for folder in _episode_folders(Path(results_dir)):
        episode, reason = _read_episode(folder)
        if episode is None:
            report(folder, reason)
        else:
            yield episode


@dataclass
class ResultsScan:
    """What a scan of results folders found: the readable episodes and ``(path, reason)`` per skipped one."""

    episodes: list[EpisodeRecord] = field(default_factory=list)
    skipped: list[tuple[Path, str]] = field(default_factory=list)


def scan_results(results_dirs: Iterable[Path]) -> ResultsScan:
    """All episodes under each of ``results_dirs`` (an episode reached twice, e.g. through a root and one of
    its model folders, counts once), and every unreadable one with its reason."""
    scan = ResultsScan()
    seen: set[Path] = set()

    def skip(path: Path, reason: str) -> None:
        if path.resolve() not in seen:
            seen.add(path.resolve())
            scan.skipped.append((path, reason))

    for results_dir in results_dirs:
        for episode in iter_episodes(Path(results_dir), on_skip=skip):
            if episode.path.resolve() not in seen:
                seen.add(episode.path.resolve())
                scan.episodes.append(episode)
    return scan


def candidate_records(episode_dir: Path) -> list[dict]:
    """The guided turns an episode logged in ``candidates.jsonl`` (one JSON object per turn: its candidates, scores,
    chosen and greedy index, ``switched``), in turn order; [] where the file is absent. Lines that are not a
    JSON object are left out (a line cut by a full disk loses that turn, not the episode)."""
    path = Path(episode_dir) / CANDIDATES_FILE
    if not path.is_file():
        return []
    records = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            records.append(record)
    return records


def read_json(path: Path) -> tuple[Any, str]:
    """``(document, "")`` for the JSON file at ``path``, or ``(None, reason)`` when it cannot be read, is not
    UTF-8 JSON or nests deeper than ``MAX_JSON_DEPTH`` levels. Python's bare ``NaN`` / ``Infinity`` parse."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        return None, f"{type(error).__name__}: {error}"
    except RecursionError:
        return None, f"nested more than {MAX_JSON_DEPTH} levels deep"
    if _nested_deeper(document, MAX_JSON_DEPTH):
        return None, f"nested more than {MAX_JSON_DEPTH} levels deep"
    return document, ""


def _nested_deeper(document: Any, limit: int) -> bool:
    stack = [(document, 1)]
    while stack:  # iterative: a recursive walk would fail on the very files it is meant to catch
        value, depth = stack.pop()
        children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else None
        if children is None:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def episode_scores_problem(scores: dict) -> str:
    """Why a scores.json document cannot be counted, or "" when clemcore can count it.

    Its ``episode scores`` must be an object; the flags (Aborted, Success, Lose) and the Main Score finite
    numbers (flags may be booleans) or NaN (clemcore's value for an aborted episode). Anything else (a string,
    Infinity, ``true`` as a Main Score) would turn clemscore into an error or inf. A finite value outside the
    usual range (eqbench's Main Score can be negative) is counted, as clemcore counts it:
    ``episode_scores_oddities`` names it.
    """
    from clemcore.clemgame.metrics import BENCH_SCORE, KEY_EPISODE_SCORES

    episode_scores = scores.get(KEY_EPISODE_SCORES)
    if not isinstance(episode_scores, dict):
        return f"no {KEY_EPISODE_SCORES!r} object"
    for metric in _flag_metrics():
        value = episode_scores.get(metric, 0)
        if not _is_number(value):
            return f"episode score {metric!r} is {_shown(value)}, not a number"
    if BENCH_SCORE in episode_scores:
        value = episode_scores[BENCH_SCORE]
        if isinstance(value, bool) or not _is_number(value):
            return f"episode score {BENCH_SCORE!r} is {_shown(value)}, not a finite number (or NaN)"
    return ""


def episode_scores_oddities(scores: dict) -> list[str]:
    """What is unusual but countable in a scores.json that ``episode_scores_problem`` accepts: a flag other
    than 0 or 1, a Main Score outside 0-100. clemcore counts such values; a reader of the numbers should know."""
    from clemcore.clemgame.metrics import BENCH_SCORE, KEY_EPISODE_SCORES

    episode_scores = scores.get(KEY_EPISODE_SCORES) or {}
    notes = []
    for metric in _flag_metrics():
        value = episode_scores.get(metric, 0)
        if not (math.isnan(value) or value in (0, 1)):
            notes.append(f"{metric} is {_shown(value)}, not 0 or 1")
    value = episode_scores.get(BENCH_SCORE, float("nan"))  # 0-100, NaN for aborted episodes
    if not (math.isnan(value) or 0 <= value <= 100):
        notes.append(f"{BENCH_SCORE} is {_shown(value)}, out of 0-100")
    return notes


def _flag_metrics() -> tuple[str, str, str]:
    """clemcore's outcome flags, Aborted, Success and Lose (imported where scores are read: importing clemcore's
    game framework takes seconds that readers of interactions alone are spared)."""
    from clemcore.clemgame.metrics import METRIC_ABORTED, METRIC_LOSE, METRIC_SUCCESS

    return METRIC_ABORTED, METRIC_SUCCESS, METRIC_LOSE


def _is_number(value) -> bool:
    # finite or NaN; bool is an int subclass (clemcore's flags may be written as booleans); an int too large
    # for a float would overflow clemcore's pandas means
    if not isinstance(value, (int, float)):
        return False
    try:
        return not math.isinf(float(value))
    except OverflowError:
        return False


def _shown(value) -> str:
    return repr(value)[:40] if not isinstance(value, (dict, list)) else f"a {type(value).__name__}"


def _episode_folders(results_dir: Path) -> list[Path]:
    """Folders holding an episode: those with interactions.json or error.json, and empty episode folders
    (``instance_N`` without either, e.g. a run that was killed) so that they are reported, not ignored."""
    folders = []
    for folder, dirs, files in walk_results(results_dir):
        has_episode_children = any(EPISODE_FOLDER.fullmatch(name) for name in dirs)
        if INTERACTIONS_FILE in files or ERROR_FILE in files:
            folders.append(folder)
        elif EPISODE_FOLDER.fullmatch(folder.name) and not has_episode_children:
            folders.append(folder)
    return sorted(folders)


def _read_episode(folder: Path) -> tuple[EpisodeRecord | None, str]:
    documents: dict[str, dict | None] = {}
    for name in (INTERACTIONS_FILE, SCORES_FILE, INSTANCE_FILE, ERROR_FILE):
        file = folder / name
        if not file.is_file():
            documents[name] = None
            continue
        documents[name], reason = read_json(file)
        if reason:
            return None, f"{name} cannot be read ({reason})"
        if not isinstance(documents[name], dict):
            return None, f"{name} holds a {type(documents[name]).__name__}, not a JSON object"
    scores = documents[SCORES_FILE]
    problem = episode_scores_problem(scores) if scores is not None else ""
    if problem:
        return None, f"scores.json: {problem}"
    interactions, error = documents[INTERACTIONS_FILE], documents[ERROR_FILE]
    if interactions is None and error is None:
        return None, "no interactions.json (the episode did not finish; rerun it)"
    if interactions is not None:
        problem = _interactions_problem(interactions)
        if problem:
            return None, f"interactions.json {problem}"
    # episode folders may nest (instance_00000/branch_00001); the experiment is the folder above them
    episode_parts = [folder.name]
    experiment_dir = folder.parent
    while EPISODE_FOLDER.fullmatch(experiment_dir.name) and experiment_dir.parent != experiment_dir:
        episode_parts.insert(0, experiment_dir.name)
        experiment_dir = experiment_dir.parent
    meta = (interactions or {}).get("meta") or {}
    game_dir = experiment_dir.parent
    episode = EpisodeRecord(
        path=folder,
        model=game_dir.parent.name,
        game=meta.get("game_name") or game_dir.name,
        experiment=meta.get("experiment_name") or experiment_dir.name,
        episode="/".join(episode_parts),
        interactions=interactions,
        scores=scores,
        instance=documents[INSTANCE_FILE],
        error=error,
    )
    return episode, ""


def _interactions_problem(interactions: dict) -> str:
    """Why the events cannot be read, or "" when they can (checked once here so later reads never raise)."""
    turns = interactions.get("turns")
    if not isinstance(turns, list) or not all(isinstance(round_events, list) for round_events in turns):
        return "has no 'turns' list of rounds"
    for round_events in turns:
        for event in round_events:
            if not isinstance(event, dict) or not isinstance(event.get("action"), dict) \
                    or not isinstance(event.get("from"), str) or not isinstance(event.get("to"), str):
                return f"has an event without 'from', 'to' and 'action': {str(event)[:120]}"
    if not isinstance(interactions.get("players", {}), dict):
        return "has a 'players' entry that is not an object"
    return ""


def _player_name(name: str) -> str:
    # older referencegame and imagegame records key players as "Player_1" but name them "Player 1" in events
    return re.sub(r"^Player_(\d+)$", r"Player \1", name)


def _player_info(name: str, value) -> PlayerInfo:
    name = _player_name(name)
    if isinstance(value, dict):
        return PlayerInfo(name, value.get("game_role"), str(value.get("model_name") or ""))
    if name == "GM":
        return PlayerInfo(name, "Game Master", "programmatic")
    text = str(value).strip()
    # older records: "Word Guesser (Llama-3.3-70B-Instruct)", "Answerer: Llama-3.3-70B-Instruct" or the model
    in_parentheses = re.fullmatch(r"(.*?)\s*\(([^()]*)\)", text)
    if in_parentheses:
        return PlayerInfo(name, in_parentheses[1] or None, in_parentheses[2].strip())
    if ": " in text:
        role, model = text.split(": ", 1)
        return PlayerInfo(name, role, model.strip())
    return PlayerInfo(name, None, text)


def _flag(value) -> bool | None:
    """A score as a flag: None for NaN or missing (aborted episodes carry NaN episode scores)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return bool(value)


def _text(content) -> str:
    if content is None:
        return ""
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
