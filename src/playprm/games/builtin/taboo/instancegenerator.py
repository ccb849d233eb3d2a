"""Writes ``in/instances.json`` for taboo: two experiments of ten cards each, fixed seed.

python src/playprm/games/builtin/taboo/instancegenerator.py
"""

from __future__ import annotations

import random
from pathlib import Path

from playprm.games.builtin.generation import SeededInstanceGenerator

MAX_TURNS = 3


class TabooInstanceGenerator(SeededInstanceGenerator):
    """One experiment per card group of ``resources/cards.json``; cards sampled without repeats."""

    def __init__(self):
        super().__init__(Path(__file__).resolve().parent)

    def add_experiments(self, rng: random.Random) -> None:
        groups = self.resource("cards.json")
        for name in ("everyday_objects", "nature_and_places"):
            experiment = self.add_experiment(name)
            experiment["max_turns"] = MAX_TURNS
            for card in self.draw(rng, groups[name], self.INSTANCES_PER_EXPERIMENT):
                self.add_instance(
                    experiment,
                    target_word=card["target"],
                    taboo_words=list(card["taboo"]),
                    max_turns=MAX_TURNS,
                )


if __name__ == "__main__":
    TabooInstanceGenerator().generate(seed=TabooInstanceGenerator.SEED)
