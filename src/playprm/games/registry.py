"""Find games and their instances: the built-in pack, a workspace's game_registry.json, a clembench checkout.

Sources, later ones winning on a name clash:

1. the built-in pack (``playprm/games/builtin``);
2. ``game_registry.json`` in the working directory, read as clemcore reads it: a list of entries that are
   either ``{"benchmark_path": DIR}`` (walk DIR for ``clemgame.json`` files) or full game specs with
   ``game_path``; relative paths are relative to that directory;
3. ``--games-dir DIR`` (e.g. a clembench checkout), walked like clemcore's
   ``GameRegistry.register_from_directories``.

Within one source the first spec of a name wins, as in clemcore's own lookup. Nothing here imports torch.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from playprm import atomic
from playprm.errors import UsageError
from playprm.results.layout import instance_folder
from playprm.results.names import check_component

if TYPE_CHECKING:
    from clemcore.clemgame import GameSpec

logger = logging.getLogger(__name__)

SOURCE_BUILTIN = "built-in"
SOURCE_REGISTRY_FILE = "game_registry.json"
SOURCE_GAMES_DIR = "games-dir"
REGISTRY_FILE_NAME = "game_registry.json"
_PLAYER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4}  # older clembench specs spell the count out
# clembench tags its static tasks (static/: bbh, mmlu_pro, ...) "static_1.0"; Playpen selects them by that tag
STATIC_TAG = re.compile(r"^static[_-]v?\d+(\.\d+)*$")


def is_static(benchmarks: list[str]) -> bool:
    """Whether benchmark tags mark a static task: a ``static`` version tag such as ``static_1.0``."""
    return any(isinstance(tag, str) and STATIC_TAG.match(tag) for tag in benchmarks)


@dataclass
class GameEntry:
    """One discovered game: its clemcore spec and where it came from."""

    name: str
    source: str  # "built-in" | "games-dir" | "game_registry.json"
    path: Path  # folder holding clemgame.json
    spec: GameSpec

    @property
    def players(self) -> int:
        """Number of players the game needs (``players`` of clemgame.json)."""
        players = self.spec["players"] if "players" in self.spec else 0
        if isinstance(players, str):
            return int(players) if players.isdigit() else _PLAYER_WORDS.get(players.lower(), 0)
        return int(players)

    @property
    def benchmarks(self) -> list[str]:
        """Benchmark tags of the spec (e.g. ``["static_1.0", "playprm-1.0"]``); empty when it has none."""
        tags = self.spec["benchmark"] if "benchmark" in self.spec else []
        return [tags] if isinstance(tags, str) else list(tags)

    @property
    def static(self) -> bool:
        """A static task (counted by statscore): its benchmark tags include a ``static_<version>`` tag."""
        return is_static(self.benchmarks)

    @property
    def instances_file(self) -> Path:
        """The instances file clemcore would play: ``<path>/in/<instances or "instances">.json``."""
        return self.instances_file_named(None)

    def instances_file_named(self, name: str | None) -> Path:
        """The instances file ``name`` (clem run's ``-i``: a file in the game's ``in/``, ``.json`` optional);
        ``None``: the spec's own (``instances_file``)."""
        if name is None:
            name = self.spec["instances"] if "instances" in self.spec else "instances"
        return self.path / "in" / (name if name.endswith(".json") else f"{name}.json")


def builtin_games_dir() -> Path:
    """The folder of the built-in game pack (one sub-folder per game)."""
    return Path(__file__).resolve().parent / "builtin"


def runs_builtin_code(entry: GameEntry) -> bool:
    """Whether ``entry`` plays a built-in game's own code: the pack's folder or a copy of it (``playprm
    instances`` copies the code beside new instances); a clembench game of the same name has other prompts."""
    own = builtin_games_dir() / entry.name / "master.py"
    theirs = entry.path / "master.py"
    return own.is_file() and theirs.is_file() and theirs.read_bytes() == own.read_bytes()


def runs_another_versions_builtin_code(entry: GameEntry) -> bool:
    """Whether ``entry`` is a built-in game's copy whose code differs from this version's (``playprm instances``
    copied it under another playprm version)."""
    own = builtin_games_dir() / entry.name / "master.py"
    theirs = entry.path / "master.py"
    return own.is_file() and theirs.is_file() and theirs.read_bytes() != own.read_bytes()


