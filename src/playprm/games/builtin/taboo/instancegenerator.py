"""Writes ``in/instances.json`` for taboo: two experiments of ten cards each, fixed seed.

python src/playprm/games/builtin/taboo/instancegenerator.py
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from clemcore.clemgame import GameInstanceGenerator

SEED = 42
INSTANCES_PER_EXPERIMENT = 10
MAX_TURNS = 3
GAME_DIR = Path(__file__).resolve().parent


class TabooInstanceGenerator(GameInstanceGenerator):
    """One experiment per card group of ``resources/cards.json``; cards sampled without repeats."""

    def __init__(self):
        super().__init__(str(GAME_DIR))

    def on_generate(self, seed: int, **kwargs):
        rng = random.Random(seed)  # a private generator: the output does not depend on other random users
        groups = json.loads((GAME_DIR / "resources" / "cards.json").read_text(encoding="utf-8"))
        game_id = 0
        for name in ("everyday_objects", "nature_and_places"):
            experiment = self.add_experiment(name)
            experiment["max_turns"] = MAX_TURNS
            for card in rng.sample(groups[name], INSTANCES_PER_EXPERIMENT):
                instance = self.add_game_instance(experiment, game_id)
                instance["target_word"] = card["target"]
                instance["taboo_words"] = list(card["taboo"])
                instance["max_turns"] = MAX_TURNS
                game_id += 1


if __name__ == "__main__":
    TabooInstanceGenerator().generate(seed=SEED)
