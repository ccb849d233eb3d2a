"""The rules of guess-the-number as pure functions: the hint, the numbers consistent with the hints so far.

TextArena's GuessTheNumber-v0 (hardcore: a secret number from 1 to 100): a guess is a number in square brackets,
``[50]`` (the last bracketed number of a reply counts), answered with whether the secret number is higher or lower.
Importable on its own (the game master, the expert, scripted players and tests); it imports nothing from clemcore.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from functools import lru_cache

LOWEST, HIGHEST = 1, 100
Hint = str  # "higher" or "lower": where the secret number is, seen from the guess
# one answer of the game master (resources/feedback.template)
FEEDBACK_LINE = re.compile(r"Submitted \[(\d+)\]\. The number is (higher|lower) than \d+\.")
GUESS = re.compile(r"\[\s*(-?\d+)\s*\]")
# for a tokenizer trained on the game's texts (make-tiny --tokenizer-pieces guessthenumber): a number up to 100 and
# its brackets are pieces of their own
TOKEN_PIECES = r"\b\d{1,3}\b|\[|\]"


def hint(guess: int, number: int) -> Hint | None:
    """Where ``number`` lies from ``guess``: "higher", "lower", or None when the guess is it."""
    return None if guess == number else ("higher" if number > guess else "lower")


def last_guess(reply: str) -> int | None:
    """The reply's last bracketed number (None when it has none)."""
    found = GUESS.findall(reply)
    return int(found[-1]) if found else None


def invalid_reason(guess: int | None) -> str | None:
    """Why ``guess`` is not a move of the game (None when it is one)."""
    if guess is None:
        return "the reply has no number in square brackets such as [50]"
    if not LOWEST <= guess <= HIGHEST:
        return f"the number must be from {LOWEST} to {HIGHEST}"
    return None


def read_feedback(text: str) -> list[tuple[int, Hint]]:
    """The (guess, hint) pairs of the game master's answers in ``text``, in order."""
    return [(int(guess), direction) for guess, direction in FEEDBACK_LINE.findall(text)]


def history_of(context: list[dict]) -> list[tuple[int, Hint]]:
    """(guess, hint) pairs of the game master's answers in a guesser's context (chat messages)."""
    return [pair for m in context if m["role"] == "user" for pair in read_feedback(m["content"])]


@lru_cache(maxsize=65536)
def options(history: tuple) -> tuple[int, ...]:
    """The numbers consistent with every hint of ``history`` (every number when none is)."""
    fitting = tuple(n for n in range(LOWEST, HIGHEST + 1) if all(hint(g, n) == h for g, h in history))
    return fitting or tuple(range(LOWEST, HIGHEST + 1))


def expected_left(guess: int, candidates: Iterable[int]) -> float:
    """How many of ``candidates`` (equally likely) are expected to remain possible once ``guess`` is answered."""
    candidates = list(candidates)
    if not candidates:
        return 0.0
    counts = Counter(hint(guess, n) for n in candidates)
    return sum(c * c for h, c in counts.items() if h is not None) / len(candidates)
