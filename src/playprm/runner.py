"""Play many episodes at once: every policy and PRM call is batched across all episodes in flight.

The runner is the only part that knows both games and search strategies. It plans episodes deterministically
(games, experiments, instances in file order; ``--shard i/n`` takes every n-th), skips those already written
(resume), keeps ``batch_size`` episodes in flight, asks the strategy for all their pending turns in one call,
and writes each finished episode atomically in clemcore's layout. A run holds its folder (``claim``): a lock
against a second run, and a fingerprint check against resuming it with other settings.
"""

from __future__ import annotations

import logging
import sys
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from playprm import atomic, run_lock
from playprm.episode import Episode, EpisodeTask
from playprm.names import check_component, check_inside
from playprm.results.layout import (
    ERROR_FILE,
    EXPERIMENT_FILE,
    RUN_FILE,
    instance_folder,
    is_finished,
)
from playprm.results.run_record import RunRecord, claim_fingerprint
from playprm.results.staging import clean_staging

logger = logging.getLogger(__name__)

POLICY_RETRIES = 1  # a failing policy batch is retried once, then its episodes fail (not the run)


@dataclass
class RunSummary:
    planned: int = 0
    skipped: int = 0  # already written by an earlier run
    played: Counter = field(default_factory=Counter)  # per game
    errored: Counter = field(default_factory=Counter)
    outcomes: Counter = field(default_factory=Counter)
    wall_seconds: float = 0.0
    unit: str = "episodes"  # what `planned` and `skipped` count (rollout trees for collect)

    def lines(self) -> list[str]:
        games = sorted(set(self.played) | set(self.errored))
        rows = [f"  {g}: {self.played[g]} played, {self.errored[g]} errored" for g in games]
        head = (f"{self.planned} {self.unit} planned, {self.skipped} already done; episodes: "
                f"{sum(self.played.values())} played, {sum(self.errored.values())} errored "
                f"in {self.wall_seconds:.1f}s")
        if self.all_errored:
            head += "; every episode errored (see their error.json)"
        return [head, *rows]

    def count(self, episode: Episode) -> None:
        """Tally one finished episode: played (with its outcome) or errored, per game."""
        game = episode.task.game
        if episode.error is None:
            self.played[game] += 1
            self.outcomes[episode.outcome or "unknown"] += 1
        else:
            self.errored[game] += 1

    @property
    def all_errored(self) -> bool:
        """Episodes were played in this run and every one of them errored (the run's exit status is then 1)."""
        return sum(self.errored.values()) > 0 and not sum(self.played.values())


def pair_folder(name: str) -> str:
    """clembench names runs by model pair; self-play uses the same name twice, for one- and two-player games."""
    return check_component(f"{name}--{name}", where="the run folder (from the model name and decoding mode)")


def progress_bar(summary: RunSummary, *, desc: str, show: bool, unit: str = "it"):
    """The terminal progress bar of a run, on stderr, starting after the ``summary.skipped`` done earlier."""
    from tqdm import tqdm

    return tqdm(total=summary.planned, initial=summary.skipped, desc=desc, unit=unit, disable=not show,
                file=sys.stderr, dynamic_ncols=True)


@contextmanager
def open_run(entries, instances: dict, run_dir: Path, fingerprint: dict, **plan_options) -> Iterator[tuple]:
    """What eval and collect do around their loop: load the games' benchmarks, plan the episodes (``plan``'s
    options), hold ``run_dir`` (``claim``) and close the benchmarks at the end. Yields
    ``(tasks, broken games, fingerprint to record)``."""
    benchmarks, broken = load_benchmarks(entries)
    try:
        tasks = plan(entries, instances, benchmarks, run_dir, **plan_options)
        with claim(run_dir, fingerprint) as recorded:
            yield tasks, broken, recorded
    finally:
        for benchmark in benchmarks.values():
            benchmark.close()


@contextmanager
def claim(run_dir: Path, fingerprint: dict) -> Iterator[dict]:
    """Hold ``run_dir`` for the ``with`` block: its lock, then a check that it holds no run with another
    fingerprint; yields the fingerprint to record. Both refusals are one-line UsageErrors, before any model loads."""
    with run_lock.hold(run_dir):
        yield claim_fingerprint(run_dir, fingerprint)


def load_benchmarks(entries) -> tuple[dict, dict]:
    """clemcore GameBenchmarks per game; a game whose code fails to load is returned with its error."""
    from clemcore.clemgame import GameBenchmark

    loaded, broken = {}, {}
    for entry in entries:
        try:
            loaded[entry.name] = GameBenchmark.load_from_spec(entry.spec)
        except Exception as error:  # e.g. a clembench game written for another clemcore version
            if isinstance(error, ModuleNotFoundError) and (error.name or "").startswith("playprm."):
                # `playprm instances` copies the built-in games' code, which imports playprm's own modules
                error = ModuleNotFoundError(f"{error}: this copy of a built-in game was written by another playprm "
                                            "version; write its folder again with `playprm instances`",
                                            name=error.name)
            logger.warning("game %s failed to load: %s", entry.name, error)
            broken[entry.name] = error
    return loaded, broken


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


