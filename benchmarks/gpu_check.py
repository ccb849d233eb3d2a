"""One GPU check for a GPU node, offline: every import first, then the card's GPU steps, one JSON and one markdown.

1. Imports: every module a step needs, checked before anything runs; a missing one is named within seconds
   (exit 1), e.g. after installing the offline folder of scripts/gpu_wheels.sh with a wheel left out.
2. Steps, each in its own process with its own time limit, on random-weight models (no download):
   - ``train``: a QLoRA SFT step and a PRM training step on the card's Qwen3.5 layout at ~2.4B (s/step, peak
     memory; benchmarks/gpu_train_step.py);
   - ``inference``: best-of-4 with the PRM against greedy on the same contexts (wall-time ratio;
     benchmarks/gpu_inference.py);
   - ``decode``: decode tokens/s at batch 1 and 64 against the HBM roofline (benchmarks/gpu_generation.py);
   - ``dpo``: `playprm train-dpo` steps on the same layout, once that command exists;
   - ``train-27b``: the SFT and PRM steps on the Qwen3.5-27B text shape, where the disk holds its random weights
     and the time budget leaves room.
   Without CUDA each step prints one ``SKIP`` line. Exit 0 once the imports are there (a failed step is
   recorded as failed in the files).
Writes gpu_check.json and gpu_check.md to $OUT (or benchmarks/out/). Run it through benchmarks/gpu_check.sh.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
BASE = ["torch", "transformers", "tokenizers", "safetensors", "numpy", "yaml", "playprm.bench.gpu",
        "playprm.bench.report", "playprm.atomic"]
TRAIN = ["peft", "accelerate", "datasets", "trl", "bitsandbytes", "playprm.train.base_model", "playprm.train.qlora",
         "playprm.train.sft_config", "playprm.train.prm_config", "playprm.train.prm"]
POLICY = ["playprm.models.base", "playprm.models.hf", "playprm.chat"]
# step -> the modules its process imports (the playprm ones pull in their own third-party imports)
IMPORTS = {
    "train": BASE + TRAIN,
    "inference": BASE + POLICY + ["playprm.prm.model", "playprm.prm.scorer", "playprm.search.base",
                                  "playprm.search.best_of_n", "playprm.search.greedy"],
    "decode": BASE + POLICY,
    "dpo": BASE + TRAIN + ["playprm.cli", "playprm.train.dpo", "playprm.commands.train_dpo"],
    "train-27b": BASE + TRAIN,
}
DPO_COMMAND = "playprm.commands.train_dpo"
INSTALL_HINT = ("install the offline folder that scripts/gpu_wheels.sh writes: "
                "python3 -m pip install --no-index --no-deps DIR/*.whl")


def dpo_available() -> bool:
    try:
        return importlib.util.find_spec(DPO_COMMAND) is not None
    except ModuleNotFoundError:  # playprm itself missing: the import check names it
        return False


def missing_distributions(roots: list[str]) -> dict[str, str]:
    """``{distribution: why}`` for every requirement in the dependency closure of the installed ``roots`` that
    is not installed (what ``pip check`` would say, read from the installed metadata in a fraction of a second).
    A root that is not installed (a source checkout on PYTHONPATH) is left to the import check."""
    from importlib import metadata

    try:
        from packaging.requirements import Requirement
    except ImportError:  # no packaging (transformers brings it): the imports below still name what is missing
        return {}

    missing: dict[str, str] = {}
    seen: set[str] = set()
    pending = [(root, None) for root in roots]
    while pending:
        name, parent = pending.pop()
        key = name.lower().replace("_", "-")
        if key in seen:
            continue
        seen.add(key)
        try:
            requirements = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            if parent:
                missing[name] = f"not installed (required by {parent})"
            continue
        for text in requirements:
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                pending.append((requirement.name, name))
    return missing


def check_imports(steps: list[str]) -> dict[str, str]:
    """``{missing module: what failed to import, and for which steps}``; empty when every step can import."""
    needed: dict[str, list[str]] = {}
    for step in steps:
        if step == "dpo" and not dpo_available():
            continue  # no train-dpo command in this playprm: its step says so and needs nothing
        for module in IMPORTS[step]:
            needed.setdefault(module, []).append(step)
    # the installed closure first, then top-level packages (find_spec imports nothing): a missing wheel is named
    # at once; the imports themselves last
    missing = missing_distributions(["playprm"] + (["bitsandbytes"] if "bitsandbytes" in needed else []))
    if missing:
        return missing
    for module, users in needed.items():
        top = module.split(".")[0]
        if top not in missing and importlib.util.find_spec(top) is None:
            missing[top] = f"not installed (needed by: {', '.join(users)})"
    if missing:
        return missing
    for module, users in needed.items():
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as error:
            missing.setdefault(error.name or module, f"imported by {module} (needed by: {', '.join(users)})")
        except Exception as error:  # noqa: BLE001 - e.g. bitsandbytes failing to set up: named, not a traceback
            missing.setdefault(module, f"fails to import: {str(error).splitlines()[0] if str(error) else error!r}")
    return missing


def run_process(name: str, command: list[str], timeout: float, env: dict | None = None) -> tuple[int, str]:
    """Run one step's process, its output passed through; ``(exit status, last output line)``."""
    print(f"== {name}: {' '.join(command[1:])} (limit {timeout:.0f} s)", flush=True)
    environment = {**os.environ, **(env or {})}
    try:
        done = subprocess.run(command, env=environment, timeout=timeout, text=True, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, check=False)
    except subprocess.TimeoutExpired as error:
        output = error.stdout or ""
        output = output.decode(errors="replace") if isinstance(output, bytes) else output
        print(output, end="", flush=True)
        return 124, f"stopped after {timeout:.0f} s"
    print(done.stdout, end="", flush=True)
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    return done.returncode, lines[-1] if lines else ""


