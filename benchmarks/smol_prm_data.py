"""The smol PRM's AUROC against the amount of rollout data and training steps, on validation turns (issue 61 item 6).

The smol preset trains its PRM on the SFT policy's own rollouts of 8 training instances per experiment (4 samples
each: ~100 turn records) for 24 steps; its AUROC on held-out turns sat at chance (0.45, 0.47). This script asks
where more data and more steps take it, on turns the PRM never trained on and that are not the held-out games:

1. the SFT policy's rollouts of the first ``max(--instances)`` training instances per experiment (temperature 1.0,
   the preset's samples per instance), so that each smaller size is a subset of the larger one;
2. its rollouts of the validation split (every instance, the same sampling), outcome-labelled: the turns AUROC is
   read on (the pipeline's own ``splits/validation``, never the held-out games);
3. for each size N and step count S: ``train-prm`` on the turns of the first N instances of each experiment (the
   preset's PRM flags otherwise), its validation set those validation turns; its ``validation_auroc`` is the row.

    python benchmarks/smol_prm_data.py --workdir runs/smol_s0 [--instances 8 32 64] [--steps 24 96]
                                       [--init base|sft]

``--workdir`` is a ``playprm pipeline --preset smol`` folder past its ``train-sft`` stage. ``--init sft`` trains the
PRM on the SFT policy's weights (its LoRA merged into the base, ``prm_curve/sft-merged``) instead of the base's: the
policy has learned the comparison the PRM has to judge. Everything goes under ``<workdir>/prm_curve/``; finished
steps are skipped, so a stopped run resumes. The table (Markdown) goes to stdout and ``prm_curve/curve.md``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

from playprm.cli import main as playprm
from playprm.pipeline.smol import TRAIN, VALIDATION, SmolPreset


def run(marker: Path, argv: list[str]) -> None:
    """One playprm command unless ``marker`` exists (what it writes once finished)."""
    if marker.exists():
        return
    print("==", " ".join(argv), flush=True)
    if playprm(argv) != 0:
        sys.exit(f"{argv[0]} failed; rerun the same command to resume")


def records(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "train.jsonl").read_text().splitlines() if line.strip()]


def first_instances(rows: list[dict], n: int) -> list[dict]:
    """The records of the first ``n`` instances (by game_id) of each experiment."""
    ids: dict[str, set] = {}
    for record in rows:
        meta = record["meta"]
        ids.setdefault(meta["experiment"], set()).add(meta["game_id"])
    kept = {experiment: set(sorted(found)[:n]) for experiment, found in ids.items()}
    return [r for r in rows if r["meta"]["game_id"] in kept[r["meta"]["experiment"]]]


def write_split(folder: Path, train: list[dict], validation: list[dict], readme: Path) -> None:
    staging = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for name, rows in (("train", train), ("validation", validation)):
        (staging / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    shutil.copy(readme, staging / "README.md")
    staging.rename(folder)


def merged_sft(workdir: Path, out: Path) -> Path:
    """The SFT policy's LoRA merged into its base, as a plain model folder (train-prm takes no adapter)."""
    if (out / "config.json").is_file():
        return out
    from peft import AutoPeftModelForCausalLM
    from transformers import AutoTokenizer

    model = AutoPeftModelForCausalLM.from_pretrained(str(workdir / "sft-policy")).merge_and_unload()
    staging = out.with_name(out.name + ".tmp")
    shutil.rmtree(staging, ignore_errors=True)
    model.save_pretrained(staging)
    AutoTokenizer.from_pretrained(str(workdir / "sft-policy")).save_pretrained(staging)
    staging.rename(out)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--instances", type=int, nargs="+", default=[8, 32, 64],
                        help="training instances per experiment whose rollouts the PRM learns from")
    parser.add_argument("--steps", type=int, nargs="+", default=[24, 96], help="PRM training steps")
    parser.add_argument("--validation-instances", type=int, default=SmolPreset.validation_instances,
                        help="validation instances per experiment played for the AUROC turns (default: all)")
    parser.add_argument("--init", choices=["base", "sft"], default="base",
                        help="the weights the PRM starts from: the base model (the preset's) or the SFT policy's")
    args = parser.parse_args()
    w = args.workdir
    if not (w / "pipeline_run.json").is_file() or not (w / "sft-policy" / "adapter_config.json").is_file():
        parser.error(f"--workdir {w}: needs a --preset smol run past its train-sft stage")
    seed = int(json.loads((w / "pipeline_run.json").read_text()).get("seed", 0))
    preset = SmolPreset(seed=seed)
    out = w / "prm_curve"
    sampling = ["--samples-per-instance", str(preset.rollout_samples), "--temperature", "1.0",
                "--max-tokens", str(preset.max_tokens), "--seed", str(seed), "--game", preset.game]
    started = time.perf_counter()
    for split, limit, name in ((TRAIN, max(args.instances), "rollouts"),
                               (VALIDATION, args.validation_instances, "validation-rollouts")):
        run(out / name / ".done", ["collect", "--policy-model", str(w / "sft-policy"), "--games-dir", str(w / split),
                                   "--limit", str(limit), *sampling, "--results-dir", str(out / name)])
        (out / name / ".done").touch()
        run(out / f"{name}-data" / "README.md", ["prm-data", "--results-dir", str(out / name), "--labels", "outcome",
                                                 "--val-fraction", "0", "--out", str(out / f"{name}-data")])
    base = str(merged_sft(w, out / "sft-merged")) if args.init == "sft" else str(w / "base")
    train, validation = records(out / "rollouts-data"), records(out / "validation-rollouts-data")
    rows = []
    for n in args.instances:
        data = out / f"data-{n}"
        subset = first_instances(train, n)
        if not data.is_dir():
            write_split(data, subset, validation, out / "rollouts-data" / "README.md")
        for steps in args.steps:
            prm = out / f"prm-{args.init}-{n}-{steps}"
            run(prm / "prm_config.json", [
                "train-prm", "--model", base, "--data", str(data), "--output-dir", str(prm), "--max-steps", str(steps),
                "--per-device-train-batch-size", str(preset.prm_batch), "--effective-batch-size", str(preset.prm_batch),
                "--per-device-eval-batch-size", "8", "--learning-rate", "5e-4", "--eval-steps", str(steps),
                "--save-steps", str(steps), "--max-length", "1024", "--warmup-steps", "0",
                "--lr-scheduler-type", "constant", "--logging-steps", "4", "--activation-checkpointing", "false",
                "--seed", str(seed)])
            metrics = json.loads((prm / "metrics.json").read_text())
            rows.append((n, len(subset), steps, metrics.get("validation_auroc"), metrics.get("validation_brier")))
    positive = sum(r["label"] >= 0.5 for r in validation) / max(len(validation), 1)
    lines = [f"PRM from the {args.init} weights; AUROC and Brier on {len(validation)} validation turns "
             f"({positive:.0%} from won episodes) of seed {seed}; {time.perf_counter() - started:.0f} s", "",
             "| instances per experiment | training turns | steps | validation AUROC | Brier |",
             "| ---: | ---: | ---: | ---: | ---: |"]
    number = lambda x: "-" if x is None else f"{x:.3f}"  # noqa: E731
    lines += [f"| {n} | {turns} | {steps} | {number(auroc)} | {number(brier)} |"
              for n, turns, steps, auroc, brier in rows]
    text = "\n".join(lines) + "\n"
    (out / f"curve-{args.init}.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
