"""Figures 3 and 4: whole episodes of the multi-turn workload (wordle and taboo played by a policy that keeps
their formats, ``workload.multiturn_workload``).

3. ``playprm eval`` against clemcore's own ``clem run`` with its huggingface_local backend, each a whole process
   (imports and model loading included), on the same model, games, instances and token limit, greedy.
4. Best-of-N (PRM included) against greedy on the same episodes, models loaded once.
"""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from playprm.bench import workload
from playprm.bench.report import Figure, Goal, ratio, seconds
from playprm.bench.timing import alternate
from playprm.results.layout import COST_FILE, INTERACTIONS_FILE, SCORES_FILE, result_files

CLEM_MODEL = "bench-tiny-hf"


def replies(run_root: Path) -> dict[str, list[str]]:
    """``game/experiment/instance`` -> every player reply recorded in the episode's interactions.json, in order
    (playprm and clemcore write the same layout)."""
    found = {}
    for path in result_files(Path(run_root), INTERACTIONS_FILE):
        turns = json.loads(path.read_text(encoding="utf-8")).get("turns", [])
        found["/".join(path.parent.parts[-3:])] = [
            str(event["action"].get("content", "")).strip() for event in itertools.chain.from_iterable(turns)
            if event.get("from", "").startswith("Player") and event.get("to") == "GM"]
    return found


def episode_scores(run_root: Path) -> dict[str, str]:
    """``game/experiment/instance`` -> the episode's ``episode scores`` from scores.json, as sorted JSON text (so
    NaN, which clemcore writes for an aborted episode, compares equal to NaN)."""
    return {"/".join(path.parent.parts[-3:]): json.dumps(json.loads(path.read_text(encoding="utf-8"))
                                                         .get("episode scores", {}), sort_keys=True)
            for path in result_files(Path(run_root), SCORES_FILE)}


def same_replies(ours: dict[str, list[str]], theirs: dict[str, list[str]]) -> int:
    """Episodes whose replies are identical, turn for turn, in both runs."""
    return sum(1 for key, texts in ours.items() if theirs.get(key) == texts)


def run_costs(run_dir: Path) -> dict:
    """Sums over the episodes' cost.json files (policy turns, prefill, generated and PRM tokens) and each
    episode's per-turn costs (``turns``: a list per episode, empty where cost.json has none)."""
    totals = {"episodes": 0, "policy_turns": 0, "prefill_tokens": 0, "generated_tokens": 0, "prm_tokens": 0,
              "turns": []}
    for path in result_files(Path(run_dir), COST_FILE):
        cost = json.loads(path.read_text(encoding="utf-8"))
        totals["episodes"] += 1
        for key in ("policy_turns", "prefill_tokens", "generated_tokens", "prm_tokens"):
            totals[key] += int(cost.get(key, 0))
        totals["turns"].append(cost.get("turns", []))
    return totals


def turns_per_episode(costs: dict) -> float:
    """Mean policy turns per episode of a run (``run_costs``)."""
    return costs["policy_turns"] / max(costs["episodes"], 1)


class Runs:
    """Fresh results folders, one per call (playprm resumes finished episodes, so each timed run needs its own).
    ``root`` is emptied first: folders left by an earlier benchmark run would be resumed, not played."""

    def __init__(self, root: Path):
        self.root = Path(root)
        shutil.rmtree(self.root, ignore_errors=True)
        self.count = itertools.count()
        self.last: dict[str, Path] = {}

    def new(self, label: str) -> Path:
        path = self.root / f"{label}-{next(self.count)}"
        previous = self.last.get(label)
        if previous is not None:  # keep only the latest folder of each label, for the checks after timing
            shutil.rmtree(previous, ignore_errors=True)
        self.last[label] = path
        return path


def eval_config(policy_model: str, results_dir: Path, *, limit: int | None, max_tokens: int, mode: str = "greedy",
                prm: Path | None = None, n: int = 4, games=None):
    from playprm.play.config import EvalConfig

    return EvalConfig(policy_model=policy_model, mode=mode, prm_path=prm, games=list(games or workload.GAMES),
                      limit=limit, max_tokens=max_tokens, results_dir=results_dir, n_candidates=n,
                      temperature=0.0 if mode == "greedy" else 0.7)


