"""Figure 5: how cost grows. Beam-search time against beams x candidates (B x N), with a linear fit; and the
resident memory of a long greedy run, sampled after every finished episode."""

from __future__ import annotations

import time
from pathlib import Path

from playprm.bench import workload
from playprm.bench.episodes import Runs, eval_config, run_costs
from playprm.bench.report import Figure, Goal, seconds
from playprm.bench.timing import alternate, linear_fit, rss_bytes


def beam_growth(models: workload.ModelPair, work: Path, *, points=((1, 2), (2, 2), (2, 4), (4, 4), (4, 8)),
                limit: int = 1, max_tokens: int = 8, pairs: int = 3) -> Figure:
    """Beam search on wordle episodes that last their six guesses (``ValidGuessPolicy``), one run per (B, N),
    the points alternated round by round; a line through median time against B x N."""
    from playprm.models.hf import HFPolicy
    from playprm.models.registry import resolve_policy
    from playprm.play import run_eval
    from playprm.prm.scorer import PRMScorer

    started = time.perf_counter()
    policy = workload.ValidGuessPolicy(HFPolicy(resolve_policy(str(models.policy))), workload.wordle_words())
    scorer = PRMScorer.from_path(models.prm)
    runs = Runs(work / "beam-runs")

    def search(beams: int, candidates: int):
        config = eval_config(str(models.policy), runs.new(f"beam{beams}x{candidates}"), limit=limit,
                             max_tokens=max_tokens, mode="beam-search", prm=models.prm, n=candidates,
                             games=["wordle"])
        config.beam_width = beams
        return run_eval(config, policy=policy, scorer=scorer, progress=False)[1]

    search(*points[0])  # untimed: the smallest point warms the models up
    trial = alternate({f"B={b} N={n}": (lambda b=b, n=n: search(b, n)) for b, n in points}, pairs=pairs, warmup=0)
    fork_ms = fork_cost()
    xs = [float(b * n) for b, n in points]
    ys = [trial.median(f"B={b} N={n}") for b, n in points]
    slope, intercept, r2 = linear_fit(xs, ys)
    rows = []
    for (b, n), y in zip(points, ys):
        costs = run_costs(runs.last[f"beam{b}x{n}"])
        rows.append([str(b), str(n), str(b * n), seconds(y), seconds(intercept + slope * b * n),
                     str(costs["episodes"]), str(costs["generated_tokens"]), str(costs["prm_tokens"])])
    episodes = run_costs(runs.last[f"beam{points[0][0]}x{points[0][1]}"])["episodes"]
    notes = [
        f"Linear fit: time = {intercept:.3f} s + {slope * 1000:.1f} ms x (B x N), R^2 = {r2:.3f}.",
        "One `Episode.fork` (a deep copy of the game) at the first turn: "
        + ", ".join(f"{game} {ms:.1f} ms" for game, ms in fork_ms.items())
        + ". Wordle's guesser keeps the whole allowed-word list (`WordleGuesser._candidates`) in its state, "
        "and every fork deep-copies it.",
        "Replies are the model's sampled text behind a valid `GUESS:` line (ValidGuessPolicy), so each episode "
        "plays its six guesses; every guess expands each open beam into N game copies (`Episode.fork`), "
        "generates and PRM-scores B x N candidates in one call each. Token counts are those charged to the "
        "chosen trajectories (the whole search behind them).",
    ]
    return Figure(
        key="beam_growth", title="5a. Beam-search time against B x N",
        setup=(f"{episodes} wordle episodes, the {models.label} tiny policy and PRM, max {max_tokens} tokens, "
               f"temperature 0.7, {pairs} alternated rounds over the points; times are medians."),
        header=["B", "N", "B x N", "wall s", "fit s", "episodes", "generated tokens", "PRM tokens"], rows=rows,
        raw=trial.times, notes=notes, seconds=time.perf_counter() - started,
    )


def fork_cost(copies: int = 20) -> dict[str, float]:
    """Milliseconds per ``Episode.fork`` of each built-in game's first episode, at its first policy turn."""
    costs: dict[str, float] = {}
    with workload.started_episodes(1) as episodes:
        for episode in episodes:
            if episode.task.game in costs or episode.done:
                continue
            start = time.perf_counter()
            for _ in range(copies):
                episode.fork()
            costs[episode.task.game] = (time.perf_counter() - start) / copies * 1000
    return costs


def return_free_memory() -> bool:
    """Collect garbage and give the C heap's free pages back to the system (glibc only)."""
    import ctypes
    import gc

    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        return False
    return True


def memory(models: workload.ModelPair, work: Path, *, episodes: int = 500, max_tokens: int = 4,
           batch_size: int = 32, first: int = 50) -> Figure:
    """Greedy episodes played by the runner; RSS read from /proc/self/statm in its ``on_finished`` hook."""
    from playprm import runner
    from playprm.models.hf import HFPolicy
    from playprm.models.registry import resolve_policy
    from playprm.play import guide_filter, turn_player
    from playprm.search.base import SearchSettings

    started = time.perf_counter()
    policy = HFPolicy(resolve_policy(str(models.policy)))
    run_dir = Runs(work / "memory-runs").new("greedy")
    trimmed = return_free_memory()
    per_round = len(workload.episode_tasks(run_dir, None)[0])
    tasks, benchmarks = workload.episode_tasks(run_dir, None, samples=-(-episodes // per_round))
    tasks = tasks[:episodes]
    samples: list[int] = []
    settings = SearchSettings(n_candidates=1, temperature=0.0, max_tokens=max_tokens)
    gen_args = {"temperature": 0.0, "max_tokens": max_tokens}
    try:
        summary = runner.play(
            tasks, policy_name="bench-memory", run_dir=run_dir, gen_args=gen_args, batch_size=batch_size,
            choose_turns=turn_player("greedy", policy, None, settings, guide_filter(None), 0.0),
            on_finished=lambda episode: samples.append(rss_bytes()), progress=False,
        )
    finally:
        for benchmark in benchmarks.values():
            benchmark.close()
    start_rss, end_rss = samples[min(first, len(samples)) - 1], samples[-1]
    growth = (end_rss - start_rss) / start_rss
    marks = sorted({min(first, len(samples)), *range(100, len(samples) + 1, 100), len(samples)})
    rows = [[str(k), f"{samples[k - 1] / 2**20:.1f}", f"{(samples[k - 1] - start_rss) / start_rss * 100:+.2f}%"]
            for k in marks]
    goal = Goal(text=f"RSS growth < 5% from episode {first} to {len(samples)}", measured=growth * 100, limit=5,
                met=growth < 0.05,
                why_missed="memory keeps growing with finished episodes: something holds on to each one.")
    return Figure(
        key="memory", title=f"5b. Memory over a {len(samples)}-episode run",
        setup=(f"{len(samples)} greedy episodes of the three built-in games (each instance played several times), "
               f"the {models.label} tiny policy, max {max_tokens} tokens, {batch_size} in flight; RSS after each "
               f"finished episode. The run took {summary.wall_seconds:.1f} s "
               f"({len(samples) / summary.wall_seconds:.1f} episodes/s)."),
        header=["finished episodes", "RSS MiB", f"vs episode {first}"], rows=rows, goals=[goal],
        notes=["The goal is stated in percent (measured and limit).",
               "Memory that earlier figures freed was handed back to the system before the run (glibc "
               f"malloc_trim: {'done' if trimmed else 'not available'}), so that the RSS is this run's."],
        seconds=time.perf_counter() - started,
    )
