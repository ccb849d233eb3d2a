"""Scripted players of the built-in games behind the Policy interface, for tests and the tiny pipeline.

``RandomValidPolicy`` samples random *valid* moves of the built-in games (a wordle guess consistent with all
feedback so far, a random answer in the reference game, a random card word in taboo, the answer in arithmetic).
A random-weight tiny model never wins a game, so the tiny pipeline collects its rollouts with this policy to
have winning trajectories to learn from; the README says so.
"""

from __future__ import annotations

import random
import re
from functools import lru_cache

from playprm.models.base import Candidate, PolicySpec, refuse_prefixes


@lru_cache(maxsize=1)
def _taboo_words() -> list[str]:
    from playprm.games.builtin.taboo.master import card_vocabulary

    return card_vocabulary()


def valid_moves(context: list[dict]) -> list[str]:
    """The legal replies (a sample of them where there are many) for the game and role of this context."""
    from playprm.games.builtin.wordle.rules import wordle_moves

    first = context[0]["content"]
    if "Let's play Wordle" in first:
        return [f"GUESS: {w}\nEXPLANATION: consistent with the feedback so far." for w in wordle_moves(context)]
    if "You are playing Mastermind." in first:  # a random code consistent with all feedback so far
        from playprm.games.builtin.mastermind.rules import format_code, mastermind_moves

        return [format_code(code) for code in mastermind_moves(context)]
    if "You are playing Guess The Number." in first:  # a random number inside the hints
        from playprm.games.builtin.guessthenumber import rules

        return [f"[{n}]" for n in rules.options(tuple(rules.history_of(context)))]
    if "reference game" in first:
        if "Tell which of your grids" in first:
            return [f"ANSWER: {label}" for label in ("first", "second", "third")]
        return ["EXPRESSION: the grid with the most filled cells"]
    if "Let's play Taboo" in first:
        if "The secret word is" in first:
            return ["CLUE: something you can find around you"]
        return [f"GUESS: {w}" for w in _taboo_words()]
    question = re.search(r"Question: What is (\d+) ([+*]) (\d+)\?", first)
    if question:  # arithmetic, the static task: the one right answer
        left, operator, right = int(question.group(1)), question.group(2), int(question.group(3))
        return [str(left + right if operator == "+" else left * right)]
    return ["I do not know this game."]


class RandomValidPolicy:
    """Samples random valid moves; ``temperature == 0`` plays the first valid move deterministically."""

    def __init__(self, name: str = "random-valid"):
        self.spec = PolicySpec(name=name, backend="scripted", model_id="scripted:random-valid")

    def generate(self, contexts, *, n=1, temperature=0.0, max_tokens=256, seed=None, prefixes=None):
        refuse_prefixes(prefixes, "scripted")
        rng = random.Random(seed)
        out = []
        for context in contexts:
            options = valid_moves(context)
            moves = [options[0]] * n if temperature <= 0 else [rng.choice(options) for _ in range(n)]
            out.append([Candidate(text=m, num_tokens=len(m.split()), logprob=0.0) for m in moves])
        return out