def playprm_eval_process(models: workload.ModelPair, runs: Runs, *, games: list[str], limit: int | None,
                         max_tokens: int, threads: int | None = None, label: str = "playprm",
                         extra: list[str] = (), cwd: Path | None = None) -> float:
    """``playprm eval`` as a user runs it, in its own process (default threads unless ``threads``; ``extra``: more
    arguments, such as ``--games-dir`` and ``-i``; ``cwd``: where it runs, for games that write files there);
    returns its wall seconds."""
    argv = [sys.executable, "-m", "playprm", "eval", "--policy-model", str(Path(models.policy).resolve()),
            "--max-tokens", str(max_tokens), "--results-dir", str(runs.new(label).resolve())]
    argv += [arg for game in games for arg in ("--game", game)]
    if limit is not None:
        argv += ["--limit", str(limit)]
    return _timed([*argv, *extra], env=workload.user_env(threads), cwd=cwd)


def clem_run_process(workspace: Path, runs: Runs, *, games: list[str], batch_size: int, max_tokens: int,
                     model: str = CLEM_MODEL, extra: list[str] = ()) -> float:
    """``clem run -g <games> -m <model> -b <batch size>`` in its own process, from the workspace whose registries
    name the same model and games (``extra``: more arguments, such as ``-i``); returns its wall seconds. clem run
    has no instance limit: it plays every instance of the games (or of the file ``-i`` names)."""
    clem = Path(sys.executable).with_name("clem")
    argv = [str(clem), "run", "-g", *games, "-m", model, "-b", str(batch_size), "-l", str(max_tokens),
            "-t", "0.0", "-r", str(runs.new(f"clem-b{batch_size}").resolve()), *extra]
    return _timed(argv, cwd=workspace, env=workload.user_env())


STARTUP = """
from playprm.play import job, runner, wiring  # what playprm eval imports, clemcore's games among it
from playprm.models.hf import HFPolicy
from playprm.models.registry import resolve_policy
from playprm.transformers_runtime import choose_cpu_threads
spec = resolve_policy({path!r})
choose_cpu_threads(spec.model_id)  # as run_eval decides them
HFPolicy(spec)
"""


def startup_process(models: workload.ModelPair) -> float:
    """A process that only imports what ``playprm eval`` imports (torch, transformers, clemcore's game framework)
    and loads the policy, playing nothing: the fixed cost both runners pay before their first turn."""
    code = STARTUP.format(path=str(Path(models.policy).resolve()))
    return _timed([sys.executable, "-c", code], env=workload.user_env())


def _timed(argv: list[str], *, env: dict, cwd: Path | None = None) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    if done.returncode not in (0, 1):  # clem run exits 1 when an episode raised; its episodes are still compared
        raise RuntimeError(f"{' '.join(argv[:3])} ... exited {done.returncode}: {done.stderr[-2000:]}")
    return wall


def fresh_caches(*models) -> None:
    """Forget the cross-turn states a loaded policy or scorer kept from an earlier run: each timed run starts as
    a new process would (the same episodes played again would otherwise find their prompts already encoded)."""
    from playprm.models.prefix_cache import PrefixStore

    for model in models:
        if getattr(model, "prefix_store", None) is not None:
            model.prefix_store = PrefixStore()


