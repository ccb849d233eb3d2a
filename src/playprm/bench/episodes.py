"""Figures 3 and 4: whole episodes of the built-in games.

3. ``playprm eval`` (``run_eval``) against clemcore's own runner (``clemcore.cli.run``, what ``clem run``
   calls) with its huggingface_local backend, on the same model, games, instances and token limit, greedy.
4. Best-of-N (PRM included) against greedy on the same episodes.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import shutil
import time
from pathlib import Path

from playprm.bench import workload
from playprm.bench.report import Figure, Goal, ratio, seconds
from playprm.bench.timing import alternate, usable_cpus
from playprm.results.layout import COST_FILE, INTERACTIONS_FILE, result_files

CLEM_MODEL = "bench-tiny-hf"


def first_replies(run_root: Path) -> dict[str, str]:
    """``game/experiment/instance`` -> the first policy reply recorded in each episode's interactions.json."""
    replies = {}
    for path in result_files(Path(run_root), INTERACTIONS_FILE):
        turns = json.loads(path.read_text(encoding="utf-8")).get("turns", [])
        for event in itertools.chain.from_iterable(turns):
            if event.get("from", "").startswith("Player") and event.get("to") == "GM":
                key = "/".join(path.parent.parts[-3:])
                replies[key] = str(event["action"].get("content", ""))
                break
    return replies


def run_costs(run_dir: Path) -> dict:
    """Sums over the episodes' cost.json files: policy turns, generated and PRM tokens."""
    totals = {"episodes": 0, "policy_turns": 0, "generated_tokens": 0, "prm_tokens": 0}
    for path in result_files(Path(run_dir), COST_FILE):
        cost = json.loads(path.read_text(encoding="utf-8"))
        totals["episodes"] += 1
        for key in ("policy_turns", "generated_tokens", "prm_tokens"):
            totals[key] += int(cost.get(key, 0))
    return totals


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


def eval_config(policy_model: str, results_dir: Path, *, limit: int, max_tokens: int, mode: str = "greedy",
                prm: Path | None = None, n: int = 4, games=None):
    from playprm.config import EvalConfig

    return EvalConfig(policy_model=policy_model, mode=mode, prm_path=prm, games=list(games or workload.GAMES),
                      limit=limit, max_tokens=max_tokens, results_dir=results_dir, n_candidates=n,
                      temperature=0.0 if mode == "greedy" else 0.7)


def playprm_eval(models: workload.ModelPair, runs: Runs, *, limit: int, max_tokens: int, policy=None,
                 threads: int | None = None):
    """A whole ``playprm eval`` as the Python API runs it: model load included, like clemcore's run, unless a
    loaded ``policy`` is given; ``threads`` runs it at that torch thread count."""
    from playprm.play import run_eval

    label = "playprm" if policy is None else "playprm-preloaded"
    config = eval_config(str(models.policy), runs.new(label), limit=limit, max_tokens=max_tokens)
    with workload.torch_threads(threads) if threads else contextlib.nullcontext():
        _, summary = run_eval(config, policy=policy, progress=False)
    return summary


def clem_run(workspace: Path, runs: Runs, selection: set, *, batch_size: int, max_tokens: int):
    """clemcore's ``run`` (the function behind ``clem run -g ... -m ... -b ...``) on the same instances.

    ``clem run`` has no instance limit; the same first instances are picked with its ``instances_filter``.
    Its loader pins torch to one thread; the count is restored afterwards for the other paths.
    """
    import torch
    from clemcore import backends
    from clemcore.cli import run

    threads = torch.get_num_threads()
    results = runs.new(f"clem-b{batch_size}")
    try:
        with workload.working_directory(workspace):
            run(workload.GAMES, backends.ModelSpec.from_strings([CLEM_MODEL]),
                gen_args={"temperature": 0.0, "max_tokens": max_tokens}, results_dir_path=results,
                instances_filter=lambda row: (row["experiment"]["name"], row["game_instance"]["game_id"]) in selection,
                batch_size=batch_size)
    except SystemExit as error:  # clemcore exits 1 when an episode raised; the episodes are still compared
        return f"exit {error.code}"
    finally:
        torch.set_num_threads(threads)
    return "ok"


