"""Rollout collection for training data: K sampled episodes per instance, optionally branched into trees.

At a branching point (every policy turn up to ``branch_depth``, or only the first), the game state is copied B
times (clemcore's environment copy, as its branching runner does) and each copy continues with its own sampled
reply, so every branched state gets Monte-Carlo continuations. Each leaf is a normal clemcore episode folder;
``<model-pair>/turns.jsonl`` records the tree (turn id, parent turn id, player, role, context, reply, and for
the last turn of each leaf its episode folder and outcome), from which ``prm-data --labels mc`` computes labels.

A prover (``--prover M``, Setlur et al. 2024): turns after a branch point that are not branch points themselves
are played by M instead of the policy, so a branched reply's Monte-Carlo value is its chance of success when M
continues (M: a model folder or registry name, ``programmatic:expert``, or by default the policy itself). Those
turns carry ``"prover": <M>`` in turns.jsonl; ``prm-data`` labels only the policy's replies and its card names
the prover (an oracle when it is the programmatic expert, which plays by the game's rules and hidden state).

Resumable per tree: a tree's record file is written after all its leaves, and trees with a record are skipped.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path

from playprm import atomic
from playprm.episode import Episode
from playprm.errors import UsageError
from playprm.models.base import clean_candidates
from playprm.play import runner
from playprm.play.job import open_run, prepare_games
from playprm.results.layout import TREES_DIR, TURNS_FILE, sample_folder
from playprm.results.staging import clean_staging
from playprm.search.base import Choice, SeedStream


@dataclass
class CollectSettings:
    """``playprm collect``: K sampled episodes per instance, optionally branched into rollout trees."""

    samples_per_instance: int = 4
    temperature: float = 1.0
    max_tokens: int = 256
    branch_factor: int = 1
    branch_at: str = "policy-turns"  # or "first-turn"
    branch_depth: int = 2  # policy turns (from the start) at which to branch, with policy-turns
    seed: int = 0
    batch_size: int = 32  # trees in flight
    prover: str | None = None  # plays the turns after a branch point that do not branch; None: the policy itself

    def decoding(self) -> dict:
        """The settings that change the rollouts (the run fingerprint); more samples per instance add to a run."""
        return {"mode": "collect", "env_lookahead": False, "temperature": float(self.temperature),
                "max_tokens": self.max_tokens, "seed": self.seed, "branch_factor": self.branch_factor,
                "branch_at": self.branch_at, "branch_depth": self.branch_depth,
                **({"prover": self.prover} if self.prover else {})}

    def validate(self) -> CollectSettings:
        """The one-line UsageError for impossible settings, before any model loads."""
        if self.samples_per_instance < 1:
            raise UsageError(f"--samples-per-instance {self.samples_per_instance} must be at least 1")
        if self.temperature <= 0 and self.samples_per_instance > 1:
            raise UsageError("--temperature must be > 0 to sample distinct episodes")
        if self.temperature < 0:
            raise UsageError(f"--temperature {self.temperature} is negative")
        if self.branch_factor < 1:
            raise UsageError(f"--branch-factor {self.branch_factor} must be at least 1")
        if self.branch_depth < 1:
            raise UsageError(f"--branch-depth {self.branch_depth} must be at least 1")
        if self.prover and self.branch_factor < 2:
            raise UsageError("--prover plays the turns after a branch point; add --branch-factor 2 or more")
        if self.max_tokens < 1 or self.batch_size < 1:
            raise UsageError("--max-tokens and --batch-size must be at least 1")
        return self


def run_collect(policy_model: str, games: list[str], game_all: bool, games_dir: Path | None, limit: int | None,
                results_dir: Path, settings: CollectSettings, *, experiment: str | None = None,
                instances_file: str | None = None, skip_broken_games: bool = False, policy=None,
                progress: bool = True):
    """Validate, then load the policy and collect rollouts into the run job's folder; returns (run_dir,
    RunSummary). The selection is eval's (``job.prepare_games``)."""
    from playprm.models.registry import resolve_policy
    from playprm.models.vllm_policy import check_installed
    from playprm.play.players import check_scripted_games, load_policy
    from playprm.transformers_runtime import choose_cpu_threads

    settings.validate()
    atomic.check_output_path(results_dir, "--results-dir")
    if limit is not None and limit < 1:
        raise UsageError(f"--limit {limit} must be at least 1")
    if not games and not game_all:
        raise UsageError("say which games to play: --game NAME (repeatable) or --game-all")
    entries, instances = prepare_games(games, game_all, games_dir, limit, experiment=experiment,
                                       instances_file=instances_file)
    spec = policy.spec if policy is not None else resolve_policy(policy_model)
    check_scripted_games(spec, entries)
    if policy is None:
        check_installed(spec.backend)
    prover_spec = resolve_policy(settings.prover) if settings.prover else None
    if prover_spec is not None:
        check_scripted_games(prover_spec, entries, flag="--prover")
        check_installed(prover_spec.backend)
    threads = choose_cpu_threads(spec.model_id)  # once per run, by the policy's size, before the model loads
    with open_run(results_dir, spec, f"t{float(settings.temperature)}-collect", entries, instances,
                  settings=settings.decoding(), temperature=settings.temperature, max_tokens=settings.max_tokens,
                  skip_broken=skip_broken_games, samples=settings.samples_per_instance, folder=sample_folder) as job:
        policy = policy or load_policy(spec)
        prover = load_policy(prover_spec) if prover_spec is not None else None
        job.write_metadata({**asdict(settings), "policy": spec.describe(), "broken_games": job.broken_games,
                            "cpu_threads": threads,  # the torch threads of this process (the latest, when resumed)
                            **({"prover_model": prover_spec.describe()} if prover_spec is not None else {})})
        summary = collect(job.tasks, policy=policy, policy_name=job.name, run_dir=job.run_dir, settings=settings,
                          gen_args=job.gen_args, progress=progress, prover=prover, broken=job.broken)
    return job.run_dir, summary


