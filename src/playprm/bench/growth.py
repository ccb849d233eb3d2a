"""Figure 5: how cost grows. Prefill tokens against an episode's turns, with and without cross-turn reuse;
beam-search time against beams x candidates (B x N), with a linear fit; and the resident memory of a long
multi-turn run, sampled after every finished episode."""

from __future__ import annotations

import time
from pathlib import Path

from playprm.bench import workload
from playprm.bench.episodes import (
    Runs,
    eval_config,
    fresh_caches,
    replies,
    run_costs,
    same_replies,
    turns_per_episode,
)
from playprm.bench.report import Figure, Goal, ratio, seconds
from playprm.bench.timing import alternate, linear_fit, rss_bytes


def prefill_by_turn(costs: dict) -> list[tuple[int, float, int]]:
    """(turn index, mean prefill tokens at that turn, episodes that reached it) from ``run_costs``' per-turn
    costs; turn 1 is an episode's first policy turn."""
    by_turn: dict[int, list[int]] = {}
    for turns in costs["turns"]:
        for index, turn in enumerate(turns, start=1):
            if turn.get("prefill_tokens") is not None:
                by_turn.setdefault(index, []).append(int(turn["prefill_tokens"]))
    return [(t, sum(v) / len(v), len(v)) for t, v in sorted(by_turn.items())]


def cumulative(per_turn: list[tuple[int, float, int]]) -> list[float]:
    """Mean prefill tokens of an episode through each turn: the running sum of the per-turn means."""
    total, out = 0.0, []
    for _, mean, _ in per_turn:
        total += mean
        out.append(total)
    return out


