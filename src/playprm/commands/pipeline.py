"""``playprm pipeline``: the whole model-card pipeline as one job.

``--preset small`` (the default) measures the card's claim on CPU: an ε-noisy programmatic teacher, a small
policy trained from scratch on its wins, a PRM on the policy's own rollouts, an evaluation grid on held-out
instances and RESULTS.md (see ``playprm.small_preset``). ``--preset tiny`` is the quick smoke run: make-tiny -> collect -> sft-data -> train-sft -> prm-data ->
train-prm -> eval (greedy, best-of-n, beam-search) -> report --compare. A random-weight tiny model never wins a
game, so its rollouts are collected with the scripted random-valid-move policy (labelled so in the results);
the numbers show that every stage runs and connects, not that anything was learned.
``--preset qwen3.5-27b`` writes the same pipeline for real hardware as a runnable plan (commands, recipes and
SLURM scripts with the model card's settings) instead of running it.
"""

from __future__ import annotations

import json
import os
import shlex
import time
from pathlib import Path

from playprm.errors import UsageError

TINY_GAMES = ["--game-all", "--limit", "2"]
STAGE_FILE = "stage_seconds.json"


def register(subparsers) -> None:
    parser = subparsers.add_parser("pipeline", help="run (tiny) or write (qwen3.5-27b) the whole pipeline")
    parser.add_argument("--preset", choices=["small", "tiny", "qwen3.5-27b"], default="small",
                        help="small (default): the card's claim measured on CPU in ~25 minutes (RESULTS.md); "
                             "tiny: a quick smoke run of every stage; qwen3.5-27b: the real-hardware plan")
    parser.add_argument("--workdir", type=Path, default=Path("workdir"), help="where every stage writes")
    parser.add_argument("--seed", type=int, default=0, help="small preset: seed of splits, models and sampling")
    parser.set_defaults(func=run)


# a stage whose output marker exists is skipped on a rerun (collect and eval resume on their own)
DONE_MARKERS = {
    "make-tiny": "tiny/prm/prm_config.json",
    "sft-data": "sft-data/README.md",
    "train-sft": "sft-policy/model_registry.json",
    "prm-data": "prm-data/README.md",
    "train-prm": "prm/prm_config.json",
}


def tiny_steps() -> list[tuple[str, list[str]]]:
    """(stage, argv) for the CPU pipeline; paths are relative to the work directory."""
    return [
        # the smoke run uses plain Qwen3 for speed (the card's Qwen3.5 layout costs 2.2x on CPU, BENCHMARKS.md 1b;
        # it is tested on its own in tests/test_card_architecture.py)
        ("make-tiny", ["make-tiny", "--out", "tiny", "--arch", "qwen3"]),
        ("collect", ["collect", "--policy-model", "scripted:random-valid", *TINY_GAMES, "--samples-per-instance",
                     "4", "--branch-factor", "2", "--branch-depth", "1", "--temperature", "1.0",
                     "--results-dir", "rollouts"]),
        ("sft-data", ["sft-data", "--results-dir", "rollouts", "--out", "sft-data", "--tokenizer", "tiny/policy",
                      "--max-length", "1024"]),
        ("train-sft", ["train-sft", "--model", "tiny/policy", "--data", "sft-data", "--output-dir", "sft-policy",
                       "--max-steps", "40", "--per-device-train-batch-size", "8", "--effective-batch-size", "8",
                       "--learning-rate", "3e-3", "--model-name", "tiny-sft"]),
        ("prm-data", ["prm-data", "--results-dir", "rollouts", "--labels", "both", "--out", "prm-data"]),
        ("train-prm", ["train-prm", "--model", "tiny/policy", "--data", "prm-data", "--output-dir", "prm",
                       "--max-steps", "8", "--per-device-train-batch-size", "4", "--effective-batch-size", "8",
                       "--learning-rate", "1e-3"]),
        ("eval greedy", ["eval", "--policy-model", "tiny-sft", "--mode", "greedy", *TINY_GAMES,
                         "--max-tokens", "24", "--results-dir", "results"]),
        ("eval best-of-n", ["eval", "--policy-model", "tiny-sft", "--mode", "best-of-n", "--n-candidates", "4",
                            "--prm-path", "prm", *TINY_GAMES, "--max-tokens", "24", "--results-dir", "results"]),
        ("eval beam-search", ["eval", "--policy-model", "tiny-sft", "--mode", "beam-search", "--n-candidates",
                              "4", "--beam-width", "2", "--num-beam-iterations", "3", "--prm-path", "prm",
                              *TINY_GAMES, "--max-tokens", "24", "--results-dir", "results"]),
        ("report", ["report", "--compare", "results", "--out", "report"]),
    ]


def run(args) -> int:
    if args.workdir.exists() and not args.workdir.is_dir():
        raise UsageError(f"--workdir {args.workdir} exists and is not a directory")
    if args.preset == "qwen3.5-27b":
        from playprm.plan import write_plan

        path = write_plan(args.workdir)
        print(f"wrote the qwen3.5-27b plan to {path}; start with: bash {path / 'run_all.sh'}")
        return 0
    if args.preset == "small":
        from playprm import small_preset

        preset = small_preset.SmallPreset(seed=args.seed)
        return run_steps(args.workdir, preset.steps(), small_preset.DONE_MARKERS,
                         done=f"results: {args.workdir / 'RESULTS.md'} and results.json")
    return run_steps(args.workdir, tiny_steps(), DONE_MARKERS, done=f"comparison: {args.workdir / 'report'} "
                     "(compare.md, compute.png)")


def run_steps(workdir: Path, steps: list[tuple[str, list[str]]], markers: dict, *, done: str) -> int:
    """Run ``steps`` (stage, argv) as playprm commands inside ``workdir``, skipping stages whose marker exists;
    wall seconds per stage go to ``stage_seconds.json`` there (kept across reruns)."""
    from playprm import atomic
    from playprm.cli import main

    workdir.mkdir(parents=True, exist_ok=True)
    home = Path.cwd()
    os.chdir(workdir)  # registry files (model_registry.json written by train-sft) are read from here
    timings = []
    recorded = json.loads(Path(STAGE_FILE).read_text()) if Path(STAGE_FILE).is_file() else {}
    try:
        for stage, argv in steps:
            marker = markers.get(stage)
            if marker and Path(marker).exists():
                print(f"\n== {stage}: done earlier ({marker} exists), skipped", flush=True)
                continue
            print(f"\n== {stage}: playprm {shlex.join(argv)}", flush=True)
            start = time.perf_counter()
            code = main(argv)
            timings.append((stage, time.perf_counter() - start))
            recorded[stage] = round(recorded.get(stage, 0.0) + timings[-1][1], 1)
            atomic.write_json(STAGE_FILE, recorded)
            if code:
                print(f"pipeline stopped: stage '{stage}' failed (exit {code}); rerun the same command "
                      f"after fixing it: finished stages are skipped, collect and eval resume")
                return code
            if stage == "train-sft":
                _register_trained_policy(Path("sft-policy"))
    finally:
        os.chdir(home)
    print("\n== stage times")
    for stage, seconds in timings:
        print(f"  {stage:<18} {seconds:7.1f}s")
    print(f"  {'total':<18} {sum(s for _, s in timings):7.1f}s")
    print(f"\n{done}")
    return 0


def _register_trained_policy(output_dir: Path) -> None:
    """Copy the entry train-sft wrote into the work directory's model_registry.json (clemcore reads cwd)."""
    from playprm.models.registry import read_registry_file, write_registry_entry

    for entry in read_registry_file(output_dir / "model_registry.json"):
        write_registry_entry(Path("."), entry)