def _should_branch(episode: Episode, settings: CollectSettings) -> bool:
    if settings.branch_factor <= 1:
        return False
    depth = episode.tags["depth"]
    if settings.branch_at == "first-turn":
        return depth == 0
    return depth < settings.branch_depth


def _prover_plays(episode: Episode, settings: CollectSettings) -> bool:
    """Whether the prover plays this turn: one after a branch point that does not branch itself."""
    return bool(settings.prover) and episode.tags.get("branched", False) and not _should_branch(episode, settings)


def _tree_file(run_dir: Path, task) -> Path:
    return run_dir / TREES_DIR / task.game / task.experiment["name"] / f"{task.episode_dir.name}.jsonl"


def _record_turn(episode: Episode, records: list, text: str, prover: str | None = None) -> None:
    """Append the pending turn with its reply to the tree's records (ids count turns within the tree)."""
    task, turn = episode.task, episode.pending
    turn_id = f"{task.game}/{task.experiment['name']}/{task.instance['game_id']}/s{task.sample}/t{len(records)}"
    records.append({
        "turn_id": turn_id, "parent_id": episode.tags["last"], "game": task.game,
        "experiment": task.experiment["name"], "game_id": task.instance["game_id"], "sample": task.sample,
        "player": turn.player, "game_role": turn.game_role,
        "turn": episode.tags["replies"].get(turn.player, 0),  # the player's reply index, as in outcome records
        "depth": episode.tags["depth"],
        "context": turn.context, "response": text, "leaf_episode": None, "outcome": None,
        **({"prover": prover} if prover else {}),
    })
    episode.tags["last"] = turn_id
    episode.tags["last_index"] = len(records) - 1
    episode.tags["depth"] += 1
    episode.tags["replies"][turn.player] = episode.tags["replies"].get(turn.player, 0) + 1