def throughput(mt: workload.Multiturn, work: Path, *, limit: int | None = None, max_tokens: int = 32,
               batch_sizes=(1, 8, 16), pairs: int = 3) -> Figure:
    """Figure 3: playprm eval against clem run at each batch size, whole processes alternated; the fastest
    clem run counts."""
    from transformers import AutoTokenizer

    started = time.perf_counter()
    models, games = mt.models, workload.MULTITURN_GAMES
    tokenizer = AutoTokenizer.from_pretrained(str(models.policy))
    workspace = workload.write_clem_workspace(work / "clem-workspace-multiturn", CLEM_MODEL, models.policy,
                                              tokenizer)
    runs = Runs(work / "episode-runs")
    calls = {"playprm eval": lambda: playprm_eval_process(models, runs, games=games, limit=limit,
                                                          max_tokens=max_tokens)}
    for b in batch_sizes:
        calls[f"clem run -b {b}"] = (lambda b=b: clem_run_process(workspace, runs, games=games, batch_size=b,
                                                                   max_tokens=max_tokens))
    calls["imports and model load only"] = lambda: startup_process(models)
    trial = alternate(calls, pairs=pairs, warmup=0)
    fixed = trial.median("imports and model load only")
    ours = trial.median("playprm eval")
    clem_names = [k for k in trial.times if k.startswith("clem")]
    best = min(clem_names, key=trial.median)
    ours_costs = run_costs(runs.last["playprm"])
    ours_replies = replies(runs.last["playprm"])
    rows = []
    for name in ["playprm eval", *clem_names]:
        folder = runs.last["playprm" if name == "playprm eval" else name.replace("clem run -b ", "clem-b")]
        played = replies(folder)
        turns = sum(len(v) for v in played.values()) / max(len(played), 1)
        wall = trial.median(name)
        rows.append([name, seconds(wall), seconds(wall - fixed), str(len(played)), f"{turns:.2f}",
                     f"{len(played) / wall:.2f}", ratio(wall / ours), ratio((wall - fixed) / (ours - fixed))])
    rows.append(["imports and model load only", seconds(fixed), "", "", "", "", ratio(fixed / ours), ""])
    best_replies = replies(runs.last[best.replace("clem run -b ", "clem-b")])
    measured = trial.median(best) / ours
    per_episode = turns_per_episode(ours_costs)
    goals = [Goal(
        text=f"playprm eval >= 5x faster than clem run at its best batch size ({best}), multi-turn episodes",
        measured=measured, limit=5, met=measured >= 5,
        why_missed=(f"both processes first pay the same fixed cost, {fixed:.1f} s here ({fixed / ours:.0%} of "
                    f"playprm's run): importing torch, transformers and clemcore's game framework (which imports "
                    f"openenv, gradio and fastmcp) and loading the model. After it, playprm plays and writes in "
                    f"{ours - fixed:.1f} s what takes {best} {trial.median(best) - fixed:.1f} s "
                    f"({(trial.median(best) - fixed) / (ours - fixed):.1f}x): its {ours_costs['episodes']} "
                    f"episodes ({per_episode:.1f} policy turns each) encode only each turn's new tokens (figure 5 "
                    f"counts them against re-encoding every conversation), while the decode steps are the "
                    f"same on both sides and, on CPU, cost about in proportion to their rows however they are "
                    f"batched (clem run gains from -b 1 to -b 8, little beyond). With six turns a game, reuse saves "
                    f"at most the quadratic part of the prefill; the fixed cost bounds the whole-process ratio."),
    )]
    notes = [
        f"Greedy replies identical, turn for turn, on {same_replies(ours_replies, best_replies)} of "
        f"{len(ours_replies)} episodes (playprm against {best}); clemcore wrote {len(best_replies)} episodes.",
        "Both sides run with their default torch threads (playprm: `choose_cpu_threads`, the idle cores for a "
        "model of 50M parameters or more, else one, OMP_NUM_THREADS overriding; clemcore's loader sets one) and "
        "without the suite's OMP_WAIT_POLICY.",
        "clemcore's huggingface_local entry needs `eos_to_cull` in model_config (its packaged Qwen entries have "
        "it); without it every reply fails with KeyError 'eos_to_cull'. The workspace entry sets it.",
        f"Multi-turn workload: {mt.how_made()}",
    ]
    scope = f"--limit {limit}" if limit is not None else "every instance"
    return Figure(
        key="episodes", title="3. Episode throughput against clem run (multi-turn)",
        setup=(f"{len(ours_replies)} episodes of {' and '.join(games)} ({scope}; clem run has no limit), the "
               f"{mt.label}, greedy, max {max_tokens} tokens, {ours_costs['policy_turns']} policy turns "
               f"({per_episode:.2f} per episode) in playprm's run; each run a whole process, "
               f"{pairs} alternated rounds; times are medians."),
        header=["runner", "wall s", "after the fixed cost s", "episodes", "player turns per episode", "episodes/s",
                "x playprm", "x playprm after the fixed cost"], rows=rows,
        raw=trial.times, goals=goals, notes=notes, seconds=time.perf_counter() - started,
    )


