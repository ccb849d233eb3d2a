"""The smol recipe across seeds: one row per ``playprm pipeline --preset smol`` work directory (issue 61 items 3-6).

For each work directory it reads what the pipeline has played so far (a run still under way gives the rows it has):

- SFT greedy on the 96 held-out games and on the validation split, each against the game's chance level
  (``smol.CHANCE``, the guesser's 1 in 3), a bootstrap CI over the episodes;
- with ``--grpo``: SFT + GRPO greedy on the held-out games, paired against SFT greedy on the same episodes;
- the PRM's AUROC on held-out turns, from the run's ``results.json`` once its summarize stage has run.

    python benchmarks/smol_seeds.py runs/smol_s0 runs/smol_s1 ...

prints a Markdown table (a dash where a stage has not run yet) and the command each row came from. It only reads.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from playprm.pipeline import smol
from playprm.report.clemscore import CLEMSCORE
from playprm.report.compare import compare_runs
from playprm.report.paired import against_level, paired_from_comparison

RESAMPLES = 1000


def _ci(d) -> str:
    return f"{d.difference:+.2f} [{d.low:+.2f}, {d.high:+.2f}]"


def against_chance(results: Path) -> tuple[str, str]:
    """(clemscore, clemscore − chance [CI]) of one greedy row's results folder, or dashes when it has none."""
    if not any(results.rglob("scores.json")):
        return "-", "-"
    comparison = compare_runs([results], n_resamples=RESAMPLES, seed=0)
    label = comparison.index[0]
    level = against_level(comparison, label, smol.CHANCE, label="chance")
    return f"{comparison.at[label, CLEMSCORE]:.2f}", _ci(level)


def paired(a: Path, b: Path) -> tuple[str, str]:
    """(a's clemscore, a − b paired over the same episodes [CI]), or dashes when a has not played."""
    if not any(a.rglob("scores.json")) or not any(b.rglob("scores.json")):
        return "-", "-"
    comparison = compare_runs([a, b], n_resamples=RESAMPLES, seed=0)
    first, second = comparison.index[:2]
    [difference] = paired_from_comparison(comparison, [(first, second)], n_resamples=RESAMPLES, seed=0)
    return f"{comparison.at[first, CLEMSCORE]:.2f}", _ci(difference)


def row(workdir: Path) -> list[str]:
    run = json.loads((workdir / "pipeline_run.json").read_text())
    held_out, grpo = against_chance(workdir / "results" / "sft-greedy"), paired(
        workdir / "results" / "sft-grpo-greedy", workdir / "results" / "sft-greedy")
    validation = against_chance(workdir / "validation" / "sft-greedy")[1]
    summary = workdir / "results.json"
    auroc = json.loads(summary.read_text()).get("prm", {}).get("auroc") if summary.is_file() else None
    commit = (workdir.parent / f"{workdir.name}.commit")
    return [str(run.get("seed", "?")), *held_out, validation, *grpo,
            "-" if auroc is None else f"{auroc:.2f}", commit.read_text()[:7] if commit.is_file() else "-"]


def main(argv: list[str]) -> int:
    if not argv:
        sys.exit(__doc__)
    missing = [p for p in argv if not (Path(p) / "pipeline_run.json").is_file()]
    if missing:
        sys.exit(f"not a pipeline work directory (no pipeline_run.json): {', '.join(missing)}")
    header = ["seed", "SFT greedy (held-out)", "− chance", "validation − chance", "SFT + GRPO greedy",
              "GRPO − SFT (paired)", "PRM AUROC (held-out turns)", "commit"]
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join(" ---: " for _ in header) + "|")
    for path in argv:
        print("| " + " | ".join(row(Path(path))) + " |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
