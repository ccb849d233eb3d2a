"""One run job, shared by eval and collect: the results folder a run plays into, opened new or resumed.

``open_run`` names the folder (clembench's model pair, ``<model>-<tag>--<model>-<tag>``), computes the run's
fingerprint (``results.run_record``), loads the games' benchmarks, plans the episodes and holds the folder: its
lock, then the fingerprint check that refuses resuming another run, both before any model loads. The command
then loads its models and calls ``RunJob.write_metadata``: clemcore's ``run.json``, playprm's
``playprm_run.json`` and each experiment's ``experiment.json``. Playing the planned episodes is the runner's
(eval) or collect's loop.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from playprm import atomic
from playprm.episode import EpisodeTask
from playprm.errors import UsageError
from playprm.play import lock as run_lock
from playprm.results.layout import EXPERIMENT_FILE, RUN_FILE, instance_folder
from playprm.results.names import check_component, check_inside
from playprm.results.run_record import RunRecord, claim_fingerprint, run_fingerprint

logger = logging.getLogger(__name__)


@dataclass
class RunJob:
    """An opened run folder, held until its ``with`` block ends."""

    name: str  # the model name its results carry: "<policy>-<tag>"
    run_dir: Path
    tasks: list[EpisodeTask]  # planned episodes, those already written included (the loop skips them)
    broken: dict[str, BaseException]  # games whose code failed to load: their episodes have no benchmark
    fingerprint: dict  # what playprm_run.json records: this run's, its instances joined with those recorded
    gen_args: dict  # temperature and max_tokens, as clemcore's run.json and experiment.json record them
    game_benchmarks: dict[str, list]  # each game's clemgame.json benchmark tags

    @property
    def broken_games(self) -> dict[str, str]:
        """``{game: why it failed to load}``, as playprm_run.json records it."""
        return {game: str(error) for game, error in self.broken.items()}

    def write_metadata(self, settings: dict) -> None:
        """clemcore's run.json (kept if present), playprm_run.json (the fingerprint's mode fields, then the
        command's ``settings``) and the experiment.json of every experiment with a loaded game."""
        from clemcore import get_version

        run_file = self.run_dir / RUN_FILE
        if not run_file.exists():
            infos = {str(i): {"model_spec": {"model_name": self.name, "backend": "playprm"},
                              "gen_args": self.gen_args} for i in range(2)}
            atomic.write_json(run_file, {"clem_version": get_version(), "created": datetime.now().isoformat(),
                                         "player_models": infos, "games": {g: {} for g in self.game_benchmarks}})
        RunRecord.of_run(self.fingerprint, settings).write(self.run_dir)
        written = set()
        for task in self.tasks:
            path = task.episode_dir.parent / EXPERIMENT_FILE
            if task.benchmark is None or path in written or path.exists():
                continue
            written.add(path)
            config = {k: v for k, v in task.experiment.items() if k != "game_instances"}
            config.update(timestamp=datetime.now().isoformat(), game_name=task.game,
                          player_models={"0": {"model_spec": {"model_name": self.name}, "gen_args": self.gen_args}})
            atomic.write_json(path, config)


@contextmanager
def open_run(results_dir: Path, spec, tag: str, entries, instances: dict, *, settings: dict, temperature: float,
             max_tokens: int, skip_broken: bool = False, **plan_options) -> Iterator[RunJob]:
    """Open (or resume) the run of policy ``spec`` with folder tag ``tag`` under ``results_dir`` for the
    ``with`` block. ``settings``: what changes the run's numbers besides the policy and the instances (its
    fingerprint; ``mode`` and ``env_lookahead`` among them); ``skip_broken``: ``load_benchmarks``';
    ``plan_options``: ``plan``'s. The refusals (a game that cannot load, another run holds the folder, or it
    recorded other settings) are one-line UsageErrors, raised before anything is written."""
    name = f"{spec.name}-{tag}"
    run_dir = results_dir / pair_folder(name)
    fingerprint = run_fingerprint(spec, settings, instances)
    benchmarks, broken = load_benchmarks(entries, skip_broken=skip_broken)
    try:
        tasks = plan(entries, instances, benchmarks, run_dir, **plan_options)
        with run_lock.hold(run_dir):
            yield RunJob(name=name, run_dir=run_dir, tasks=tasks, broken=broken,
                         fingerprint=claim_fingerprint(run_dir, fingerprint),
                         gen_args={"temperature": temperature, "max_tokens": max_tokens},
                         game_benchmarks={entry.name: entry.benchmarks for entry in entries})
    finally:
        for benchmark in benchmarks.values():
            benchmark.close()


