"""GRPO's levers on SmolLM2, one at a time, read on the validation split (issue 61 item 2).

The smol preset's GRPO row samples at temperature 1.0 with dropout off and the shared-prefix update; the earlier
runs at 0.5 had dropout on and TRL's update. This script trains the preset's GRPO row from the same SFT adapter
once per variant, changing one setting against the preset's (``VARIANTS``), plays each result greedily on the
validation split (never held-out) and pairs it against SFT greedy and against the preset's own row there:

    python benchmarks/grpo_levers.py --workdir runs/smol_s0 [--variants preset t0.5 dropout] [--steps 32]

``--workdir`` is a ``playprm pipeline --preset smol --seed S`` folder that has finished its ``train-sft`` and
``validation sft-greedy`` stages (``--grpo`` not needed; a finished ``grpo/policy`` is reused as the ``preset``
variant). Each variant writes under ``<workdir>/levers/<variant>/`` and is skipped when done, so a stopped run
resumes where it stopped. The table (Markdown) goes to stdout and ``<workdir>/levers/levers.md``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from playprm.cli import main as playprm
from playprm.pipeline.smol import VALIDATION, SmolPreset

# variant -> train-grpo flags changed from the preset's (the later flag wins in argparse)
VARIANTS = {
    "preset": [],  # temperature 1.0, dropout off, shared-prefix update
    "t0.5": ["--temperature", "0.5"],  # the earlier temperature, today's update
    "dropout": ["--disable-dropout", "false"],  # LoRA dropout on at 1.0 (the shared prefix then falls back to TRL's)
    "trl-update": ["--shared-prefix", "false"],  # TRL's update at 1.0, dropout off: the update path alone
}


def stage(marker: Path, argv: list[str], seconds: dict, name: str) -> None:
    """Run one playprm command unless ``marker`` says it finished; its wall seconds into ``seconds``."""
    if marker.exists():
        return
    print("==", name, " ".join(argv), flush=True)
    started = time.perf_counter()
    if playprm(argv) != 0:
        sys.exit(f"stage {name} failed; rerun the same command to resume")
    seconds[name] = round(time.perf_counter() - started, 1)
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.touch()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=None, help="the pipeline's seed (default: its pipeline_run.json)")
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--steps", type=int, default=None, help="GRPO steps (default: the preset's)")
    args = parser.parse_args()
    w = args.workdir
    run = json.loads((w / "pipeline_run.json").read_text()) if (w / "pipeline_run.json").is_file() else {}
    seed = args.seed if args.seed is not None else int(run.get("seed", 0))
    if run.get("preset", "smol") != "smol" or not (w / "sft-policy").is_dir() or not (w / "validation/sft-greedy").is_dir():
        parser.error(f"--workdir {w}: needs a --preset smol run with its sft-policy and validation/sft-greedy stages")
    # the preset's own argv (base given: the stages' list needs no .gguf to be built)
    steps = dict(SmolPreset(seed=seed, grpo=True, base=str(w / "base")).steps(w))
    grpo, validation = steps["train-grpo"], steps["validation sft-grpo-greedy"]
    seconds_file = w / "levers" / "seconds.json"
    seconds = json.loads(seconds_file.read_text()) if seconds_file.is_file() else {}
    from playprm.report.paired import paired_difference, run_episodes

    def clemscore(episodes) -> float:  # clemcore's: macro average over games of (% played / 100 x mean quality)
        games = episodes.groupby("game")
        return float((games["played"].mean() * games["quality"].mean()).mean())

    sft = run_episodes(w / "validation/sft-greedy")
    rows, reference = [], None
    for variant in args.variants:
        folder = w / "levers" / variant
        policy = w / "grpo/policy" if variant == "preset" and (w / "grpo/policy").is_dir() else folder / "policy"
        argv = list(grpo)
        argv[argv.index("--output-dir") + 1] = str(policy)
        if args.steps:
            argv[argv.index("--max-steps") + 1] = str(args.steps)
        if policy != w / "grpo/policy":
            stage(folder / "done.train", argv + VARIANTS[variant], seconds, f"{variant} train-grpo")
        played = list(validation)
        played[played.index("--policy-model") + 1] = str(policy)
        played[played.index("--results-dir") + 1] = str(folder / "validation")
        stage(folder / "done.validation", played, seconds, f"{variant} validation")
        seconds_file.write_text(json.dumps(seconds, indent=2))
        episodes = run_episodes(folder / "validation")
        against_sft = paired_difference(episodes, sft, names=(variant, "sft-greedy"))
        if variant == "preset":
            reference = episodes
        against_preset = (paired_difference(episodes, reference, names=(variant, "preset"))
                          if reference is not None and variant != "preset" else None)
        rows.append((variant, " ".join(VARIANTS[variant]) or "(the preset)", clemscore(episodes), against_sft,
                     against_preset,
                     seconds.get(f"{variant} train-grpo")))
    def fmt(d) -> str:  # a run that played no episode to the end has no clemscore, never 0
        if d is None:
            return ""
        return "no clemscore" if d.difference != d.difference else f"{d.difference:+.2f} [{d.low:+.2f}, {d.high:+.2f}]"

    lines = [f"GRPO levers on {VALIDATION} of {w} (seed {seed}), greedy, paired by instance", "",
             "| variant | flags against the preset | greedy | − SFT greedy [95 % CI] | − preset [95 % CI] | "
             "train-grpo s |", "| --- | --- | ---: | ---: | ---: | ---: |"]
    for variant, flags, score, against_sft, against_preset, train_seconds in rows:
        lines.append(f"| {variant} | {flags} | {'no clemscore' if score != score else f'{score:.2f}'} | {fmt(against_sft)} | {fmt(against_preset)} "
                     f"| {'' if train_seconds is None else f'{train_seconds:.0f}'} |")
    text = "\n".join(lines) + "\n"
    (w / "levers" / "levers.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