def _walk_specs(directory: Path) -> list[GameSpec]:
    """Game specs under ``directory``, found the way clemcore's GameRegistry walks folders (depth <= 3)."""
    from clemcore.clemgame.registry import GameRegistry

    registry = GameRegistry()
    registry.register_from_directories(str(directory), 0)
    return registry.get_game_specs()


def _registry_entries(registry_file: Path) -> list:
    """The entry list of a game_registry.json; UsageError when it is not a JSON list."""
    try:
        entries = json.loads(registry_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise UsageError(f"{registry_file} is not valid JSON ({error}); fix or delete it") from error
    if not isinstance(entries, list):
        raise UsageError(f"{registry_file} must hold a JSON list of game entries; fix or delete it")
    return entries


def _registry_file_specs(registry_file: Path) -> list[GameSpec]:
    """Specs named by a game_registry.json; paths in it are relative to the file's folder."""
    from clemcore.clemgame.registry import GameSpec

    entries = _registry_entries(registry_file)
    specs = []
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict) or not ({"benchmark_path", "game_path"} & entry.keys()):
            raise UsageError(
                f"{registry_file}: entry {index} needs a 'benchmark_path' or a 'game_path'; fix or delete it"
            )
        if "benchmark_path" in entry:
            directory = registry_file.parent / str(entry["benchmark_path"])
            if not directory.is_dir():  # a stale entry should not stop every command in the workspace
                logger.warning("%s: benchmark_path %s is not a directory; skipped", registry_file, directory)
                continue
            specs.extend(_walk_specs(directory.resolve()))
            continue
        if "game_name" not in entry or "players" not in entry:
            raise UsageError(
                f"{registry_file}: entry {index} with a game_path also needs 'game_name' and "
                "'players'; fix or delete it"
            )
        spec_data = {**entry, "game_path": str((registry_file.parent / str(entry["game_path"])).resolve())}
        spec_data.setdefault("lookup_source", str(registry_file))
        specs.append(GameSpec.from_dict(spec_data))
    return specs


def _entry(spec: GameSpec, source: str) -> GameEntry:
    return GameEntry(name=spec["game_name"], source=source, path=Path(spec["game_path"]).resolve(), spec=spec)


def discover_games(games_dir: Path | None = None, cwd: Path | None = None) -> dict[str, GameEntry]:
    """All games visible from ``cwd``, by name.

    Args:
        games_dir: an extra folder of games (e.g. a clembench checkout); its games shadow the others.
        cwd: the workspace whose game_registry.json is read (default: the current directory).
    Returns:
        ``{name: GameEntry}`` in discovery order (built-in first).
    Raises:
        UsageError: ``games_dir`` is missing, not a directory or holds no game; game_registry.json is corrupt.
    """
    cwd = Path.cwd() if cwd is None else Path(cwd)
    sources: list[tuple[str, list[GameSpec]]] = [(SOURCE_BUILTIN, _walk_specs(builtin_games_dir()))]
    registry_file = cwd / REGISTRY_FILE_NAME
    if registry_file.is_file():
        sources.append((SOURCE_REGISTRY_FILE, _registry_file_specs(registry_file)))
    if games_dir is not None:
        games_dir = Path(games_dir)
        if not games_dir.is_dir():
            raise UsageError(
                f"--games-dir {games_dir} is not a directory; give the folder of a clembench "
                "checkout (the one holding game folders with clemgame.json)"
            )
        specs = _walk_specs(games_dir.resolve())
        if not specs:
            raise UsageError(
                f"--games-dir {games_dir} holds no clemgame.json (searched 3 levels deep); "
                "give the folder of a clembench checkout"
            )
        sources.append((SOURCE_GAMES_DIR, specs))
    games: dict[str, GameEntry] = {}
    for source, specs in sources:
        seen: set[str] = set()
        for spec in specs:
            entry = _entry(spec, source)
            if entry.name in seen:
                continue
            seen.add(entry.name)
            known = games.get(entry.name)
            if known is not None and known.path == entry.path:
                continue  # the same folder registered again is no shadowing: keep where it was found first
            games[entry.name] = entry
    return games


