"""The rules of wordle as pure functions: letter feedback, allowed guesses, words consistent with feedback.

Importable on its own (``from playprm.games.builtin.wordle.rules import feedback, valid_words``) by the game
master, the programmatic player and scripted policies in tests; it imports nothing from clemcore.

Feedback is a five-character pattern, one character per guessed letter:

- ``G`` (green): the letter is in the target at this position;
- ``Y`` (yellow): the letter is in the target at another position;
- ``R`` (red): the letter is not in the target, or the guess uses it more often than the target holds it.

Repeated letters follow the usual wordle rule: greens are matched first, then yellows left to right, each
consuming one unmatched occurrence of the letter in the target.

Two vocabularies (an instance's ``"vocabulary"``): ``full``, the 14,430 allowed guesses (clembench's game), and
``small``, the 300 most frequent of them (``resources/small_words.txt``, most frequent first), where every
secret word and every accepted guess is a word of the small list: a list a model trained from scratch can hold.
The game master names the small list in its first message (``SMALL_LIST_NOTE``), which is how a player that sees
only its context (the expert, scripted players) knows which list the game accepts.
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

_RESOURCES = Path(__file__).resolve().parent / "resources"
WORD_FILES = {"full": _RESOURCES / "valid_words.txt", "small": _RESOURCES / "small_words.txt"}
VOCABULARIES = tuple(WORD_FILES)
# the initial prompt's rule on the word list (resources/initial_prompt.template, $word_rule), per vocabulary
WORD_RULES = {
    "full": "Every guess must be a real English word of exactly five letters.",
    "small": "Every guess must be a word of my small word list: the 300 most common five-letter English words. "
             "The secret word is one of them too.",
}
SMALL_LIST_NOTE = "my small word list"
# for a tokenizer trained on wordle's texts (make-tiny --tokenizer-pieces wordle): a five-letter word and one
# letter's feedback ("r=yellow") are pieces of their own, with the space or bracket before them, so that a word is
# one token and a feedback line reads letter by letter (without them the 2026-12-06 probe's tokenizer merged
# "Feedback on guess 1 (rates): r=red a=yellow t=red e" into one token)
TOKEN_PIECES = r" ?\b[a-z]=(?:green|yellow|red)\b|[ (]?\b[a-z]{5}\b| [a-z_-](?![a-z])"


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


def check_vocabulary(vocabulary: str) -> str:
    if vocabulary not in WORD_FILES:
        raise ValueError(f"unknown wordle vocabulary {vocabulary!r}; use one of {', '.join(VOCABULARIES)}")
    return vocabulary


@lru_cache(maxsize=2)
def _valid_words(vocabulary: str = "full") -> tuple[str, ...]:
    with open(WORD_FILES[check_vocabulary(vocabulary)], encoding="utf-8") as f:
        return tuple(line.strip() for line in f if line.strip())


@lru_cache(maxsize=2)
def _valid_word_set(vocabulary: str = "full") -> frozenset[str]:
    return frozenset(_valid_words(vocabulary))


def valid_words(vocabulary: str = "full") -> list[str]:
    """The allowed guesses of a vocabulary, lowercase (written by ``scripts/make_wordlists.py``): ``full``
    sorted, ``small`` most frequent first."""
    return list(_valid_words(vocabulary))


def is_valid_word(word: str, vocabulary: str = "full") -> bool:
    """Whether ``word`` (case-insensitive) is an allowed five-letter guess of the vocabulary."""
    return word.lower() in _valid_word_set(vocabulary)


def vocabulary_of(first_message: str) -> str:
    """The vocabulary of a game from its first message, as a player sees it (``small`` when it names the small
    list)."""
    return "small" if SMALL_LIST_NOTE in first_message else "full"


def expected_left(guess: str, candidates: list[str]) -> float:
    """How many of ``candidates`` (the possible targets, equally likely) are expected to remain possible after
    ``guess`` is answered: the sum over feedback patterns of (targets giving it)² / targets. A guess that is a
    candidate counts its own win as one target left."""
    if not candidates:
        return 0.0
    counts = Counter(feedback(guess, target) for target in candidates)
    return sum(c * c for c in counts.values()) / len(candidates)


def consistent_words(history: Iterable[tuple[str, str]], words: Iterable[str] | None = None,
                     vocabulary: str = "full") -> list[str]:
    """The words that could still be the target after the given feedback.

    Args:
        history: ``(guess, pattern)`` pairs seen so far.
        words: candidates to filter, in the order to keep (default: the vocabulary's words).
        vocabulary: the list ``words`` defaults to.
    Returns:
        The candidates ``w`` with ``feedback(guess, w) == pattern`` for every pair, in input order.
    """
    history = [(guess.lower(), pattern) for guess, pattern in history]
    candidates = valid_words(vocabulary) if words is None else [w.lower() for w in words]
    return [w for w in candidates if all(feedback(g, w) == p for g, p in history)]


def wordle_history(context: list[dict]) -> list[tuple[str, str]]:
    """(guess, G/Y/R pattern) pairs from the game master's feedback messages in a player's ``context``."""
    return [pair for m in context if m["role"] == "user" for pair in read_feedback(m["content"])]


def wordle_vocabulary(context: list[dict]) -> str:
    """The word list of the wordle game in ``context``, as its first message names it."""
    return vocabulary_of(context[0]["content"])


@lru_cache(maxsize=65536)
def wordle_options(history: tuple[tuple[str, str], ...], vocabulary: str = "full") -> tuple[str, ...]:
    """The allowed words consistent with every (guess, pattern) of ``history``, in list order; filtered one
    pair at a time from the cached answer for the shorter history (episodes share their first guesses)."""
    if not history:
        return tuple(valid_words(vocabulary))
    return tuple(consistent_words(history[-1:], wordle_options(history[:-1], vocabulary)))


def wordle_moves(context: list[dict]) -> tuple[str, ...]:
    """The words a guesser may still play: consistent with all feedback (every allowed word when none is)."""
    vocabulary = wordle_vocabulary(context)
    return wordle_options(tuple(wordle_history(context)), vocabulary) or tuple(valid_words(vocabulary))