def quadratic_term(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least-squares parabola ``y = a + b x + c x^2``; returns (c, R^2)."""
    import numpy

    coefficients = numpy.polyfit(xs, ys, 2)
    fitted = numpy.polyval(coefficients, xs)
    mean = sum(ys) / len(ys)
    total = sum((y - mean) ** 2 for y in ys)
    residual = float(sum((y - f) ** 2 for y, f in zip(ys, fitted)))
    return float(coefficients[0]), (1.0 - residual / total if total else 1.0)


def prefill_growth(mt: workload.Multiturn, work: Path, *, limit: int | None = None, max_tokens: int = 32,
                   pairs: int = 3) -> Figure:
    """Greedy runs of the multi-turn workload with cross-turn reuse (``HFPolicy(reuse_cache=True)``, the default)
    and without it, alternated: wall time, prefill tokens per turn index from cost.json, fits, and whether the
    replies are identical."""
    from playprm.models.hf import HFPolicy
    from playprm.models.registry import resolve_policy
    from playprm.play.wiring import run_eval

    started = time.perf_counter()
    spec = resolve_policy(str(mt.models.policy))
    reuse = HFPolicy(spec)
    plain = HFPolicy(spec, reuse.model, reuse.tokenizer, reuse_cache=False)
    runs = Runs(work / "prefill-runs")

    def play(policy, label: str):
        config = eval_config(str(mt.models.policy), runs.new(label), limit=limit, max_tokens=max_tokens,
                             games=workload.MULTITURN_GAMES)
        fresh_caches(policy)
        return run_eval(config, policy=policy, progress=False)[1]

    trial = alternate({"with reuse": lambda: play(reuse, "reuse"), "without reuse": lambda: play(plain, "plain")},
                      pairs=pairs)
    costs = {"with reuse": run_costs(runs.last["reuse"]), "without reuse": run_costs(runs.last["plain"])}
    ours, theirs = replies(runs.last["reuse"]), replies(runs.last["plain"])
    identical = same_replies(ours, theirs)
    by_turn = {name: prefill_by_turn(c) for name, c in costs.items()}
    turns = [t for t, _, _ in by_turn["with reuse"]]
    sums = {name: cumulative(values) for name, values in by_turn.items()}
    rows = []
    for i, t in enumerate(turns):
        with_reuse, without = by_turn["with reuse"][i], by_turn["without reuse"][i]
        rows.append([str(t), str(with_reuse[2]), f"{with_reuse[1]:.0f}", f"{without[1]:.0f}",
                     f"{sums['with reuse'][i]:.0f}", f"{sums['without reuse'][i]:.0f}",
                     ratio(sums["without reuse"][i] / max(sums["with reuse"][i], 1))])
    xs = [float(t) for t in turns]
    notes, goals = [], []
    if len(xs) >= 3:
        slope, intercept, r2 = linear_fit(xs, sums["with reuse"])
        q_with, q_with_r2 = quadratic_term(xs, sums["with reuse"])
        q_without, q_without_r2 = quadratic_term(xs, sums["without reuse"])
        r_slope, r_intercept, _ = linear_fit(xs[1:], [m for _, m, _ in by_turn["with reuse"]][1:])
        p_slope, p_intercept, p_r2 = linear_fit(xs, [m for _, m, _ in by_turn["without reuse"]])
        line_without_r2 = linear_fit(xs, sums["without reuse"])[2]
        notes += [
            f"With reuse, prefill tokens through turn t: {intercept:.0f} + {slope:.1f} t, R^2 = {r2:.4f}; a "
            f"parabola through them has t^2 coefficient {q_with:+.1f} (R^2 {q_with_r2:.4f}). After the first "
            f"turn a turn encodes {r_intercept + r_slope * xs[1]:.0f} tokens at t={turns[1]} and "
            f"{r_intercept + r_slope * xs[-1]:.0f} at t={turns[-1]} (line through turns {turns[1]}-{turns[-1]}): "
            f"the reply that was played and the game's answer, plus, in taboo, the guesser's own first prompt "
            f"at t=2 (each player is its own conversation).",
            f"Without reuse, a turn encodes the whole conversation so far: {p_intercept:.0f} + {p_slope:.1f} t "
            f"tokens (R^2 {p_r2:.4f}), so the prefill through turn t is quadratic: t^2 coefficient "
            f"{q_without:+.1f} (R^2 {q_without_r2:.4f}). Over {len(xs)} turns a line through those totals still "
            f"fits with R^2 {line_without_r2:.4f}, which is why the t^2 coefficients, not R^2, tell the two apart.",
        ]
        goals.append(Goal(text="prefill per episode linear in turns with reuse (t^2 coefficient of the prefill "
                               "through turn t <= 0, tokens)", measured=q_with, limit=0.0, met=q_with <= 0,
                          why_missed="the tokens a turn encodes grow with the turn index: some turns fall back to "
                                     "a full encode (see the prefix store's counts below)."))
    stats = reuse.prefix_store.stats
    notes += [
        f"Greedy replies identical with and without reuse, turn for turn, on {identical} of {len(ours)} episodes "
        f"({costs['with reuse']['policy_turns']} policy turns with reuse, {costs['without reuse']['policy_turns']} "
        f"without).",
        f"The policy's prefix store over the last run: {stats.full} prompts encoded in full, {stats.continued} "
        f"continued from an earlier turn's state, {stats.exact} found whole; {stats.encoded_tokens} of "
        f"{stats.prompt_tokens} prompt tokens run through the model.",
        f"Wall time of the whole run: {trial.median('with reuse'):.2f} s with reuse, "
        f"{trial.median('without reuse'):.2f} s without ({trial.ratio('without reuse', 'with reuse'):.2f}x).",
        f"Multi-turn workload: {mt.how_made()}",
    ]
    goals.append(Goal(text="greedy replies identical with and without reuse (episodes)", measured=identical,
                      limit=len(ours), met=identical == len(ours) and len(ours) > 0,
                      why_missed="reuse changed some replies: the continued state differs from a full encode "
                                 "beyond rounding, or a near-tie in the logits flipped."))
    with_costs = costs["with reuse"]
    return Figure(
        key="prefill", title="5. Prefill tokens against turns, with and without cross-turn reuse",
        setup=(f"{with_costs['episodes']} greedy episodes of {' and '.join(workload.MULTITURN_GAMES)} "
               f"({turns_per_episode(with_costs):.2f} policy turns per episode), the {mt.label}, max {max_tokens} "
               f"tokens; prefill tokens per policy turn read from each episode's cost.json (`turns`); "
               f"{pairs} alternated rounds of both runs, one model."),
        header=["turn t", "episodes reaching t", "prefill at t, reuse", "prefill at t, no reuse",
                "through t, reuse", "through t, no reuse", "no reuse / reuse"],
        rows=rows, raw=trial.times, goals=goals, notes=notes, seconds=time.perf_counter() - started,
    )


def beam_growth(models: workload.ModelPair, work: Path, *, points=((1, 2), (2, 2), (2, 4), (4, 4), (4, 8)),
                limit: int = 1, max_tokens: int = 8, pairs: int = 3) -> Figure:
    """Beam search on wordle episodes that last their six guesses (``ValidGuessPolicy``), one run per (B, N),
    the points alternated round by round; a line through median time against B x N."""
    from playprm.models.hf import HFPolicy
    from playprm.models.registry import resolve_policy
    from playprm.play.wiring import run_eval
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
        fresh_caches(policy.policy, scorer)
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
        + ".",
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


def memory(mt: workload.Multiturn, work: Path, *, episodes: int = 500, max_tokens: int = 32,
           batch_size: int = 32, first: int = 50) -> Figure:
    """Greedy multi-turn episodes played by the runner, cross-turn reuse on; RSS read from /proc/self/statm in
    its ``on_finished`` hook."""
    from playprm.models.hf import HFPolicy
    from playprm.models.registry import resolve_policy
    from playprm.play import runner
    from playprm.play.config import default_search_settings
    from playprm.play.wiring import episode_player, guide_filter

    started = time.perf_counter()
    policy = HFPolicy(resolve_policy(str(mt.models.policy)))
    run_dir = Runs(work / "memory-runs").new("greedy")
    trimmed = return_free_memory()
    games = workload.MULTITURN_GAMES
    per_round = len(workload.episode_tasks(run_dir, None, games)[0])
    tasks, benchmarks = workload.episode_tasks(run_dir, None, games, samples=-(-episodes // per_round))
    tasks = tasks[:episodes]
    samples: list[int] = []
    settings = default_search_settings(n_candidates=1, temperature=0.0, max_tokens=max_tokens)
    gen_args = {"temperature": 0.0, "max_tokens": max_tokens}
    try:
        summary = runner.play(
            tasks, policy_name="bench-memory", run_dir=run_dir, gen_args=gen_args, batch_size=batch_size,
            play_episodes=episode_player("greedy", policy, None, settings, guide_filter(None)),
            on_finished=lambda episode: samples.append(rss_bytes()), progress=False,
        )
    finally:
        for benchmark in benchmarks.values():
            benchmark.close()
    costs = run_costs(run_dir)
    start_rss, end_rss = samples[min(first, len(samples)) - 1], samples[-1]
    growth = (end_rss - start_rss) / start_rss
    marks = sorted({min(first, len(samples)), *range(100, len(samples) + 1, 100), len(samples)})
    rows = [[str(k), f"{samples[k - 1] / 2**20:.1f}", f"{(samples[k - 1] - start_rss) / start_rss * 100:+.2f}%"]
            for k in marks]
    goal = Goal(text=f"RSS growth < 5% from episode {first} to {len(samples)}", measured=growth * 100, limit=5,
                met=growth < 0.05,
                why_missed="memory keeps growing with finished episodes: something holds on to each one.")
    store = policy.prefix_store
    return Figure(
        key="memory", title=f"5b. Memory over a {len(samples)}-episode multi-turn run",
        setup=(f"{len(samples)} greedy episodes of {' and '.join(games)} (each instance played several times), "
               f"{costs['policy_turns']} policy turns ({turns_per_episode(costs):.2f} per episode), the "
               f"{mt.label}, cross-turn reuse on, max {max_tokens} tokens, {batch_size} in flight; RSS after each "
               f"finished episode. The run took {summary.wall_seconds:.1f} s "
               f"({len(samples) / summary.wall_seconds:.1f} episodes/s)."),
        header=["finished episodes", "RSS MiB", f"vs episode {first}"], rows=rows, goals=[goal],
        notes=["The goal is stated in percent (measured and limit).",
               f"The policy's prefix store at the end: {len(store.entries)} prompts, {store.tokens} tokens kept "
               f"(cap {store.max_tokens}); over the run {store.stats.continued} prompts continued an earlier "
               f"turn's state, {store.stats.exact} were found whole (greedy repeats of an instance ask the same "
               f"prompt) and {store.stats.full} were encoded in full.",
               "Memory that earlier figures freed was handed back to the system before the run (glibc "
               f"malloc_trim: {'done' if trimmed else 'not available'}), so that the RSS is this run's."],
        seconds=time.perf_counter() - started,
    )
