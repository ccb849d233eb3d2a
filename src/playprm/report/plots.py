"""Figures: clemscore per model with CI bars, and clemscore against generation cost per run."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from playprm.atomic import save_atomic
from playprm.report.clemscore import CI_HIGH, CI_LOW, CLEMSCORE


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # files only; never needs a display
    import matplotlib.pyplot as plt

    return plt


def _error_bars(points: pd.Series, lows: pd.Series, highs: pd.Series) -> list[list[float]]:
    # a NaN bound draws no bar; matplotlib wants non-negative distances below and above the point
    below = [max(0.0, p - lo) if not math.isnan(lo) else 0.0 for p, lo in zip(points, lows, strict=True)]
    above = [max(0.0, hi - p) if not math.isnan(hi) else 0.0 for p, hi in zip(points, highs, strict=True)]
    return [below, above]


def plot_clemscore(table: pd.DataFrame, path: Path) -> Path:
    """Bar chart of clemscore per model (rows of ``compute_table``) with 95% CI bars, saved as PNG."""
    plt = _pyplot()
    scored = table[table[CLEMSCORE].notna()]
    # horizontal bars: model-pair names are long and stay readable on the y axis
    figure, axes = plt.subplots(figsize=(9.0, max(2.5, 0.5 * len(scored) + 1.5)))
    points = scored[CLEMSCORE].astype(float)
    axes.barh(
        range(len(scored)), points,
        xerr=_error_bars(points, scored[CLEMSCORE + CI_LOW].astype(float), scored[CLEMSCORE + CI_HIGH].astype(float)),
        capsize=4, color="#4C72B0",
    )
    axes.set_yticks(range(len(scored)), list(scored.index), fontsize=8)
    axes.invert_yaxis()  # first model on top, as in the table
    axes.set_xlabel("clemscore")
    axes.set_xlim(0, 100)
    axes.set_title("clemscore with 95% bootstrap CI")
    figure.tight_layout()
    save_atomic(path, lambda temporary: figure.savefig(temporary, format="png", dpi=120))
    plt.close(figure)
    return path


def _short_labels(labels: list) -> dict:
    """Point labels: the results-dir part of ``<dir>/<model-pair>`` where that alone tells runs apart (one dir per
    run, as the small pipeline writes), else the model pair; full labels sit in compare.csv."""
    for part in (0, -1):
        names = {label: str(label).split("/")[part] for label in labels}
        if len(set(names.values())) == len(labels):
            return names
    return {label: str(label) for label in labels}


def plot_compute(comparison: pd.DataFrame, path: Path, cost_column: str = "generated tokens / episode") -> Path:
    """clemscore against mean generated tokens per episode, one point per run of ``compare_runs``.

    Honest runs are circles, env-lookahead runs red crosses; runs without cost.json are left out.
    """
    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(6.5, 4.5))
    placed = comparison[comparison[cost_column].notna() & comparison[CLEMSCORE].notna()]
    short = _short_labels(list(comparison.index))
    styles = {False: ("o", "#4C72B0", "honest decoding"), True: ("x", "#C44E52", "env lookahead (not honest)")}
    for lookahead, (marker, color, label) in styles.items():
        runs = placed[placed["env_lookahead"] == lookahead]
        if not len(runs):
            continue
        points = runs[CLEMSCORE].astype(float)
        axes.errorbar(
            runs[cost_column].astype(float), points,
            yerr=_error_bars(points, runs[CLEMSCORE + CI_LOW].astype(float), runs[CLEMSCORE + CI_HIGH].astype(float)),
            fmt=marker, color=color, capsize=4, label=label, markersize=8,
        )
        for name, x, y in zip(runs.index, runs[cost_column], points, strict=True):
            axes.annotate(short[name], (x, y), textcoords="offset points", xytext=(5, 5), fontsize=7)
    if not len(placed):
        why = ("no run has cost.json files" if comparison[cost_column].isna().all()
               else "no run has a clemscore (no episode was played to the end)")
        axes.text(0.5, 0.5, why, ha="center", va="center", transform=axes.transAxes)
    else:
        axes.legend(fontsize=8)
    axes.set_xlabel(f"mean {cost_column}")
    axes.set_ylabel("clemscore")
    axes.set_title("clemscore against compute (95% bootstrap CI)")
    figure.tight_layout()
    save_atomic(path, lambda temporary: figure.savefig(temporary, format="png", dpi=120))
    plt.close(figure)
    return path


def plot_game_differences(a: str, b: str, differences: list, path: Path) -> Path:
    """Forest plot of a per-game paired comparison (``paired_games.per_game_differences``): one row per game,
    three panels (clemscore points, % played, quality; A - B with 95% CI), games ordered as the table."""
    plt = _pyplot()
    games = [d.game for d in differences]
    panels = (("clemscore points", "points", "points_ci"), ("% played", "played", "played_ci"),
              ("quality (Main Score)", "quality", "quality_ci"))
    figure, axes = plt.subplots(1, 3, sharey=True, figsize=(12.0, max(3.0, 0.32 * len(games) + 1.6)))
    rows = list(range(len(games)))
    for axis, (title, name, interval) in zip(axes, panels, strict=True):
        points = pd.Series([getattr(d, name) for d in differences], dtype=float)
        lows = pd.Series([getattr(d, interval)[0] for d in differences], dtype=float)
        highs = pd.Series([getattr(d, interval)[1] for d in differences], dtype=float)
        colors = ["#C44E52" if hi < 0 else "#55A868" if lo > 0 else "#8C8C8C"
                  for lo, hi in zip(lows, highs, strict=True)]
        bars = _error_bars(points.fillna(0.0), lows, highs)
        for row, point, color, below, above in zip(rows, points, colors, *bars, strict=True):
            if math.isnan(point):
                continue
            axis.errorbar([point], [row], xerr=[[below], [above]], fmt="o", color=color, capsize=3, markersize=5)
        axis.axvline(0.0, color="black", linewidth=0.8)
        axis.set_title(f"{title}, A - B", fontsize=10)
        axis.grid(axis="x", alpha=0.3)
    axes[0].set_yticks(rows, games, fontsize=8)
    axes[0].invert_yaxis()  # most lost on top, as in the table
    figure.suptitle(f"A = {a}  vs  B = {b}: paired per-game differences (95% bootstrap CI; red: A lower, "
                    "green: A higher)", fontsize=10)
    figure.tight_layout()
    save_atomic(path, lambda temporary: figure.savefig(temporary, format="png", dpi=120))
    plt.close(figure)
    return path
