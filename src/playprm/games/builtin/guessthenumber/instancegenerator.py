"""Writes ``in/instances.json`` for guessthenumber: one experiment of secret numbers from 1 to 100, fixed seed.

python src/playprm/games/builtin/guessthenumber/instancegenerator.py

``EXCLUDED_TARGETS`` (the numbers of ``--exclude`` splits, as text) are never drawn, so splits share no number.
"""

from __future__ import annotations

import random
from pathlib import Path

from playprm.games.builtin.generation import SeededInstanceGenerator
from playprm.games.builtin.guessthenumber.rules import HIGHEST, LOWEST

MAX_GUESSES = 10  # master.py: a guesser inside the hints rarely needs more, one that ignores them mostly runs out


class GuessTheNumberInstanceGenerator(SeededInstanceGenerator):
    """One experiment ``one_to_hundred``: secret numbers drawn without repeats."""

    EXCLUDED_TARGETS: frozenset[str] = frozenset()

    def __init__(self):
        super().__init__(Path(__file__).resolve().parent)

    def add_experiments(self, rng: random.Random) -> None:
        experiment = self.add_experiment("one_to_hundred")
        experiment["max_guesses"] = MAX_GUESSES
        pool = [n for n in range(LOWEST, HIGHEST + 1) if str(n) not in self.EXCLUDED_TARGETS]
        if not pool:
            raise ValueError("every number is a target of an excluded split")
        for number in self.draw(rng, pool, min(self.INSTANCES_PER_EXPERIMENT, len(pool))):
            self.add_instance(experiment, number=number, max_guesses=MAX_GUESSES)


if __name__ == "__main__":
    GuessTheNumberInstanceGenerator().generate(seed=GuessTheNumberInstanceGenerator.SEED)
