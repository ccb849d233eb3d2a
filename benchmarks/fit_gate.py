"""Fit the per-game gate's threshold on validation runs alone: split-half cross-fitting (``report.gating.cross_fit``).

Usage: python benchmarks/fit_gate.py WORKDIR [WORKDIR ...] [--out OUT_JSON]. Each WORKDIR is a small-preset work
directory (``playprm pipeline --preset small --seed S --workdir WORKDIR``) whose ``validation/<policy>-greedy`` and
``validation/<policy>-prm-bon4`` runs exist (the trained policy ``sft`` and the weaker ``weak``). For each threshold
τ, the rule "guide where best-of-4 − greedy on validation > τ" decides on a random half of a validation split and is
scored on the other half (the gain where it guides, 0 where it plays greedy); held-out instances are never read.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from playprm.report.gating import cross_fit
from playprm.report.paired import run_episodes

THRESHOLDS = [-100.0, -2.0, 0.0, 1.0, 2.0, 3.0, 5.0, 100.0]  # -100: always guide, 100: never


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workdirs", nargs="+", type=Path)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    comparisons = {}
    for workdir in args.workdirs:
        for kind in ("sft", "weak"):
            guided, greedy = workdir / "validation" / f"{kind}-prm-bon4", workdir / "validation" / f"{kind}-greedy"
            if guided.is_dir() and greedy.is_dir():
                comparisons[f"{workdir.name}/{kind}"] = (run_episodes(guided), run_episodes(greedy))
    fits = cross_fit(comparisons, THRESHOLDS)
    names = list(comparisons)
    print("τ (points) | mean held-half gain | share guided | " + " | ".join(names))
    for tau, fit in fits.items():
        print(f"{tau:+g} | {fit['gain']:+.2f} | {fit['guided']:.2f} | "
              + " | ".join(f"{fit['per_comparison'][n]:+.2f}" for n in names))
    best = max(THRESHOLDS, key=lambda tau: (round(fits[tau]["gain"], 2), tau))  # ties: the more conservative τ
    print(f"chosen τ: {best:+g}")
    document = {"thresholds": {str(t): f for t, f in fits.items()}, "chosen": best, "comparisons": names}
    if args.out:
        args.out.write_text(json.dumps(document, indent=1))
    return document


if __name__ == "__main__":
    main()