def resolve_games(
    names: list[str] | None, *, all_games: bool, games_dir: Path | None = None
) -> list[GameEntry]:
    """The games a command should play, seen from the current directory.

    Args:
        names: game names as given by the user (duplicates are dropped, order kept).
        all_games: select every discovered game instead (sorted by name).
        games_dir: an extra folder of games, as for ``discover_games``.
    Raises:
        UsageError: unknown names, both or neither of names and all_games.
    """
    games = discover_games(games_dir)
    available = ", ".join(sorted(games))
    if all_games and names:
        raise UsageError("give game names or --all, not both")
    if all_games:
        return [_checked(games[name]) for name in sorted(games)]
    if not names:
        raise UsageError(f"no game given; name one or more of: {available} (or pass --all)")
    selected = [entry for selector in names for entry in _selected(selector, games)]
    return [_checked(entry) for entry in {entry.name: entry for entry in selected}.values()]


def _selected(selector: str, games: dict[str, GameEntry]) -> list[GameEntry]:
    """The games of one selector as clem run's ``-g`` takes it: a game name, or a GameSpec-like dict such as
    ``{'benchmark': ['2.0']}`` or ``{'main_game': 'wordle'}``, matched by clemcore's own ``GameRegistry`` over
    the games playprm sees (so both plan the same games)."""
    if not selector.lstrip().startswith("{"):
        if selector not in games:
            raise UsageError(f"unknown game '{selector}'; available: {', '.join(sorted(games))} (add --games-dir "
                             "DIR for clembench games)")
        return [games[selector]]
    from clemcore.clemgame.registry import GameRegistry

    try:
        wanted = json.loads(selector.replace("'", '"'))  # clemcore's own reading of a selector dict
    except json.JSONDecodeError as error:
        raise UsageError(f"game selector {selector} is not a GameSpec dict ({error}); write e.g. "
                         "\"{'benchmark': ['2.0']}\" or a game name") from error
    # clemcore reads every spec's tags for a benchmark selector; a game without tags has none to match
    specs = [e.spec for e in games.values() if not isinstance(wanted, dict) or "benchmark" not in wanted
             or "benchmark" in e.spec]
    registry = GameRegistry(specs)
    try:
        specs = registry.get_game_specs_that_unify_with(selector, verbose=False)
    except (ValueError, KeyError, AttributeError) as error:  # nothing matched; a key a game does not set
        raise UsageError(f"game selector {selector} selects no game ({error}); see `playprm games` for the "
                         "games, their benchmark tags and paths") from error
    return [games[spec["game_name"]] for spec in specs]


def _checked(entry: GameEntry) -> GameEntry:
    """A game to play: its name becomes a results folder, so it must be a safe folder name."""
    origin = entry.spec["lookup_source"] if "lookup_source" in entry.spec else entry.path / "clemgame.json"
    check_component(entry.name, where=f"game_name in {origin}")
    return entry


def load_instances(
    entry: GameEntry, *, limit: int | None = None, experiments: list[str] | None = None,
    instances_file: str | None = None,
) -> list[tuple[dict, dict]]:
    """The game instances of ``entry`` as ``(experiment, game_instance)`` pairs, in file order.

    Args:
        entry: a discovered game.
        limit: keep only the first ``limit`` instances of each experiment (``None``: all).
        experiments: keep only these experiments (``None``: all).
        instances_file: the instances file's name in the game's ``in/`` (clem run's ``-i``; ``None``: the spec's).
    Returns:
        Pairs of the experiment dict without its ``game_instances`` and one game instance dict.
    Raises:
        UsageError: the instances file is missing, empty, not JSON or not shaped as clemcore expects; an
            unknown experiment name; a limit below 1.
    """
    path = entry.instances_file_named(instances_file)
    if limit is not None and limit < 1:
        raise UsageError(f"the instance limit must be at least 1, not {limit}")
    fix = f"regenerate it with {entry.path / 'instancegenerator.py'}"
    if instances_file is not None and not path.is_file():
        names = ", ".join(sorted(p.stem for p in path.parent.glob("*.json"))) or "none"
        raise UsageError(f"{entry.name}: --instances {instances_file}: no {path}; its instances files: {names}")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as error:
        raise UsageError(f"{entry.name}: instances file {path} not found; {fix}") from error
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise UsageError(f"{entry.name}: instances file {path} is not valid JSON ({error}); {fix}") from error
    problem = _instances_shape_problem(data)
    if problem:
        raise UsageError(f"{entry.name}: instances file {path} {problem}; {fix}")
    _check_folder_names(data, path)
    names = [experiment["name"] for experiment in data["experiments"]]
    if experiments is not None:
        unknown = [name for name in experiments if name not in names]
        if unknown:
            raise UsageError(
                f"{entry.name}: unknown experiment(s) {', '.join(unknown)}; available: {', '.join(names)}"
            )
    pairs = []
    for experiment in data["experiments"]:
        if experiments is not None and experiment["name"] not in experiments:
            continue
        config = {key: value for key, value in experiment.items() if key != "game_instances"}
        for game_instance in experiment["game_instances"][:limit]:
            pairs.append((config, game_instance))
    return pairs