def best_of_n_overhead(mt: workload.Multiturn, work: Path, *, limit: int | None = 2, max_tokens: int = 32,
                       ns=(4, 8), pairs: int = 3) -> Figure:
    """Figure 4: wall(best-of-n, PRM scoring included) / wall(greedy) on the same multi-turn episodes, models
    loaded once, cross-turn caches emptied before each run."""
    from playprm.models.hf import HFPolicy
    from playprm.models.registry import resolve_policy
    from playprm.play.wiring import run_eval
    from playprm.prm.scorer import PRMScorer

    started = time.perf_counter()
    models = mt.models
    policy = HFPolicy(resolve_policy(str(models.policy)))
    scorer = PRMScorer.from_path(models.prm)
    runs = Runs(work / "bon-runs")

    def play(mode: str, n: int):
        label = {"greedy": "greedy", "logprob": f"logprob{n}"}.get(mode, f"bon{n}")
        guided = mode != "greedy"
        config = eval_config(str(models.policy), runs.new(label), limit=limit, max_tokens=max_tokens,
                             mode="best-of-n" if guided else mode, prm=models.prm if mode == "best-of-n" else None,
                             n=n, games=workload.MULTITURN_GAMES)
        if mode == "logprob":
            config.scorer = "logprob"
        fresh_caches(policy, scorer)
        return run_eval(config, policy=policy, scorer=scorer if mode == "best-of-n" else None, progress=False)[1]

    calls = {"greedy": lambda: play("greedy", 1)}
    for n in ns:
        calls[f"best-of-{n}"] = lambda n=n: play("best-of-n", n)
    # the same sampling without the PRM (chosen by the policy's log-probability): what decoding n rows costs alone
    calls[f"best-of-{ns[0]}, log-probability (no PRM)"] = lambda: play("logprob", ns[0])
    trial = alternate(calls, pairs=pairs)
    greedy = trial.median("greedy")
    rows, per_turn = [], {}
    folders = {"greedy": "greedy", f"best-of-{ns[0]}, log-probability (no PRM)": f"logprob{ns[0]}"}
    for name in trial.times:
        costs = run_costs(runs.last[folders.get(name) or f"bon{name.split('-')[-1]}"])
        per_turn[name] = trial.median(name) / max(costs["policy_turns"], 1)
        rows.append([name, seconds(trial.median(name)), ratio(trial.median(name) / greedy), str(costs["episodes"]),
                     f"{turns_per_episode(costs):.2f}", f"{per_turn[name] * 1000:.0f}", ratio(per_turn[name] / per_turn["greedy"]),
                     str(costs["prefill_tokens"]), str(costs["generated_tokens"]), str(costs["prm_tokens"])])
    limits = {4: 1.5, 8: 2.0}
    nolm = f"best-of-{ns[0]}, log-probability (no PRM)"
    goals = []
    for n in ns:
        if n not in limits:
            continue
        name = f"best-of-{n}"
        measured = trial.median(name) / greedy
        goals.append(Goal(
            text=f"best-of-{n} <= {limits[n]}x greedy (multi-turn)", measured=measured, limit=limits[n],
            met=measured <= limits[n],
            why_missed=(f"per policy turn best-of-{n} costs {per_turn[name] / per_turn['greedy']:.2f}x greedy: "
                        f"each turn decodes {n} rows instead of one, and on CPU a decode step's cost grows with its "
                        f"rows (figure 1); sampled at 0.7 the candidates run longer than greedy replies (see the "
                        f"generated tokens), and the decode loop runs until the last row of a call stops; then one "
                        f"PRM call scores the {n} candidates (figure 2). Without the PRM, best-of-{ns[0]} costs "
                        f"{per_turn[nolm] / per_turn['greedy']:.2f}x greedy per turn: that is the decoding's share. "
                        f"The prefill is shared and, across turns, reused."),
        ))
    return Figure(
        key="best_of_n", title="4. Best-of-N overhead (multi-turn)",
        setup=(f"{' and '.join(workload.MULTITURN_GAMES)}, {limit if limit is not None else 'every'} instance(s) "
               f"per experiment, the {mt.label} and its PRM (below), loaded once, cross-turn "
               f"caches emptied before each run; greedy at temperature 0, best-of-n at 0.7; max {max_tokens} "
               f"tokens; {pairs} alternated rounds; times are medians of whole runs."),
        header=["mode", "wall s", "x greedy", "episodes", "policy turns per episode", "ms per policy turn",
                "x greedy per turn", "prefill tokens", "generated tokens", "PRM tokens"],
        rows=rows, raw=trial.times, goals=goals,
        notes=["Sampled candidates (temperature 0.7) break a format now and then and a random PRM may choose such "
               "a candidate, so the best-of-n episodes can be shorter than greedy's; the per-turn columns compare "
               "like for like.", f"Multi-turn workload: {mt.how_made()}"],
        seconds=time.perf_counter() - started,
    )
