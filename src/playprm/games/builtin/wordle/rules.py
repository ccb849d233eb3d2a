"""The rules of wordle as pure functions: letter feedback, allowed guesses, words consistent with feedback.

Importable on its own (``from playprm.games.builtin.wordle.rules import feedback, valid_words``) by the game
master, the programmatic player and scripted policies in tests; it imports nothing from clemcore.

Feedback is a five-character pattern, one character per guessed letter:

- ``G`` (green): the letter is in the target at this position;
- ``Y`` (yellow): the letter is in the target at another position;
- ``R`` (red): the letter is not in the target, or the guess uses it more often than the target holds it.

Repeated letters follow the usual wordle rule: greens are matched first, then yellows left to right, each
consuming one unmatched occurrence of the letter in the target.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

WORD_LENGTH = 5
GREEN, YELLOW, RED = "G", "Y", "R"
COLOUR_NAMES = {GREEN: "green", YELLOW: "yellow", RED: "red"}
COLOUR_MARKS = {name: mark for mark, name in COLOUR_NAMES.items()}
# one line of the game master's feedback message (resources/feedback.template) as ``describe_feedback`` writes it
FEEDBACK_LINE = re.compile(r"Feedback on guess \d+ \(([a-z]+)\): ((?:[a-z]=(?:green|yellow|red) ?){5})")
SOLVED = GREEN * WORD_LENGTH

_VALID_WORDS_FILE = Path(__file__).resolve().parent / "resources" / "valid_words.txt"


def feedback(guess: str, target: str) -> str:
    """Letter feedback for ``guess`` against ``target``.

    Args:
        guess: a five-letter word (case-insensitive).
        target: the secret five-letter word (case-insensitive).
    Returns:
        A pattern of ``G``/``Y``/``R`` characters, one per letter of the guess (``"GGGGG"`` when solved).
    Raises:
        ValueError: when either word is not five letters long.
    """
    guess, target = guess.lower(), target.lower()
    if len(guess) != WORD_LENGTH or len(target) != WORD_LENGTH:
        raise ValueError(
            f"wordle feedback needs two {WORD_LENGTH}-letter words, got {guess!r} and {target!r}"
        )
    pattern = [RED] * WORD_LENGTH
    unmatched = Counter()
    for i, (g, t) in enumerate(zip(guess, target, strict=True)):
        if g == t:
            pattern[i] = GREEN
        else:
            unmatched[t] += 1
    for i, g in enumerate(guess):
        if pattern[i] != GREEN and unmatched[g] > 0:
            pattern[i] = YELLOW
            unmatched[g] -= 1
    return "".join(pattern)


def describe_feedback(guess: str, pattern: str) -> str:
    """``"c=red r=yellow a=green n=red e=red"``: the pattern spelled out letter by letter for a prompt."""
    return " ".join(
        f"{letter}={COLOUR_NAMES[mark]}" for letter, mark in zip(guess.lower(), pattern, strict=True)
    )


def read_feedback(text: str) -> list[tuple[str, str]]:
    """The ``(guess, pattern)`` pairs of the game master's feedback lines in ``text``, in order."""
    return [
        (guess, "".join(COLOUR_MARKS[part.split("=")[1]] for part in described.split()))
        for guess, described in FEEDBACK_LINE.findall(text)
    ]


@lru_cache(maxsize=1)
def _valid_words() -> tuple[str, ...]:
    with open(_VALID_WORDS_FILE, encoding="utf-8") as f:
        return tuple(line.strip() for line in f if line.strip())


@lru_cache(maxsize=1)
def _valid_word_set() -> frozenset[str]:
    return frozenset(_valid_words())


def valid_words() -> list[str]:
    """All allowed guesses, sorted and lowercase (written by ``scripts/make_wordlists.py``)."""
    return list(_valid_words())


def is_valid_word(word: str) -> bool:
    """Whether ``word`` (case-insensitive) is an allowed five-letter guess."""
    return word.lower() in _valid_word_set()


def consistent_words(history: Iterable[tuple[str, str]], words: Iterable[str] | None = None) -> list[str]:
    """The words that could still be the target after the given feedback.

    Args:
        history: ``(guess, pattern)`` pairs seen so far.
        words: candidates to filter, in the order to keep (default: all valid words).
    Returns:
        The candidates ``w`` with ``feedback(guess, w) == pattern`` for every pair, in input order.
    """
    history = [(guess.lower(), pattern) for guess, pattern in history]
    candidates = valid_words() if words is None else [w.lower() for w in words]
    return [w for w in candidates if all(feedback(g, w) == p for g, p in history)]
