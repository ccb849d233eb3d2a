"""Writes ``in/instances.json`` for wordle: two experiments of ten secret words each, fixed seed.

python src/playprm/games/builtin/wordle/instancegenerator.py

Training and held-out splits (``playprm instances``) set ``ALLOWED_TARGETS``: one experiment whose secret words
are drawn from all 14,430 allowed guesses, since the two frequency lists hold only 70 words and a held-out
split of them would repeat the training instances. With ``VOCABULARY = "small"`` (``instances --vocabulary
small``) that experiment is ``small_words``: targets from the 300-word list, and every instance plays with it.
``EXCLUDED_TARGETS`` (the targets of ``--exclude`` splits) are never drawn, so a held-out split of the small
list takes the words training left rather than repeating and dropping training's.
"""

from __future__ import annotations

import random
from pathlib import Path

from playprm.games.builtin.generation import SeededInstanceGenerator
from playprm.games.builtin.wordle.rules import is_valid_word, valid_words

MAX_GUESSES = 6


class WordleInstanceGenerator(SeededInstanceGenerator):
    """One experiment per word group of ``resources/target_words.json``, or with ``ALLOWED_TARGETS`` one
    experiment ``allowed_words`` over every allowed guess; targets sampled without repeats."""

    ALLOWED_TARGETS = False
    VOCABULARY = "full"
    EXCLUDED_TARGETS: frozenset[str] = frozenset()

    def __init__(self):
        super().__init__(Path(__file__).resolve().parent)

    def add_experiments(self, rng: random.Random) -> None:
        if self.ALLOWED_TARGETS:
            small = self.VOCABULARY == "small"
            experiment = self.add_experiment("small_words" if small else "allowed_words")
            experiment["max_guesses"] = MAX_GUESSES
            pool = [w for w in valid_words(self.VOCABULARY) if w not in self.EXCLUDED_TARGETS]
            if not pool:
                raise ValueError(f"every word of the {self.VOCABULARY} list is a target of an excluded split")
            fields = {"vocabulary": "small"} if small else {}
            for word in self.draw(rng, pool, min(self.INSTANCES_PER_EXPERIMENT, len(pool))):
                self.add_instance(experiment, target_word=word, max_guesses=MAX_GUESSES, **fields)
            return
        groups = self.resource("target_words.json")
        for name in ("high_frequency_words", "medium_frequency_words"):
            unknown = [w for w in groups[name] if not is_valid_word(w)]
            if unknown:
                raise ValueError(f"target words missing from the word list: {unknown}")
            experiment = self.add_experiment(name)
            experiment["max_guesses"] = MAX_GUESSES
            for word in self.draw(rng, groups[name], self.INSTANCES_PER_EXPERIMENT):
                self.add_instance(experiment, target_word=word, max_guesses=MAX_GUESSES)


if __name__ == "__main__":
    WordleInstanceGenerator().generate(seed=WordleInstanceGenerator.SEED)
