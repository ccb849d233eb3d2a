"""playprm eval against clem run on real clembench games: whole processes, greedy, the same episodes and token limit.

Usage: python benchmarks/real_games.py CLEMBENCH_DIR OUT_JSON --model DIR [--games G ...] [--instances NAME]
           [--per-experiment N] [--rounds R] [--max-tokens T] [--work DIR]

CLEMBENCH_DIR is a clembench checkout (clp-research/clembench); without it the script prints one "skipped: ..."
line and exits 0. --model is a Hugging Face model folder (SmolLM2-135M-Instruct, e.g. written by `playprm
import-gguf`), played greedy by `playprm eval` and by clemcore's huggingface_local backend. The selected games are
copied into --work (the checkout is never written), each with in/<NAME>_bench.json: the first N instances of each
experiment of in/<NAME>.json. Each round runs `playprm eval`, `clem run -b 1` (clem's default) and `clem run -b 16`,
each a new process; OUT_JSON gets every wall time, the clem / playprm ratios per round and their medians, the load
average, and whether every episode played on both sides has the same scores (and the same replies).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from playprm.bench import workload
from playprm.bench.episodes import (
    Runs,
    clem_run_process,
    episode_scores,
    playprm_eval_process,
    replies,
    same_replies,
)
from playprm.bench.timing import alternate

CLEM_MODEL = "smol-hf"
BATCHES = (1, 16)


def trimmed_suite(clembench: Path, games: list[str], instances: str, per_experiment: int, out: Path) -> str:
    """Copy ``games`` from the checkout into ``out`` and write in/<instances>_bench.json in each, the first
    ``per_experiment`` instances of every experiment; returns the new file's name for ``-i``."""
    name = f"{instances}_bench"
    shutil.rmtree(out, ignore_errors=True)
    for game in games:
        source = clembench / game
        shutil.copytree(source, out / game)
        data = json.loads((source / "in" / f"{instances}.json").read_text(encoding="utf-8"))
        for experiment in data["experiments"]:
            experiment["game_instances"] = experiment["game_instances"][:per_experiment]
        (out / game / "in" / f"{name}.json").write_text(json.dumps(data), encoding="utf-8")
    return name


def score_clem_run(workspace: Path, results: Path) -> None:
    """``clem score`` on a clem run's folder (clem run plays only; playprm scores at each episode's end), untimed."""
    clem = Path(sys.executable).with_name("clem")
    subprocess.run([str(clem), "score", "-r", str(results.resolve())], cwd=workspace, env=workload.user_env(),
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)


def compare_scores(ours: dict[str, str], theirs: dict[str, str]) -> dict:
    """Episodes each side scored, and how many of those both scored have the same episode scores."""
    both = sorted(set(ours) & set(theirs))
    return {"playprm_episodes": len(ours), "clem_episodes": len(theirs), "both": len(both),
            "same_scores": sum(1 for key in both if ours[key] == theirs[key]),
            "different": [key for key in both if ours[key] != theirs[key]]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("clembench", type=Path)
    parser.add_argument("out_json", type=Path)
    parser.add_argument("--model", type=Path, required=True, help="a Hugging Face model folder (SmolLM2)")
    parser.add_argument("--games", nargs="+", default=["referencegame", "matchit_ascii"])
    parser.add_argument("--instances", default="instances", help="the instances file in each game's in/, no .json")
    parser.add_argument("--per-experiment", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "playprm-real-games")
    args = parser.parse_args(argv)
    if not args.clembench.is_dir():
        print(f"skipped: no clembench checkout at {args.clembench}")
        return 0
    if not (args.model / "config.json").is_file():
        print(f"error: {args.model} is not a Hugging Face model folder (no config.json); give --model DIR",
              file=sys.stderr)
        return 2
    if args.per_experiment < 1 or args.rounds < 1:
        print("error: --per-experiment and --rounds must be at least 1", file=sys.stderr)
        return 2
    missing = [g for g in args.games if not (args.clembench / g / "in" / f"{args.instances}.json").is_file()]
    if missing:
        print(f"error: no in/{args.instances}.json in {', '.join(missing)} under {args.clembench}; pick games of the "
              f"checkout that have it (--games) or another --instances", file=sys.stderr)
        return 2
    from transformers import AutoTokenizer

    work = args.work.resolve()
    suite = work / "games"
    instances = trimmed_suite(args.clembench.resolve(), args.games, args.instances, args.per_experiment, suite)
    workspace = workload.write_clem_workspace(work / "clem-workspace", CLEM_MODEL, args.model,
                                              AutoTokenizer.from_pretrained(str(args.model)), games_dir=suite)
    runs = Runs(work / "runs")
    policy = workload.ModelPair(size=None, policy=args.model.resolve(), prm=None)
    calls = {"playprm eval": lambda: playprm_eval_process(
        policy, runs, games=args.games, limit=None, max_tokens=args.max_tokens,
        extra=["--games-dir", str(suite), "-i", instances], cwd=workspace)}  # as clem: games write in the cwd
    for b in BATCHES:
        calls[f"clem run -b {b}"] = (lambda b=b: clem_run_process(
            workspace, runs, games=args.games, batch_size=b, max_tokens=args.max_tokens, model=CLEM_MODEL,
            extra=["-i", instances]))
    load_before = os.getloadavg()
    trial = alternate(calls, pairs=args.rounds, warmup=0)  # whole processes: each pays its own imports and load
    load_after = os.getloadavg()
    ours = episode_scores(runs.last["playprm"])
    checks, ratios = {}, {}
    for b in BATCHES:
        name = f"clem run -b {b}"
        score_clem_run(workspace, runs.last[f"clem-b{b}"])
        checks[name] = compare_scores(ours, episode_scores(runs.last[f"clem-b{b}"]))
        checks[name]["same_replies"] = same_replies(replies(runs.last["playprm"]), replies(runs.last[f"clem-b{b}"]))
        per_round = [c / p for c, p in zip(trial.times[name], trial.times["playprm eval"])]
        ratios[name] = {"per_round": per_round, "median_of_rounds": statistics.median(per_round),
                        "of_medians": trial.ratio(name, "playprm eval")}
    report = {
        "command": " ".join([Path(sys.argv[0]).name, *(argv if argv is not None else sys.argv[1:])]),
        "games": args.games, "instances": f"{args.instances}.json, first {args.per_experiment} per experiment",
        "max_tokens": args.max_tokens, "rounds": args.rounds, "cpu_count": os.cpu_count(),
        "load_average_1_5_15": {"before": load_before, "after": load_after},
        "wall_s": trial.times, "median_wall_s": {name: trial.median(name) for name in trial.times},
        "clem_over_playprm": ratios, "scores": checks,
    }
    args.out_json.parent.mkdir(parents=True, exist_ok=True)
    temporary = args.out_json.with_suffix(".tmp")
    temporary.write_text(json.dumps(report, indent=2), encoding="utf-8")
    temporary.replace(args.out_json)  # nothing half-written
    for name, ratio in ratios.items():
        check = checks[name]
        print(f"{name}: median {trial.median(name):.1f} s against playprm eval {trial.median('playprm eval'):.1f} s, "
              f"x{ratio['median_of_rounds']:.2f} (rounds: {', '.join(f'{r:.2f}' for r in ratio['per_round'])}); "
              f"same scores {check['same_scores']} and same replies {check['same_replies']} of {check['both']} "
              f"(playprm {check['playprm_episodes']}, clem {check['clem_episodes']} episodes)")
    print(f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f}; wrote {args.out_json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
