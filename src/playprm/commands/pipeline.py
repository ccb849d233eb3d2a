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
import shlex
import sys
import time
from pathlib import Path

from playprm.errors import UsageError
from playprm.redact import redact

TINY_GAMES = ["--game-all", "--limit", "2"]
STAGE_FILE = "stage_seconds.json"


def register(subparsers) -> None:
    parser = subparsers.add_parser("pipeline", help="run (tiny) or write (qwen3.5-27b) the whole pipeline")
    parser.add_argument("--preset", choices=["small", "tiny", "qwen3.5-27b"], default="small",
                        help="small (default): the card's claim measured on CPU in ~25 minutes (RESULTS.md); "
                             "tiny: a quick smoke run of every stage; qwen3.5-27b: the real-hardware plan")
    parser.add_argument("--workdir", type=Path, default=Path("workdir"), help="where every stage writes")
    parser.add_argument("--seed", type=int, default=0, help="small preset: seed of splits, models and sampling")
    parser.add_argument("--rounds", type=int, choices=[1, 2], default=1,
                        help="small preset: 2 adds expert iteration (the policy retrained on its own PRM-guided "
                             "best-of-4 wins, then evaluated greedy as sft-round2-greedy)")
    parser.set_defaults(func=run)


# a stage whose output marker (relative to the work directory) exists is skipped on a rerun (collect and eval
# resume on their own)
DONE_MARKERS = {
    "make-tiny": "tiny/prm/prm_config.json",
    "sft-data": "sft-data/README.md",
    "train-sft": "sft-policy/model_registry.json",
    "prm-data": "prm-data/README.md",
    "train-prm": "prm/prm_config.json",
}


def tiny_steps(workdir: Path) -> list[tuple[str, list[str]]]:
    """(stage, argv) for the CPU pipeline, every path under ``workdir``."""
    w = lambda path: str(Path(workdir) / path)  # noqa: E731
    policy = w("sft-policy")
    return [
        # the smoke run uses plain Qwen3 for speed (the card's Qwen3.5 layout costs 2.2x on CPU, BENCHMARKS.md 1b;
        # it is tested on its own in tests/test_card_architecture.py)
        ("make-tiny", ["make-tiny", "--out", w("tiny"), "--arch", "qwen3"]),
        ("collect", ["collect", "--policy-model", "scripted:random-valid", *TINY_GAMES, "--samples-per-instance",
                     "4", "--branch-factor", "2", "--branch-depth", "1", "--temperature", "1.0",
                     "--results-dir", w("rollouts")]),
        ("sft-data", ["sft-data", "--results-dir", w("rollouts"), "--out", w("sft-data"), "--tokenizer",
                      w("tiny/policy"), "--max-length", "1024"]),
        ("train-sft", ["train-sft", "--model", w("tiny/policy"), "--data", w("sft-data"), "--output-dir", policy,
                       "--max-steps", "40", "--per-device-train-batch-size", "8", "--effective-batch-size", "8",
                       "--learning-rate", "3e-3", "--model-name", "tiny-sft"]),
        ("prm-data", ["prm-data", "--results-dir", w("rollouts"), "--labels", "both", "--out", w("prm-data")]),
        ("train-prm", ["train-prm", "--model", w("tiny/policy"), "--data", w("prm-data"), "--output-dir", w("prm"),
                       "--max-steps", "8", "--per-device-train-batch-size", "4", "--effective-batch-size", "8",
                       "--learning-rate", "1e-3"]),
        ("eval greedy", ["eval", "--policy-model", policy, "--mode", "greedy", *TINY_GAMES,
                         "--max-tokens", "24", "--results-dir", w("results")]),
        ("eval best-of-n", ["eval", "--policy-model", policy, "--mode", "best-of-n", "--n-candidates", "4",
                            "--prm-path", w("prm"), *TINY_GAMES, "--max-tokens", "24", "--results-dir", w("results")]),
        ("eval beam-search", ["eval", "--policy-model", policy, "--mode", "beam-search", "--n-candidates",
                              "4", "--beam-width", "2", "--num-beam-iterations", "3", "--prm-path", w("prm"),
                              *TINY_GAMES, "--max-tokens", "24", "--results-dir", w("results")]),
        ("report", ["report", "--compare", w("results"), "--out", w("report")]),
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

        preset = small_preset.SmallPreset(seed=args.seed, rounds=args.rounds)
        return run_steps(args.workdir, preset.steps(args.workdir), preset.done_markers(),
                         done=f"results: {args.workdir / 'RESULTS.md'} and results.json")
    return run_steps(args.workdir, tiny_steps(args.workdir), DONE_MARKERS,
                     done=f"comparison: {args.workdir / 'report'} (compare.md, compute.png)")


def run_steps(workdir: Path, steps: list[tuple[str, list[str]]], markers: dict, *, done: str) -> int:
    """Run ``steps`` (stage, argv whose paths lie under ``workdir``) as playprm commands from the current
    directory, printing each as a command a user could run, and skipping stages whose marker (relative to
    ``workdir``) exists; wall seconds per stage go to ``stage_seconds.json`` there (kept across reruns)."""
    from playprm import atomic
    from playprm.cli import build_parser

    workdir.mkdir(parents=True, exist_ok=True)
    parser = build_parser()
    timings = []
    stage_file = workdir / STAGE_FILE
    recorded = json.loads(stage_file.read_text()) if stage_file.is_file() else {}
    for stage, argv in steps:
        marker = markers.get(stage)
        if marker and (workdir / marker).exists():
            print(f"\n== {stage}: done earlier ({workdir / marker} exists), skipped", flush=True)
            continue
        print(f"\n== {stage}: playprm {shlex.join(argv)}", flush=True)
        start = time.perf_counter()
        code = run_stage(parser, argv)
        timings.append((stage, time.perf_counter() - start))
        recorded[stage] = round(recorded.get(stage, 0.0) + timings[-1][1], 1)
        atomic.write_json(stage_file, recorded)
        if code:
            print(f"pipeline stopped: stage '{stage}' failed (exit {code}); rerun the same command "
                  f"after fixing it: finished stages are skipped, collect and eval resume")
            return code
        if stage == "train-sft":
            _register_trained_policy(workdir, Path(argv[argv.index("--output-dir") + 1]))
    print("\n== stage times")
    for stage, seconds in timings:
        print(f"  {stage:<18} {seconds:7.1f}s")
    print(f"  {'total':<18} {sum(s for _, s in timings):7.1f}s")
    print(f"\n{done}")
    return 0


def run_stage(parser, argv: list[str]) -> int:
    """One stage: its command function called with ``argv`` parsed as ``playprm`` parses it; exit status 2 and
    the command's one-line message on a usage error, as on the command line."""
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except UsageError as error:
        print(f"playprm {args.command}: error: {redact(str(error))}", file=sys.stderr)
        return 2


def _register_trained_policy(workdir: Path, output_dir: Path) -> None:
    """Copy the entry train-sft wrote into the work directory's model_registry.json, so that a user working
    there can name the policy (the pipeline's own stages name its folder)."""
    from playprm.models.registry import read_registry_file, write_registry_entry

    for entry in read_registry_file(output_dir / "model_registry.json"):
        write_registry_entry(workdir, entry)