def collect(tasks, *, policy, policy_name: str, run_dir: Path, settings: CollectSettings, gen_args: dict,
            progress: bool = True, prover=None, broken: dict | None = None) -> runner.RunSummary:
    """Play every task as a (possibly branched) rollout tree; returns a summary of leaves written. The caller
    holds ``run_dir`` (``run_job.open_run``). ``prover`` (a policy, with ``settings.prover`` its name) plays the
    turns after a branch point that do not branch. ``broken``: the games that did not load (``RunJob.broken``,
    with --skip-broken-games); each of their tasks is one leaf with the game's own error."""
    started = time.perf_counter()
    summary = runner.RunSummary(planned=len(tasks), unit="rollout trees")
    clean_staging(run_dir, locked=True)
    todo = [t for t in tasks if not _tree_file(run_dir, t).exists()]
    summary.skipped = len(tasks) - len(todo)
    seeds = SeedStream(settings.seed)
    bar = runner.progress_bar(summary, desc="rollout trees", show=progress)
    for start in range(0, len(todo), settings.batch_size):
        wave = todo[start:start + settings.batch_size]
        records: dict[int, list] = defaultdict(list)  # per tree (index in wave)
        leaves: dict[int, list[Episode]] = defaultdict(list)
        open_: list[tuple[int, Episode]] = []
        for tree, task in enumerate(wave):
            if task.benchmark is None:  # its game did not load (--skip-broken-games): one errored leaf
                root = Episode.failed(task, runner.load_error(broken, task), stage="load")
            else:
                root = Episode.start(task, policy_name, run_dir.name, gen_args)
            root.tags.update(depth=0, replies={}, last=None, last_index=None)
            if root.done:
                leaves[tree].append(root)
            else:
                open_.append((tree, root))
        while open_:
            groups: dict[tuple[int, bool], list[tuple[int, Episode]]] = defaultdict(list)
            for tree, episode in open_:
                by_prover = prover is not None and _prover_plays(episode, settings)
                groups[settings.branch_factor if _should_branch(episode, settings) else 1, by_prover].append(
                    (tree, episode))
            next_open = []
            for (n, by_prover), members in sorted(groups.items()):
                try:
                    outputs = clean_candidates((prover if by_prover else policy).generate(
                        [e.pending.context for _, e in members], n=n, temperature=settings.temperature,
                        max_tokens=settings.max_tokens, seed=seeds.next()))
                except Exception as error:  # a backend fault fails these trajectories, not the run
                    for tree, episode in members:
                        episode.fail(error, stage="policy")
                        leaves[tree].append(episode)
                    continue
                for (tree, episode), candidates in zip(members, outputs):
                    copies = [episode.fork() for _ in candidates[1:]] + [episode]
                    for copy, candidate in zip(copies, candidates):
                        if copy.error is not None:  # the game could not be copied (Episode.fork): a failed leaf
                            leaves[tree].append(copy)
                            continue
                        copy.tags["branched"] = copy.tags.get("branched", False) or len(candidates) > 1
                        _record_turn(copy, records[tree], candidate.text, settings.prover if by_prover else None)
                        choice = Choice(text=candidate.text, candidates=[candidate], scores=None, chosen=0)
                        copy.play(candidate.text, log=choice.log("collect"), generated_tokens=candidate.num_tokens)
                        if copy.done:
                            leaves[tree].append(copy)
                        else:
                            next_open.append((tree, copy))
            open_ = next_open
        for tree, task in enumerate(wave):
            for leaf_number, leaf in enumerate(leaves[tree]):
                leaf.task = _leaf_task(task, leaf_number)
                folder = leaf.write()
                index = leaf.tags.get("last_index")
                if index is not None and folder is not None:
                    records[tree][index]["leaf_episode"] = str(folder.relative_to(run_dir))
                    records[tree][index]["outcome"] = leaf.outcome if leaf.error is None else None
                summary.count(leaf)
            atomic.write_jsonl(_tree_file(run_dir, task), records[tree])
            bar.update(1)
    bar.close()
    write_turns(run_dir)
    summary.wall_seconds = time.perf_counter() - started
    return summary


def _leaf_task(task, leaf_number: int):
    from dataclasses import replace

    return replace(task, episode_dir=task.episode_dir.parent / f"{task.episode_dir.name}_l{leaf_number:03d}")


def write_turns(run_dir: Path) -> Path:
    """Rebuild ``turns.jsonl`` from all finished tree records, in a deterministic order."""
    lines = []
    for path in sorted((run_dir / TREES_DIR).rglob("*.jsonl")):
        lines += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return atomic.write_jsonl(run_dir / TURNS_FILE, lines)

