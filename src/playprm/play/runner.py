"""Play many episodes at once: every policy and PRM call is batched across all episodes in flight.

The runner is the only part that knows both games and search strategies. It takes the episodes a run job
planned (``run_job.open_run``: the folder named, held and fingerprinted), skips those already written (resume),
keeps ``batch_size`` episodes in flight, asks the strategy for all their pending turns in one call, and writes
each finished episode atomically in clemcore's layout.
"""

from __future__ import annotations

import logging
import sys
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from playprm.episode import Episode, EpisodeTask
from playprm.results.layout import ERROR_FILE, is_finished
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


def progress_bar(summary: RunSummary, *, desc: str, show: bool, unit: str = "it"):
    """The terminal progress bar of a run, on stderr, starting after the ``summary.skipped`` done earlier."""
    from tqdm import tqdm

    return tqdm(total=summary.planned, initial=summary.skipped, desc=desc, unit=unit, disable=not show,
                file=sys.stderr, dynamic_ncols=True)


def play(tasks: list[EpisodeTask], *, policy_name: str, run_dir: Path, gen_args: dict,
         play_episodes: Callable[[list[Episode]], list[Episode]], batch_size: int = 32, retry_errors: bool = False,
         broken: dict | None = None, on_finished: Callable[[Episode], None] | None = None,
         progress: bool = True) -> RunSummary:
    """Play ``tasks``. ``play_episodes(episodes)`` advances the episodes in flight (``evaluation.episode_player``:
    one turn each in per-turn modes, to the end in per-episode ones) and returns those that now stand for them.
    The caller holds ``run_dir`` (``run_job.open_run``), so every staging folder in it that is not this
    process's own is stale."""
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
                Episode.failed(task, load_error(broken, task), stage="load").write()
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
        still = []
        for episode in with_retries(play_episodes, active) or active:
            if episode.done:
                finished(episode)
            else:
                still.append(episode)
        active = still
    bar.close()
    summary.wall_seconds = time.perf_counter() - start
    return summary


def load_error(broken: dict | None, task: EpisodeTask) -> BaseException:
    """Why ``task``'s game did not load (``RunJob.broken``), for its episodes' error records."""
    return (broken or {}).get(task.game, RuntimeError(f"game {task.game} did not load"))


def with_retries(call, episodes: list[Episode]):
    """Run ``call(episodes)`` (a policy/PRM batch); retry once on failure, then fail these episodes and let the
    run go on. A game's own failure never reaches here: ``Episode.play`` and ``fork`` fail their episode alone.
    An error whose ``stops_run`` is true (train-grpo's ``RolloutError``: a run that cannot go on correctly) is
    raised at once, neither retried nor recorded as the episodes' failure."""
    for attempt in range(POLICY_RETRIES + 1):
        try:
            return call(episodes)
        except Exception as error:  # a backend fault mid-batch
            if getattr(error, "stops_run", False):
                raise
            # a refusal (a server's 4xx: bad key, bad request) would only be refused again
            if attempt < POLICY_RETRIES and getattr(error, "retryable", True):
                logger.warning("policy batch failed (%s); retrying", error)
                continue
            logger.error("policy batch failed twice (%s); failing %d episodes", error, len(episodes))
            for episode in episodes:
                if not episode.done:
                    episode.fail(error, stage="policy")
    return None
