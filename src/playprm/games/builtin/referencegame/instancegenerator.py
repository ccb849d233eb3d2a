"""Writes ``in/instances.json`` for the reference game: two experiments of ten grid triples each, fixed seed.

    python src/playprm/games/builtin/referencegame/instancegenerator.py

- ``letter_grids``: three different capital letters drawn on 5x5 grids (``resources/letter_shapes.json``);
- ``random_grids``: three different random grids with eight to twelve filled cells each.

Each instance holds the describer's grids and target label and the guesser's shuffled grids and target label.
"""

from __future__ import annotations

import random
from pathlib import Path

from playprm.games.builtin.generation import SeededInstanceGenerator

FILLED, EMPTY = "X", "▢"
LABELS = ("first", "second", "third")
SIZE = 5


def render(rows: list[str]) -> str:
    """A grid as players see it: ``X``/``▢`` cells separated by spaces, one row per line."""
    return "\n".join(" ".join(FILLED if cell == "X" else EMPTY for cell in row) for row in rows)


def random_rows(rng: random.Random) -> list[str]:
    """A 5x5 grid (``X``/``.`` rows) with eight to twelve filled cells at random places."""
    filled = set(rng.sample(range(SIZE * SIZE), rng.randint(8, 12)))
    return ["".join("X" if r * SIZE + c in filled else "." for c in range(SIZE)) for r in range(SIZE)]


class ReferenceGameInstanceGenerator(SeededInstanceGenerator):
    """Draws every instance's three grids, target and guesser order from one seeded random generator."""

    def __init__(self):
        super().__init__(Path(__file__).resolve().parent)

    def add_experiments(self, rng: random.Random) -> None:
        shapes = self.resource("letter_shapes.json")
        letters = sorted(k for k in shapes if not k.startswith("_"))
        for name in ("letter_grids", "random_grids"):
            experiment = self.add_experiment(name)
            for _ in range(self.INSTANCES_PER_EXPERIMENT):
                if name == "letter_grids":
                    triple = [render(shapes[letter]) for letter in rng.sample(letters, 3)]
                else:
                    triple = []
                    while len(triple) < 3:  # distinct grids, so that the target is always identifiable
                        grid = render(random_rows(rng))
                        if grid not in triple:
                            triple.append(grid)
                target = rng.randrange(3)
                order = rng.sample(range(3), 3)  # guesser position -> describer position
                self.add_instance(
                    experiment,
                    describer_grids=triple,
                    describer_target=LABELS[target],
                    guesser_grids=[triple[i] for i in order],
                    guesser_target=LABELS[order.index(target)],
                )


if __name__ == "__main__":
    ReferenceGameInstanceGenerator().generate(seed=ReferenceGameInstanceGenerator.SEED)