def train_step(scratch: Path, timeout: float, *flags: str) -> dict:
    out = scratch / ("train" + "".join(flags))
    code, last = run_process("train", [sys.executable, str(HERE / "gpu_train_step.py"), "--out", str(out),
                                       "--steps", "3", *flags], timeout)
    path = out / "gpu_train_step.json"
    if code or not path.exists():
        return {"status": "failed", "reason": f"exit {code}: {last}"}
    results = json.loads(path.read_text())["results"]
    if not results:
        return {"status": "skipped", "reason": last}
    return {"status": "ran", "jobs": [{k: r[k] for k in ("model", "job", "parameters", "batch", "length", "step_s",
                                                          "tokens_per_s", "peak_allocated_gib", "weights_gib")}
                                      for r in results]}


def inference_step(scratch: Path, timeout: float, model: str) -> dict:
    out = scratch / "inference"
    sizes = ["--contexts", "32"] if model != "tiny" else ["--contexts", "4", "--prompt-tokens", "64",
                                                           "--new-tokens", "8", "--prm-candidates", "4"]
    code, last = run_process("inference", [sys.executable, str(HERE / "gpu_inference.py"), "--ns", "4", *sizes,
                                           "--rounds", "2", "--model", model], timeout, {"OUT": str(out)})
    path = out / "gpu_inference.json"
    if code or not path.exists():
        return {"status": "failed", "reason": f"exit {code}: {last}"}
    data = json.loads(path.read_text())
    medians = data["medians"]
    return {"status": "ran", "engine": data["engine"], "greedy_s": medians["greedy"],
            "best_of_4_s": medians["best-of-4"], "best_of_4_over_greedy": medians["best-of-4"] / medians["greedy"],
            "prm_score_4_s": medians.get("PRM score 4 candidates"), "peak_gib": data.get("peak_gib")}


def decode_step(scratch: Path, timeout: float, model: str) -> dict:
    out = scratch / "decode"
    sizes = ["--batches", "1", "64"] if model != "tiny" else ["--batches", "1", "4", "--prompt-tokens", "64",
                                                              "--new-tokens", "8"]
    code, last = run_process("decode", [sys.executable, str(HERE / "gpu_generation.py"), *sizes, "--rounds", "2",
                                        "--model", model], timeout, {"OUT": str(out)})
    path = out / "gpu_generation.json"
    if code or not path.exists():
        return {"status": "failed", "reason": f"exit {code}: {last}"}
    rows = []
    for result in json.loads(path.read_text())["results"]:
        for row in result.get("rows", []):
            rows.append({"engine": result["engine"], "path": row["path"], "batch": row["batch"],
                         "decode_tokens_per_s": row["decode_tokens_per_s"], "roofline": row["roofline_with_kv"],
                         "of_roofline": row["decode_tokens_per_s"] / row["roofline_with_kv"]})
    return {"status": "ran" if rows else "failed", "rows": rows, **({} if rows else {"reason": last})}


