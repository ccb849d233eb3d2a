"""The base of the built-in instance generators: a fixed seed, a private random generator, running game ids.

Each game's ``instancegenerator.py`` subclasses ``SeededInstanceGenerator`` and is run as a script to rewrite its
committed ``in/instances.json``; the same seed always gives the same file.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from clemcore.clemgame import GameInstanceGenerator


class SeededInstanceGenerator(GameInstanceGenerator):
    """Writes ``<game_dir>/in/instances.json``; subclasses implement ``add_experiments(rng)``.

    Game ids run over all experiments (0, 1, 2, ...), so that an id names one instance of the game.
    """

    SEED = 42
    INSTANCES_PER_EXPERIMENT = 10

    def __init__(self, game_dir: Path):
        super().__init__(str(game_dir))
        self.game_dir = Path(game_dir)
        self._next_game_id = 0

    def resource(self, name: str) -> dict:
        """The JSON file ``resources/<name>`` of the game folder."""
        return json.loads((self.game_dir / "resources" / name).read_text(encoding="utf-8"))

    def add_instance(self, experiment: dict, **fields) -> dict:
        """A new instance of ``experiment`` with the next game id and ``fields``."""
        instance = self.add_game_instance(experiment, self._next_game_id)
        instance.update(fields)
        self._next_game_id += 1
        return instance

    def draw(self, rng: random.Random, pool: list, count: int) -> list:
        """``count`` items of ``pool``: without repeats while the pool lasts, then pass after shuffled pass (every
        item as often as the others, give or take one) — larger splits than a word list has words."""
        if count <= len(pool):
            return rng.sample(pool, count)
        drawn = []
        while len(drawn) < count:
            drawn += rng.sample(pool, min(len(pool), count - len(drawn)))
        return drawn

    def add_experiments(self, rng: random.Random) -> None:
        """Add the experiments and their instances, drawing every random choice from ``rng``."""
        raise NotImplementedError

    def on_generate(self, seed: int, **kwargs):
        self._next_game_id = 0
        self.add_experiments(random.Random(seed))  # private: the output depends on the seed alone