def prepare_games(games: list[str], game_all: bool, games_dir: Path | None, limit: int | None, *,
                  experiment: str | None = None, instances_file: str | None = None):
    """Resolve games and read their instances (all validation, no model): ``(entries, {game: [(experiment,
    instance), ...]})``. The one selection of eval, collect and the presets, as clem run's: ``games`` are names
    or GameSpec dicts (``-g``), ``experiment`` keeps that experiment (``-e``; games without it drop out, as clem
    run plays none of theirs), ``instances_file`` is the file in each game's ``in/`` (``-i``); ``limit`` keeps
    the first N instances of each experiment."""
    from playprm.games.registry import load_instances, resolve_games

    entries = resolve_games(games or None, all_games=game_all, games_dir=games_dir)
    instances = {entry.name: load_instances(entry, limit=limit, instances_file=instances_file) for entry in entries}
    if experiment is not None:
        names = sorted({e["name"] for rows in instances.values() for e, _ in rows})
        instances = {game: [(e, i) for e, i in rows if e["name"] == experiment] for game, rows in instances.items()}
        if not any(instances.values()):
            raise UsageError(f"--experiment {experiment}: no selected game has it; their experiments: "
                             f"{', '.join(names)}")
        entries = [entry for entry in entries if instances[entry.name]]
        instances = {entry.name: instances[entry.name] for entry in entries}
    empty = [name for name, rows in instances.items() if not rows]
    if empty:
        raise UsageError(f"no instances to play for {', '.join(empty)}; check their in/instances.json")
    return entries, instances


def pair_folder(name: str) -> str:
    """clembench names runs by model pair; self-play uses the same name twice, for one- and two-player games."""
    return check_component(f"{name}--{name}", where="the run folder (from the model name and decoding mode)")


def load_benchmarks(entries, *, skip_broken: bool = False) -> tuple[dict, dict]:
    """clemcore GameBenchmarks per game, every one loaded before any model. A game whose code fails to load is a
    UsageError naming the game, what failed and a fix; with ``skip_broken`` it is returned with its error
    instead (its episodes then fail with that error, as clem run records one)."""
    from clemcore.clemgame import GameBenchmark

    loaded, broken = {}, {}
    for entry in entries:
        try:
            loaded[entry.name] = GameBenchmark.load_from_spec(entry.spec)
        except Exception as error:  # e.g. a package the game needs, or a game written for another clemcore version
            if not skip_broken:
                for benchmark in loaded.values():
                    benchmark.close()
                raise UsageError(f"{load_failure(entry, error)}; or add --skip-broken-games to play the other "
                                 "games and record this one's episodes as errors") from error
            logger.warning("%s (its episodes are recorded as errors)", load_failure(entry, error))
            broken[entry.name] = error
    return loaded, broken


def load_failure(entry, error: BaseException) -> str:
    """One line on a game that failed to load: the game, what failed (the missing module, the file and line
    of the game's code) and how to fix it."""
    if isinstance(error, ModuleNotFoundError) and (error.name or "").startswith("playprm."):
        # `playprm instances` copies the built-in games' code, which imports playprm's own modules
        return (f"game {entry.name} cannot load: {error}: this copy of a built-in game was written by another "
                "playprm version; write its folder again with `playprm instances`")
    frames = [f for f in traceback.extract_tb(error.__traceback__) if Path(f.filename).is_relative_to(entry.path)]
    where = f" at {frames[-1].filename}:{frames[-1].lineno}" if frames else ""
    if isinstance(error, ModuleNotFoundError):
        # a clembench checkout lists each suite's packages in a requirements.txt beside its games
        requirements = [p for p in (entry.path / "requirements.txt", entry.path.parent / "requirements.txt")
                        if p.is_file()]
        module = error.name or str(error)
        install = f"pip install -r {requirements[0]}" if requirements else f"pip install {module.split('.')[0]}"
        return (f"game {entry.name} cannot load: it imports {module!r}, which is not installed{where}; "
                f"install what the game needs ({install}) into this Python environment")
    # one line, however many the error has (nltk's missing-resource banner has twenty)
    words = " ".join(word for word in str(error).split() if set(word) != {"*"})
    text = words if len(words) <= 240 else words[:240] + "..."
    return (f"game {entry.name} cannot load: {type(error).__name__}: {text}{where}; fix the game's code or "
            "files, or leave the game out")


def plan(entries, instances: dict, benchmarks: dict, run_dir: Path, *, samples: int = 1,
         shard: tuple[int, int] | None = None, folder: Callable | None = None) -> list[EpisodeTask]:
    """Episodes to play, in a deterministic order; ``instances[game]`` is a list of (experiment, instance)."""
    tasks = []
    for entry in entries:
        for experiment, instance in instances[entry.name]:
            for sample in range(samples):
                name = folder(instance, sample) if folder else instance_folder(instance.get("game_id"))
                episode_dir = check_inside(run_dir / entry.name / experiment["name"] / name, run_dir)
                tasks.append(EpisodeTask(
                    game=entry.name, benchmark=benchmarks.get(entry.name), experiment=experiment,
                    instance=instance, episode_dir=episode_dir, sample=sample,
                ))
    if shard is not None:
        index, count = shard
        tasks = [t for i, t in enumerate(tasks) if i % count == index]
    return tasks