def dpo_step(scratch: Path, timeout: float) -> dict:
    out = scratch / "dpo"
    code, last = run_process("dpo", [sys.executable, __file__, "--dpo-process", str(out)], timeout)
    path = out / "dpo_step.json"
    if code or not path.exists():
        return {"status": "failed", "reason": f"exit {code}: {last}"}
    return {"status": "ran", **json.loads(path.read_text())}


def dpo_process(out: Path, steps: int = 3, batch: int = 4, prompt_words: int = 300) -> None:
    """(Its own process.) `playprm train-dpo` on a random Qwen3.5-layout ~2.4B model: ``steps`` steps of
    ``batch`` pairs; wall time per step (the first included) and peak memory."""
    import torch

    sys.path.insert(0, str(HERE))
    from gpu_train_step import QWEN35_2B, write_random_model

    from playprm.bench import gpu
    from playprm.cli import main

    out.mkdir(parents=True, exist_ok=True)
    model_dir, data = out / "model", out / "pairs"
    parameters = write_random_model(*QWEN35_2B, model_dir)
    gpu.bench_tokenizer().save_pretrained(model_dir)
    data.mkdir()
    words = gpu.made_up_words(prompt_words * 2)
    for split, count in (("train", steps * batch), ("validation", batch)):
        pairs = [{"prompt": [{"role": "user", "content": f"Round {i}. " + " ".join(words[i:i + prompt_words])}],
                  "chosen": [{"role": "assistant", "content": "GUESS: house\nEXPLANATION: " + " ".join(words[:40])}],
                  "rejected": [{"role": "assistant", "content": "GUESS: mouse\nEXPLANATION: " + " ".join(words[40:80])}]}
                 for i in range(count)]
        (data / f"{split}.jsonl").write_text("".join(json.dumps(p) + "\n" for p in pairs))
    torch.cuda.reset_peak_memory_stats()
    started = time.perf_counter()
    code = main(["train-dpo", "--model", str(model_dir), "--data", str(data), "--output-dir", str(out / "run"),
                 "--require-cuda", "--max-steps", str(steps), "--per-device-train-batch-size", str(batch),
                 "--effective-batch-size", str(batch), "--max-length", "1024", "--logging-steps", "1",
                 "--eval-strategy", "no", "--save-strategy", "no", "--load-best-model-at-end", "false",
                 "--early-stopping-patience", "0", "--disable-tqdm", "true", "--report-to", "none"])
    wall = time.perf_counter() - started
    if code:
        raise SystemExit(code)
    metrics = json.loads((out / "run" / "metrics.json").read_text())
    runtime = metrics.get("train_runtime_s") or wall
    result = {"parameters": parameters, "batch": batch, "steps": steps, "wall_s": round(wall, 1),
              "step_s": round(runtime / steps, 3), "peak_allocated_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2)}
    (out / "dpo_step.json").write_text(json.dumps(result))
    print(f"train-dpo: {result['step_s']:.2f} s/step (first step included), peak {result['peak_allocated_gib']:.1f} GiB")


def markdown(results: dict, info: dict, seconds: float) -> str:
    from playprm.bench import report

    lines = ["## GPU check (benchmarks/gpu_check.sh)", "",
             f"- {info.get('gpu', 'no GPU')} ({info.get('gpu_memory_gib', '-')} GiB), torch {info['torch']}, "
             f"transformers {info['transformers']}, CUDA {info['cuda']}; {info['date']}; {seconds:.0f} s in all",
             "- random-weight models (no download); the card's Qwen3.5 layout at ~2.4B unless named", ""]
    rows = []
    for name, result in results.items():
        if result["status"] != "ran":
            rows.append([name, result["status"], result.get("reason", "")])
        elif name in ("train", "train-27b"):
            for job in result["jobs"]:
                rows.append([f"{name}: {job['model']} {job['job']}", "ran",
                             f"{job['step_s']:.2f} s/step ({job['batch']} x {job['length']} tokens), peak "
                             f"{job['peak_allocated_gib']:.1f} GiB, 4-bit weights {job['weights_gib']:.1f} GiB"])
        elif name == "inference":
            rows.append([name, "ran", f"best-of-4 / greedy = {result['best_of_4_over_greedy']:.2f} "
                                      f"({result['best_of_4_s']:.2f} s / {result['greedy_s']:.2f} s; {result['engine']})"])
        elif name == "decode":
            for row in result["rows"]:
                rows.append([f"decode: {row['path']} batch {row['batch']}", "ran",
                             f"{row['decode_tokens_per_s']:.0f} tok/s = {row['of_roofline']:.0%} of the HBM "
                             f"roofline ({row['roofline']:.0f} tok/s)"])
        elif name == "dpo":
            rows.append([name, "ran", f"{result['step_s']:.2f} s/step ({result['batch']} pairs, first step "
                                      f"included), peak {result['peak_allocated_gib']:.1f} GiB"])
    lines.append(report.table(["step", "status", "figures"], rows))
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=450,
                        help="seconds for all steps together (default 450: under 8 minutes with start-up)")
    parser.add_argument("--steps", nargs="+", choices=list(IMPORTS), default=list(IMPORTS))
    parser.add_argument("--imports-only", action="store_true", help="stop after the import check")
    parser.add_argument("--model", default="qwen3.5-2b", choices=["qwen3.5-2b", "tiny"],
                        help="inference and decode steps: tiny runs them on a CPU too (a smoke test of this script)")
    parser.add_argument("--dpo-process", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.dpo_process:
        dpo_process(args.dpo_process)
        return 0
    started = time.perf_counter()
    missing = check_imports(args.steps)
    for module, why in missing.items():
        print(f"gpu_check: missing {module}: {why}")
    if missing:
        print(f"gpu_check: stopped after {time.perf_counter() - started:.1f} s: {len(missing)} module(s) missing "
              f"({', '.join(missing)}); {INSTALL_HINT}")
        return 1
    print(f"gpu_check: every import of {', '.join(args.steps)} is there ({time.perf_counter() - started:.1f} s)")
    if args.imports_only:
        return 0

    import torch

    from playprm.bench import gpu

    cuda = torch.cuda.is_available()
    steps = {"train": lambda s, t: train_step(s, t), "inference": lambda s, t: inference_step(s, t, args.model),
             "decode": lambda s, t: decode_step(s, t, args.model),
             "dpo": dpo_step, "train-27b": lambda s, t: train_step(s, t, "--no-card-layout", "--qwen35-27b")}
    caps = {"train": 200, "inference": 90, "decode": 90, "dpo": 90, "train-27b": 1e9}  # seconds, within --budget
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="playprm-gpu-check-") as folder:
        for name in args.steps:
            left = args.budget - (time.perf_counter() - started)
            reason = None
            if name == "dpo" and not dpo_available():
                reason = "train-dpo not available (this playprm has no `playprm train-dpo` command yet)"
            elif not cuda and not (args.model == "tiny" and name in ("inference", "decode")):
                reason = "no CUDA device (torch.cuda.is_available() is False); run on a GPU node"
            elif name == "train-27b" and shutil.disk_usage(folder).free < 55 * 2**30:
                reason = (f"its random weights need ~55 GiB of disk; {shutil.disk_usage(folder).free / 2**30:.0f} GiB "
                          "free in TMPDIR")
            elif left < (240 if name == "train-27b" else 30):
                reason = f"{left:.0f} s left of --budget {args.budget:.0f}"
            if reason:
                print(f"SKIP {name}: {reason}", flush=True)
                results[name] = {"status": "skipped", "reason": reason}
                continue
            # a tiny smoke run on a CPU is limited by the budget alone (a shared CPU is slow to start torch)
            results[name] = steps[name](Path(folder), left if args.model == "tiny" else min(caps[name], left))
            if results[name]["status"] != "ran":
                print(f"{name}: {results[name]['status']}: {results[name].get('reason', '')}", flush=True)
    info = gpu.environment()
    seconds = time.perf_counter() - started
    gpu.write_results("gpu_check", {"environment": info, "seconds": round(seconds, 1), "budget_s": args.budget,
                                    "steps": results}, markdown(results, info, seconds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
