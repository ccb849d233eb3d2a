"""Writes ``in/instances.json`` for mastermind: one experiment of secret codes, fixed seed.

python src/playprm/games/builtin/mastermind/instancegenerator.py

Codes are drawn without repeats from the 360 codes of four different digits from 1 to 6; ``EXCLUDED_TARGETS``
(the codes of ``--exclude`` splits, written ``"2 1 4 5"``) are never drawn, so training, held-out and validation
splits share no code.
"""

from __future__ import annotations

import random
from pathlib import Path

from playprm.games.builtin.generation import SeededInstanceGenerator
from playprm.games.builtin.mastermind.rules import all_codes

MAX_GUESSES = 6  # master.py: a guesser that keeps to the feedback needs at most six, one that ignores it runs out


def code_key(code) -> str:
    """``"2 1 4 5"``: what a split compares to keep codes apart."""
    return " ".join(str(d) for d in code)


class MastermindInstanceGenerator(SeededInstanceGenerator):
    """One experiment ``four_of_six``: codes of four different digits from 1 to 6."""

    EXCLUDED_TARGETS: frozenset[str] = frozenset()

    def __init__(self):
        super().__init__(Path(__file__).resolve().parent)

    def add_experiments(self, rng: random.Random) -> None:
        experiment = self.add_experiment("four_of_six")
        experiment["max_guesses"] = MAX_GUESSES
        pool = [c for c in all_codes() if code_key(c) not in self.EXCLUDED_TARGETS]
        if not pool:
            raise ValueError("every code is a target of an excluded split")
        for code in self.draw(rng, pool, min(self.INSTANCES_PER_EXPERIMENT, len(pool))):
            self.add_instance(experiment, code=list(code), max_guesses=MAX_GUESSES)


if __name__ == "__main__":
    MastermindInstanceGenerator().generate(seed=MastermindInstanceGenerator.SEED)
