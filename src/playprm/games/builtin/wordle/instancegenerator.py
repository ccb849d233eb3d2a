"""Writes ``in/instances.json`` for wordle: two experiments of ten secret words each, fixed seed.

python src/playprm/games/builtin/wordle/instancegenerator.py
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from clemcore.clemgame import GameInstanceGenerator

SEED = 42
INSTANCES_PER_EXPERIMENT = 10
MAX_GUESSES = 6
GAME_DIR = Path(__file__).resolve().parent


class WordleInstanceGenerator(GameInstanceGenerator):
    """One experiment per word group of ``resources/target_words.json``; targets sampled without repeats."""

    def __init__(self):
        super().__init__(str(GAME_DIR))

    def on_generate(self, seed: int, **kwargs):
        from playprm.games.builtin.wordle.rules import is_valid_word

        rng = random.Random(seed)  # a private generator: the output does not depend on other random users
        groups = json.loads((GAME_DIR / "resources" / "target_words.json").read_text(encoding="utf-8"))
        game_id = 0
        for name in ("high_frequency_words", "medium_frequency_words"):
            words = groups[name]
            unknown = [w for w in words if not is_valid_word(w)]
            if unknown:
                raise ValueError(f"target words missing from the word list: {unknown}")
            experiment = self.add_experiment(name)
            experiment["max_guesses"] = MAX_GUESSES
            for word in rng.sample(words, INSTANCES_PER_EXPERIMENT):
                instance = self.add_game_instance(experiment, game_id)
                instance["target_word"] = word
                instance["max_guesses"] = MAX_GUESSES
                game_id += 1


if __name__ == "__main__":
    WordleInstanceGenerator().generate(seed=SEED)