def write_run_metadata(run_dir: Path, *, policy_name: str, gen_args: dict, games: list, settings: dict,
                       fingerprint: dict) -> None:
    """clemcore's run.json (kept if present) and playprm_run.json: the run's mode fields and fingerprint (from
    ``claim``), and the command's ``settings``."""
    from clemcore import get_version

    run_file = run_dir / RUN_FILE
    if not run_file.exists():
        infos = {str(i): {"model_spec": {"model_name": policy_name, "backend": "playprm"}, "gen_args": gen_args}
                 for i in range(2)}
        atomic.write_json(run_file, {"clem_version": get_version(), "created": datetime.now().isoformat(),
                                     "player_models": infos, "games": {g: {} for g in games}})
    RunRecord.of_run(fingerprint, settings).write(run_dir)


def write_experiment_files(tasks: list[EpisodeTask], policy_name: str, gen_args: dict) -> None:
    seen = set()
    for task in tasks:
        path = task.episode_dir.parent / EXPERIMENT_FILE
        if path in seen or path.exists():
            continue
        seen.add(path)
        config = {k: v for k, v in task.experiment.items() if k != "game_instances"}
        config.update(timestamp=datetime.now().isoformat(), game_name=task.game,
                      player_models={"0": {"model_spec": {"model_name": policy_name}, "gen_args": gen_args}})
        atomic.write_json(path, config)


def _write_errored(task: EpisodeTask, error: BaseException, stage: str) -> None:
    """An episode that could not even start (broken game): an error file where its folder would be."""
    episode = Episode(task=task, env=None, recorders=None)  # type: ignore[arg-type]
    episode.fail(error, stage=stage)
    episode.write()


def play(tasks: list[EpisodeTask], *, policy_name: str, run_dir: Path, gen_args: dict, choose_turns,
         search_episodes=None, batch_size: int = 32, retry_errors: bool = False, broken: dict | None = None,
         on_finished: Callable[[Episode], None] | None = None, progress: bool = True) -> RunSummary:
    """Play ``tasks``. ``choose_turns(episodes)`` plays one pending turn of each episode (per-turn modes);
    ``search_episodes(roots) -> finals`` plays whole episodes (beam modes). The caller holds ``run_dir``
    (``claim``), so every staging folder in it that is not this process's own is stale."""
    summary = RunSummary(planned=len(tasks))
    clean_staging(run_dir, locked=True)
    todo = deque()
    for task in tasks:
        if is_finished(task.episode_dir) and not (retry_errors and (task.episode_dir / ERROR_FILE).exists()):
            summary.skipped += 1
        else:
            todo.append(task)
    start = time.perf_counter()
    bar = progress_bar(summary, desc="episodes", unit="ep", show=progress)

    def finished(episode: Episode) -> None:
        episode.write()
        summary.count(episode)
        if on_finished is not None:
            on_finished(episode)
        bar.update(1)
        bar.set_postfix({g: summary.played[g] + summary.errored[g] for g in sorted(summary.played | summary.errored)})

    active: list[Episode] = []
    while todo or active:
        while todo and len(active) < batch_size:
            task = todo.popleft()
            if task.benchmark is None:
                _write_errored(task, (broken or {}).get(task.game, RuntimeError("game did not load")), "load")
                summary.errored[task.game] += 1
                bar.update(1)
                continue
            episode = Episode.start(task, policy_name, run_dir.name, gen_args)
            if episode.done:
                finished(episode)
            else:
                active.append(episode)
        if not active:
            continue
        if search_episodes is not None:
            finals = _with_retries(search_episodes, active)
            for episode in finals or active:
                finished(episode)
            active = []
            continue
        _with_retries(choose_turns, active)
        still = []
        for episode in active:
            if episode.done:
                finished(episode)
            else:
                still.append(episode)
        active = still
    bar.close()
    summary.wall_seconds = time.perf_counter() - start
    return summary


def _with_retries(call, episodes: list[Episode]):
    """Run ``call(episodes)`` (a policy/PRM batch); retry once on failure, then fail these episodes and let the
    run go on."""
    for attempt in range(POLICY_RETRIES + 1):
        try:
            return call(episodes)
        except Exception as error:  # a backend fault mid-batch
            # a refusal (a server's 4xx: bad key, bad request) would only be refused again
            if attempt < POLICY_RETRIES and getattr(error, "retryable", True):
                logger.warning("policy batch failed (%s); retrying", error)
                continue
            logger.error("policy batch failed twice (%s); failing %d episodes", error, len(episodes))
            for episode in episodes:
                if not episode.done:
                    episode.fail(error, stage="policy")
    return None
