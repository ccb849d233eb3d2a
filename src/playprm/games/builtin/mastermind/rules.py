"""The rules of mastermind as pure functions: peg feedback, the codes, codes consistent with feedback.

TextArena's Mastermind-v0 rules (the ``textarena`` package, ``envs/Mastermind/env.py``): a secret code of
``CODE_LENGTH`` digits from 1 to ``DIGITS``, no digit twice; a guess is the same kind of code written in square
brackets, ``[2 1 4 5]``; the answer to it is a number of black pegs (a right digit in the right place) and of white
pegs (a right digit in another place). Importable on its own (the game master, the expert, scripted players and
tests use it); it imports nothing from clemcore.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from functools import lru_cache
from itertools import permutations

CODE_LENGTH = 4
DIGITS = 6
Code = tuple[int, ...]
Pegs = tuple[int, int]  # (black, white)
# one answer of the game master (resources/feedback.template), TextArena's wording without "Player 0"
FEEDBACK_LINE = re.compile(r"Submitted \[([0-9 ]+)\]\. Feedback: (\d+) black peg\(s\), (\d+) white peg\(s\)\.")
# a reply's guess: TextArena's square-bracketed list of numbers; the last one in the reply counts
GUESS = re.compile(r"\[\s*(\d+(?:[\s,]+\d+)*)\s*\]")
# for a tokenizer trained on the game's texts (make-tiny --tokenizer-pieces mastermind): each digit and each
# peg count a token of its own, so a code reads digit by digit
TOKEN_PIECES = r"\d|\[|\]"


def pegs(guess: Iterable[int], code: Iterable[int]) -> Pegs:
    """(black, white) of ``guess`` against ``code``: black for a right digit in its place, white for a right digit
    elsewhere (each digit of the code answers at most one digit of the guess)."""
    guess, code = tuple(guess), tuple(code)
    black = sum(g == c for g, c in zip(guess, code, strict=True))
    common = sum((Counter(guess) & Counter(code)).values())
    return black, common - black


@lru_cache(maxsize=4)
def all_codes(length: int = CODE_LENGTH, digits: int = DIGITS) -> tuple[Code, ...]:
    """Every code of ``length`` distinct digits from 1 to ``digits``, in increasing order (360 for 4 of 6)."""
    return tuple(permutations(range(1, digits + 1), length))


def format_code(code: Iterable[int]) -> str:
    """``[2 1 4 5]``: a code as a reply writes it."""
    return "[" + " ".join(str(d) for d in code) + "]"


def last_guess(reply: str) -> list[int] | None:
    """The digits of the reply's last bracketed list (TextArena: the last one counts), None when it has none."""
    found = GUESS.findall(reply)
    return [int(d) for d in re.split(r"[\s,]+", found[-1].strip())] if found else None


def invalid_reason(guess: list[int] | None, length: int = CODE_LENGTH, digits: int = DIGITS) -> str | None:
    """Why ``guess`` is not a code of the game (None when it is one)."""
    if guess is None:
        return "the reply has no guess in square brackets such as [2 1 4 5]"
    if len(guess) != length:
        return f"the guess must have {length} digits, not {len(guess)}"
    if any(d < 1 or d > digits for d in guess):
        return f"every digit must be from 1 to {digits}"
    if len(set(guess)) != len(guess):
        return "no digit may appear twice"
    return None


def read_feedback(text: str) -> list[tuple[Code, Pegs]]:
    """The (guess, (black, white)) pairs of the game master's answers in ``text``, in order."""
    return [(tuple(int(d) for d in guess.split()), (int(black), int(white)))
            for guess, black, white in FEEDBACK_LINE.findall(text)]


def consistent_codes(history: Iterable[tuple[Code, Pegs]], codes: Iterable[Code] | None = None) -> list[Code]:
    """The codes (default: every code) that give every guess of ``history`` the pegs it got, in input order."""
    history = list(history)
    codes = all_codes() if codes is None else codes
    return [c for c in codes if all(pegs(g, c) == p for g, p in history)]


def expected_left(guess: Code, candidates: list[Code]) -> float:
    """How many of ``candidates`` (equally likely codes) are expected to remain possible once ``guess`` is
    answered: the sum over answers of (codes giving it)² / codes."""
    if not candidates:
        return 0.0
    counts = Counter(pegs(guess, c) for c in candidates)
    return sum(n * n for n in counts.values()) / len(candidates)


def mastermind_history(context: list[dict]) -> list[tuple[Code, Pegs]]:
    """(guess, (black, white)) pairs of the game master's answers in a guesser's context (chat messages)."""
    return [pair for m in context if m["role"] == "user" for pair in read_feedback(m["content"])]


@lru_cache(maxsize=65536)
def mastermind_options(history: tuple) -> tuple[Code, ...]:
    """The codes consistent with every answer of ``history``; filtered one answer at a time from the cached
    shorter history (episodes share their first guesses)."""
    if not history:
        return all_codes()
    return tuple(consistent_codes(history[-1:], mastermind_options(history[:-1])))


def mastermind_moves(context: list[dict]) -> tuple[Code, ...]:
    """The codes a guesser may still play: consistent with all feedback (every code when none is)."""
    return mastermind_options(tuple(mastermind_history(context))) or all_codes()
