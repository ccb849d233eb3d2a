"""Writes ``in/instances.json`` for arithmetic: two experiments of five questions each, fixed seed.

    python src/playprm/games/builtin/arithmetic/instancegenerator.py

- ``addition``: the sum of two numbers from 10 to 99;
- ``multiplication``: the product of a number from 2 to 9 and one from 10 to 99.

Each instance holds the two numbers, the operator as the question writes it and the answer's digits.
"""

from __future__ import annotations

import random
from pathlib import Path

from playprm.games.builtin.generation import SeededInstanceGenerator


class ArithmeticInstanceGenerator(SeededInstanceGenerator):
    """Draws every question's numbers from one seeded random generator; a static task needs few instances."""

    INSTANCES_PER_EXPERIMENT = 5

    def __init__(self):
        super().__init__(Path(__file__).resolve().parent)

    def add_experiments(self, rng: random.Random) -> None:
        for name, operator in (("addition", "+"), ("multiplication", "*")):
            experiment = self.add_experiment(name)
            for _ in range(self.INSTANCES_PER_EXPERIMENT):
                left = rng.randint(10, 99) if operator == "+" else rng.randint(2, 9)
                right = rng.randint(10, 99)
                answer = left + right if operator == "+" else left * right
                self.add_instance(experiment, left=left, operator=operator, right=right, answer=str(answer))


if __name__ == "__main__":
    ArithmeticInstanceGenerator().generate(seed=ArithmeticInstanceGenerator.SEED)
