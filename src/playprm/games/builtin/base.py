"""The built-in games' base game master (``PromptedGameMaster``) and scorer (``OutcomeScorer``): prompts from
templates, aborts, the outcome keys, GM notes.

Every game logs the episode outcome as the three keys clemcore's ``GameScorer.score_episode`` reads
(``Aborted``, ``Success``, ``Lose``: exactly one of them is 1), and its game facts as GM-to-GM notes
(``log_to_self(type, content)``) that its scorer finds again per round. A broken reply format aborts the
episode, and an aborted episode scores NaN on every game-specific episode score, as clembench does.
"""

from __future__ import annotations

import math
from string import Template
from typing import Any

from clemcore.clemgame import DialogueGameMaster, GameMaster, GameScorer, ParseError
from clemcore.clemgame.master import Outcome
from clemcore.clemgame.metrics import BENCH_SCORE, METRIC_ABORTED, METRIC_LOSE, METRIC_SUCCESS


def log_outcome(game_master: GameMaster) -> None:
    """Log ``Aborted``/``Success``/``Lose`` (0 or 1 each) from the game master's final ``state.outcome``."""
    outcome = game_master.state.outcome
    game_master.log_key(METRIC_ABORTED, int(outcome is Outcome.ABORTED))
    game_master.log_key(METRIC_SUCCESS, int(outcome is Outcome.SUCCESS))
    game_master.log_key(METRIC_LOSE, int(outcome is Outcome.FAILURE))
    game_master.log_to_self("game result", outcome.value)


def gm_notes(round_events: list[dict], note_type: str) -> list[Any]:
    """Contents of the GM-to-GM notes of type ``note_type`` among one round's events, in order."""
    return [
        event["action"]["content"]
        for event in round_events
        if event.get("from") == "GM" and event.get("to") == "GM" and event["action"].get("type") == note_type
    ]


class PromptedGameMaster(DialogueGameMaster):
    """A dialogue game master whose prompts are ``resources/<name>.template`` files (``$name`` placeholders),
    that aborts on a broken reply format and logs its outcome (plus ``episode_facts``) when the game ends."""

    def template(self, name: str, **values) -> str:
        """The prompt ``resources/<name>.template`` with ``values`` filled in."""
        return Template(self.load_template(f"resources/{name}")).substitute(**values).strip()

    def episode_facts(self) -> dict[str, Any]:
        """Game-specific keys to log into interactions.json at the end (for the scorer)."""
        return {}

    def settle_guess(self, note: dict, solved: bool, max_guesses: int) -> int | None:
        """Record a guess (``self.guesses`` and a GM note) of a guessing game: the game succeeds on a solved one and
        fails once ``max_guesses`` are used; otherwise the guesses left (None when the game ended)."""
        self.guesses.append(note)
        self.log_to_self("guess", note)
        if solved:
            self.state.succeed()
            return None
        left = max_guesses - len(self.guesses)
        if left <= 0:
            self.state.failed()
            return None
        return left

    def _on_parse_error(self, error: ParseError):
        self.log_to_self("invalid format", error.reason)
        self.state.abort()

    def _on_after_game(self):
        for key, value in self.episode_facts().items():
            self.log_key(key, value)
        log_outcome(self)


class OutcomeScorer(GameScorer):
    """A scorer whose game-specific episode scores (``episode_score_names``) are NaN for an aborted episode."""

    episode_score_names: tuple[str, ...] = (BENCH_SCORE,)

    def episode_scores(self, interactions: dict) -> dict[str, float]:
        """The scores named in ``episode_score_names`` for an episode that was not aborted."""
        raise NotImplementedError

    def compute_episode_scores(self, interactions: dict) -> None:
        if interactions[METRIC_ABORTED]:
            scores = dict.fromkeys(self.episode_score_names, math.nan)
        else:
            scores = self.episode_scores(interactions)
        for name, value in scores.items():
            self.log_episode_score(name, value)


class GuessingScorer(OutcomeScorer):
    """The episode scores of the bracketed guessing games (mastermind, guessthenumber): a speed-weighted Main Score
    as clembench's wordle counts it (``100 * (max_guesses + 1 - guesses) / max_guesses`` on a win, 0 on a loss),
    the guesses used and the repeated ones (each note's ``repeat``)."""

    episode_score_names = (BENCH_SCORE, "Guesses Used", "Repeated Guesses")

    def episode_scores(self, interactions: dict) -> dict[str, float]:
        guesses = interactions["guesses"]
        max_guesses = int(self.game_instance["max_guesses"])
        speed = 100 * (max_guesses + 1 - len(guesses)) / max_guesses
        return {BENCH_SCORE: speed if interactions[METRIC_SUCCESS] else 0,
                "Guesses Used": len(guesses), "Repeated Guesses": sum(bool(g["repeat"]) for g in guesses)}