def _check_folder_names(data: dict, path: Path) -> None:
    """Experiment names and game_ids become folders: each must be a safe name, and game_ids unique per
    experiment (two instances with one id would write one folder, the second overwriting the first)."""
    experiments: set[str] = set()
    for experiment in data["experiments"]:
        name = check_component(experiment["name"], where=f"{path}: experiment name")
        if name in experiments:
            raise UsageError(f"{path}: experiment {name!r} appears twice; experiment names must be unique")
        experiments.add(name)
        folders: set[str] = set()
        for game_instance in experiment["game_instances"]:
            folder = check_component(instance_folder(game_instance["game_id"]),
                                     where=f"{path}: game_id {game_instance['game_id']!r} in experiment {name!r}")
            if folder in folders:
                raise UsageError(f"{path}: game_id {game_instance['game_id']!r} appears twice in experiment "
                                 f"{name!r}; game_ids must be unique within an experiment")
            folders.add(folder)


def _instances_shape_problem(data) -> str | None:
    """What is wrong with an instances.json document (``None`` when it is shaped as clemcore expects)."""
    if not isinstance(data, dict) or not isinstance(data.get("experiments"), list):
        return "must be an object with an 'experiments' list"
    if not data["experiments"]:
        return "has no experiments"
    total = 0
    for index, experiment in enumerate(data["experiments"]):
        if not isinstance(experiment, dict) or not isinstance(experiment.get("name"), str):
            return f"has an experiment (#{index}) without a 'name'"
        instances = experiment.get("game_instances")
        if not isinstance(instances, list):
            return f"has an experiment '{experiment['name']}' without a 'game_instances' list"
        for game_instance in instances:
            if not isinstance(game_instance, dict) or "game_id" not in game_instance:
                return f"has an instance without a 'game_id' in experiment '{experiment['name']}'"
        total += len(instances)
    if total == 0:
        return "has no game instances"
    return None


def write_game_registry(directory: Path, games_dir: Path | None = None) -> Path:
    """Write or extend ``directory/game_registry.json`` so clemcore's CLI run there finds the built-in games and
    ``games_dir``'s (e.g. a clembench checkout).

    Adds ``{"benchmark_path": <absolute folder>}`` for the built-in pack and for ``games_dir`` unless an entry
    already points there; ``games_dir``'s goes first, as clemcore takes the first game of a name and playprm's
    ``--games-dir`` shadows the built-in games. Every other entry is kept as it was; the file is replaced
    atomically.

    Returns:
        The path of the registry file.
    Raises:
        UsageError: ``directory`` is not a directory, ``games_dir`` holds no game, or the existing file is not
            a JSON list.
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise UsageError(f"{directory} is not a directory; create it first")
    path = directory / REGISTRY_FILE_NAME
    entries = _registry_entries(path) if path.exists() else []

    def registered(folder: Path) -> bool:
        return any(isinstance(entry, dict) and "benchmark_path" in entry
                   and (directory / str(entry["benchmark_path"])).resolve() == folder for entry in entries)

    if not registered(builtin_games_dir()):
        entries.append({"benchmark_path": str(builtin_games_dir())})
    if games_dir is not None:
        discover_games(games_dir, cwd=directory)  # the same refusals as --games-dir everywhere else
        if not registered(Path(games_dir).resolve()):
            entries.insert(0, {"benchmark_path": str(Path(games_dir).resolve())})
    return atomic.write_text(path, json.dumps(entries, indent=2) + "\n")
