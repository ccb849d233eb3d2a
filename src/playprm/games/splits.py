"""Instance splits of the built-in games: a games folder with freshly generated instances, for ``--games-dir``.

The built-in games ship 20 instances each; training needs more, and an honest evaluation needs instances no
training example came from. ``write_split`` copies the built-in game folders into a new folder and writes each
game's ``in/instances.json`` from the game's own seeded instance generator with another seed and size. Instances
whose content (everything but ``game_id``) equals an instance of an ``exclude`` split are dropped, so a held-out
split never repeats a training instance. Mastermind's splits share no secret code (360 in all). Wordle's splits draw their secret words from all 14,430 allowed guesses
(its built-in lists hold 70), or from the 300-word small list (``vocabulary="small"``), never a target of an
``exclude`` split, so a held-out split shares no target with the training split; taboo's 24 card
words cannot be held out (every new draw repeats a training instance and is dropped). ``split.json`` counts
both per game; writing more games into an existing split folder keeps the games already there.
"""

from __future__ import annotations

import importlib
import json
import shutil
from pathlib import Path

from playprm import atomic
from playprm.errors import UsageError

SPLIT_FILE = "split.json"
GENERATORS = {  # built-in game -> its instance generator class (module instancegenerator.py of the game)
    "wordle": "WordleInstanceGenerator",
    "taboo": "TabooInstanceGenerator",
    "referencegame": "ReferenceGameInstanceGenerator",
    "mastermind": "MastermindInstanceGenerator",
    "guessthenumber": "GuessTheNumberInstanceGenerator",
}


def _content(instance: dict) -> str:
    return json.dumps({k: v for k, v in instance.items() if k != "game_id"}, sort_keys=True)


def split_instances(games_dir: Path) -> dict[str, list[dict]]:
    """``{game: [instance, ...]}`` of a split folder written by ``write_split`` (or of any games folder)."""
    found = {}
    for path in sorted(Path(games_dir).glob("*/in/instances.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        found[path.parents[1].name] = [i for e in data["experiments"] for i in e["game_instances"]]
    return found


def generate(game: str, seed: int, per_experiment: int, *, vocabulary: str = "full",
             excluded_targets: frozenset[str] = frozenset()) -> dict:
    """The instances document of a built-in game from its generator, with ``seed`` and ``per_experiment``
    (wordle: targets from ``vocabulary``'s list, none of ``excluded_targets``)."""
    module = importlib.import_module(f"playprm.games.builtin.{game}.instancegenerator")
    generator = getattr(module, GENERATORS[game])()
    generator.INSTANCES_PER_EXPERIMENT = per_experiment
    if game == "wordle":
        generator.ALLOWED_TARGETS = True  # the 70 listed secret words cannot be held out
        generator.VOCABULARY = vocabulary
        generator.EXCLUDED_TARGETS = excluded_targets
    if game in ("mastermind", "guessthenumber"):  # 360 codes, 100 numbers: a held-out split takes what training left
        generator.EXCLUDED_TARGETS = excluded_targets
    generator.on_generate(seed)
    return generator.instances


def write_split(out: Path, *, seed: int, per_experiment: int, games: list[str] | None = None,
                exclude: list[Path] = (), vocabulary: str = "full") -> dict:
    """Write the split folder ``out`` and return its summary (also written as ``out/split.json``).

    Raises:
        UsageError: an unknown game or vocabulary, ``per_experiment`` below 1, an ``exclude`` folder that is not
            a split, a small-vocabulary split with no target left.
    """
    from playprm.games.builtin.wordle.rules import VOCABULARIES
    from playprm.games.registry import builtin_games_dir

    if vocabulary not in VOCABULARIES:
        raise UsageError(f"--vocabulary {vocabulary}: wordle's lists are {', '.join(VOCABULARIES)}")

    games = games or sorted(GENERATORS)
    unknown = [g for g in games if g not in GENERATORS]
    if unknown:
        raise UsageError(f"--game {', '.join(unknown)}: splits exist for the built-in games "
                         f"{', '.join(sorted(GENERATORS))}")
    if per_experiment < 1:
        raise UsageError(f"--per-experiment {per_experiment} must be at least 1")
    excluded_instances: dict[str, list[dict]] = {}
    for folder in exclude:
        if not Path(folder).is_dir():
            raise UsageError(f"--exclude {folder} is not a directory; give a split folder written by this command")
        for game, instances in split_instances(Path(folder)).items():
            excluded_instances.setdefault(game, []).extend(instances)
    excluded = {game: {_content(i) for i in rows} for game, rows in excluded_instances.items()}
    summary = {"games": {}}
    for game in games:
        taken = frozenset(_target(i) for i in excluded_instances.get(game, []))
        try:
            document = generate(game, seed, per_experiment, vocabulary=vocabulary, excluded_targets=taken)
        except ValueError as error:  # the generator's own check, e.g. no small-list word left to hold out
            raise UsageError(f"--game {game}: {error}; exclude fewer splits or train on fewer targets") from None
        dropped, kept_ids = 0, 0
        for experiment in document["experiments"]:
            kept = []
            for instance in experiment["game_instances"]:
                if _content(instance) in excluded.get(game, set()):
                    dropped += 1
                    continue
                kept.append({**instance, "game_id": kept_ids})
                kept_ids += 1
            experiment["game_instances"] = kept
        target = Path(out) / game
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(builtin_games_dir() / game, target, ignore=shutil.ignore_patterns("__pycache__", "in"))
        atomic.write_json(target / "in" / "instances.json", document)
        shared = sum(1 for e in document["experiments"] for i in e["game_instances"] if _target(i) in taken)
        summary["games"][game] = {"seed": seed, "per_experiment": per_experiment,
                                  "exclude": [str(p) for p in exclude], "instances": kept_ids,
                                  **({"vocabulary": vocabulary} if game == "wordle" else {}),
                                  "dropped_as_in_exclude": dropped,
                                  "target_shared_with_exclude": shared}
    path = Path(out) / SPLIT_FILE
    earlier = json.loads(path.read_text(encoding="utf-8"))["games"] if path.is_file() else {}
    atomic.write_json(path, {"games": {**earlier, **summary["games"]}})
    return summary


def _target(instance: dict) -> str:
    """What an instance asks for: the secret word or code, or the reference game's target grid."""
    if "target_word" in instance:
        return instance["target_word"]
    if "code" in instance:
        return " ".join(str(d) for d in instance["code"])
    if "number" in instance:
        return str(instance["number"])
    grids = instance.get("describer_grids") or []
    labels = ("first", "second", "third")
    return grids[labels.index(instance["describer_target"])] if grids else ""