def throughput(models: workload.ModelPair, work: Path, *, limit: int = 2, max_tokens: int = 32,
               batch_sizes=(1, 8), pairs: int = 3) -> Figure:
    """Figure 3: playprm eval against clemcore's runner at each batch size; the faster clemcore one counts."""
    from transformers import AutoTokenizer

    from playprm.models.hf import HFPolicy
    from playprm.models.registry import resolve_policy

    started = time.perf_counter()
    tokenizer = AutoTokenizer.from_pretrained(str(models.policy))
    workspace = workload.write_clem_workspace(work / "clem-workspace", CLEM_MODEL, models.policy, tokenizer)
    tasks, benchmarks = workload.episode_tasks(work / "unused", limit)
    for benchmark in benchmarks.values():
        benchmark.close()
    selection = {(t.experiment["name"], t.instance["game_id"]) for t in tasks}
    runs = Runs(work / "episode-runs")
    preloaded = HFPolicy(resolve_policy(str(models.policy)))
    calls = {
        "playprm eval": lambda: playprm_eval(models, runs, limit=limit, max_tokens=max_tokens),
        "playprm eval, 1 thread, model loaded once": lambda: playprm_eval(
            models, runs, limit=limit, max_tokens=max_tokens, policy=preloaded, threads=1),
    }
    for b in batch_sizes:
        calls[f"clem run -b {b}"] = (lambda b=b: clem_run(workspace, runs, selection, batch_size=b,
                                                           max_tokens=max_tokens))
    trial = alternate(calls, pairs=pairs)
    ours = trial.median("playprm eval")
    clem_names = [k for k in trial.times if k.startswith("clem")]
    best = min(clem_names, key=trial.median)
    rows = [[name, seconds(trial.median(name)), f"{len(tasks) / trial.median(name):.2f}",
             ratio(trial.median(name) / ours)] for name in trial.times]
    ours_replies = first_replies(runs.last["playprm"])
    clem_replies = first_replies(runs.last[best.replace("clem run -b ", "clem-b")])
    same = sum(1 for k, v in ours_replies.items() if clem_replies.get(k, "").strip() == v.strip())
    costs = run_costs(runs.last["playprm"])
    measured = trial.median(best) / ours
    goals = [Goal(
        text=f"playprm eval >= 5x faster than clemcore's runner at its best batch size ({best})", measured=measured,
        limit=5, met=measured >= 5,
        why_missed=(f"every episode here ends after {costs['policy_turns'] / max(costs['episodes'], 1):.1f} policy "
                    f"turn(s) on average (a random model breaks the reply formats), so a run is one batch of "
                    f"first turns plus model loading and file writing on both sides. clemcore batches only "
                    f"within a game ({len(tasks) // len(workload.GAMES)} episodes each here, so -b 16 would "
                    f"equal -b 8) and runs games one after another; playprm puts all {len(tasks)} first turns in "
                    f"one call. With one batch per game against one batch in all, the gap is bounded by the "
                    f"number of games and the fixed costs, not by decoding; playprm's lead grows with turns per "
                    f"episode and episodes per game."),
    )]
    notes = [
        f"Both sides load the model in every run (clemcore: `HuggingfaceLocal.get_model_for`, which sets one torch "
        f"thread; playprm: all {usable_cpus()} usable cores) and write clemcore's "
        f"results layout.",
        f"Greedy first replies identical on {same} of {len(ours_replies)} episodes (playprm against {best}); "
        f"clemcore wrote {len(clem_replies)} of {len(tasks)} episodes, its runs ended "
        f"{', '.join(sorted({str(trial.outputs[name]) for name in clem_names}))}.",
        "clemcore's huggingface_local entry needs `eos_to_cull` in model_config (its packaged Qwen entries have "
        "it); without it every reply fails with KeyError 'eos_to_cull'. The workspace entry sets it.",
    ]
    return Figure(
        key="episodes", title="3. Episode throughput against clemcore's runner",
        setup=(f"{len(tasks)} episodes (wordle, taboo, referencegame; --limit {limit}), the {models.label} tiny "
               f"policy, greedy, max {max_tokens} tokens, {pairs} alternated rounds; times are medians of whole "
               f"runs, model loading included."),
        header=["runner", "wall s", "episodes/s", "x playprm"], rows=rows, raw=trial.times, goals=goals,
        notes=notes, seconds=time.perf_counter() - started,
    )


def best_of_n_overhead(models: workload.ModelPair, work: Path, *, limit: int = 2, max_tokens: int = 32,
                       ns=(4, 8), pairs: int = 3) -> Figure:
    """Figure 4: wall(best-of-n, PRM scoring included) / wall(greedy) on the same episodes, models preloaded."""
    from playprm.models.hf import HFPolicy
    from playprm.models.registry import resolve_policy
    from playprm.play import run_eval
    from playprm.prm.scorer import PRMScorer

    started = time.perf_counter()
    policy = HFPolicy(resolve_policy(str(models.policy)))
    scorer = PRMScorer.from_path(models.prm)
    runs = Runs(work / "bon-runs")

    def play(mode: str, n: int):
        label = "greedy" if mode == "greedy" else f"bon{n}"
        config = eval_config(str(models.policy), runs.new(label), limit=limit, max_tokens=max_tokens, mode=mode,
                             prm=None if mode == "greedy" else models.prm, n=n)
        return run_eval(config, policy=policy, scorer=scorer, progress=False)[1]

    calls = {"greedy": lambda: play("greedy", 1)}
    for n in ns:
        calls[f"best-of-{n}"] = lambda n=n: play("best-of-n", n)
    trial = alternate(calls, pairs=pairs)
    greedy = trial.median("greedy")
    rows = []
    for name in trial.times:
        costs = run_costs(runs.last["greedy" if name == "greedy" else f"bon{name.split('-')[-1]}"])
        rows.append([name, seconds(trial.median(name)), ratio(trial.median(name) / greedy),
                     str(costs["policy_turns"]), str(costs["generated_tokens"]), str(costs["prm_tokens"])])
    limits = {4: 1.5, 8: 2.0}
    goals = []
    for n in ns:
        if n not in limits:
            continue
        measured = trial.median(f"best-of-{n}") / greedy
        goals.append(Goal(
            text=f"best-of-{n} <= {limits[n]}x greedy", measured=measured, limit=limits[n],
            met=measured <= limits[n],
            why_missed=(f"the episodes are one policy turn each, so the run is mostly that turn: sampling {n} "
                        f"candidates costs what figure 1 measures for n={n} (decode rows grow n-fold on CPU), "
                        f"plus one PRM call over the {n} candidates (figure 2); fixed costs (games, files) are "
                        f"too small here to dilute it."),
        ))
    return Figure(
        key="best_of_n", title="4. Best-of-N overhead",
        setup=(f"The episodes of figure 3 ({limit} instances per experiment, 3 games), the {models.label} tiny "
               f"policy and PRM, loaded once; greedy at temperature 0, best-of-n at 0.7; max {max_tokens} tokens; "
               f"{pairs} alternated rounds; times are medians of whole runs."),
        header=["mode", "wall s", "x greedy", "policy turns", "generated tokens", "PRM tokens"], rows=rows,
        raw=trial.times, goals=goals, seconds=time.perf_counter() - started,
    )
