"""What the built-in game masters write into ``interactions.json`` and how their scorers read it back.

Every game logs the episode outcome as the three keys clemcore's ``GameScorer.score_episode`` reads
(``Aborted``, ``Success``, ``Lose``: exactly one of them is 1), and its game facts as GM-to-GM notes
(``log_to_self(type, content)``) that the scorer finds again per round.
"""

from __future__ import annotations

from typing import Any

from clemcore.clemgame import GameMaster
from clemcore.clemgame.master import Outcome
from clemcore.clemgame.metrics import METRIC_ABORTED, METRIC_LOSE, METRIC_SUCCESS


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
