"""Check playprm's report against published clemcore / Playpen tables, cell for cell.

Usage: python scripts/check_published_results.py CHECKOUT [--tolerance 0.01]

CHECKOUT is a clone of a results repository laid out as the LM Playschool 2026 final results
(lm-playpen/lm-playschool-2026-final-results): ``clem_indomain/<model>/...`` and ``clem_outofdomain/<model>/...``
each beside the ``results.csv`` that ``clem eval`` wrote, and ``playpen_runs/<model>/{clem,static}/<model>/...``
beside ``<model>.val.json`` (Playpen's clemscore and statscore). Every model folder is read with no flags, as a
user would (``playprm.report.clemscore.compute_table``); every published cell is compared. Exit 1 when any cell
differs by more than the tolerance. Not a test: the published folders are not shipped with playprm.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import pandas as pd

from playprm.report.clemscore import CLEMSCORE, INTERACTIVE, STATSCORE, compute_table


def _differences(published: pd.Series, ours: pd.Series, tolerance: float) -> list[str]:
    cells = []
    for column, value in published.items():
        mine = ours.get(column, float("nan"))
        if isinstance(value, float) and math.isnan(value) and (mine is None or math.isnan(float(mine))):
            continue
        if column not in ours or abs(float(value) - float(mine)) > tolerance:
            cells.append(f"{column}: published {value}, playprm {mine}")
    return cells


def check_split(folder: Path, tolerance: float) -> tuple[int, list[str]]:
    """Rows checked and the differing cells of one ``clem eval`` folder (results.csv beside model folders)."""
    published = pd.read_csv(folder / "results.csv", index_col=0)
    problems = []
    for model, row in published.iterrows():
        table = compute_table([folder / str(model)], n_resamples=1)
        problems += [f"{folder.name}/{model}: {cell}" for cell in _differences(row, table.loc[model], tolerance)]
    return len(published), problems


def check_playpen_runs(folder: Path, tolerance: float) -> tuple[int, list[str]]:
    """Rows checked and the differing numbers of Playpen run folders (``<model>.val.json`` beside clem/, static/)."""
    problems, rows = [], 0
    for run in sorted(p for p in folder.iterdir() if p.is_dir()):
        published_files = list(run.glob("*.val.json"))
        if not published_files:
            continue
        published = json.loads(published_files[0].read_text())
        table = compute_table([run], n_resamples=1)
        rows += 1
        mine = {"clemscore": float(table[INTERACTIVE].iloc[0]), "statscore": float(table[STATSCORE].iloc[0])}
        for name in ("clemscore", "statscore"):
            if abs(published[name] - mine[name]) > tolerance:
                problems.append(f"playpen_runs/{run.name}: {name} published {published[name]}, playprm {mine[name]} "
                                f"(clemcore all games: {float(table[CLEMSCORE].iloc[0])})")
    return rows, problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkout", type=Path)
    parser.add_argument("--tolerance", type=float, default=0.01)
    args = parser.parse_args(argv)
    failures = []
    for name in ("clem_indomain", "clem_outofdomain"):
        if (args.checkout / name / "results.csv").is_file():
            rows, problems = check_split(args.checkout / name, args.tolerance)
            print(f"{name}: {rows} published rows, {rows - len({p.split(':')[0] for p in problems})} equal to "
                  f"{args.tolerance} in every cell")
            failures += problems
    if (args.checkout / "playpen_runs").is_dir():
        rows, problems = check_playpen_runs(args.checkout / "playpen_runs", args.tolerance)
        print(f"playpen_runs: {rows} runs, {rows - len({p.split(':')[0] for p in problems})} with Playpen's "
              f"clemscore and statscore to {args.tolerance}")
        failures += problems
    for line in failures:
        print("DIFFERS " + line)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
