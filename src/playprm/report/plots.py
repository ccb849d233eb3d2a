"""Figures: clemscore per model with CI bars, and clemscore against generation cost per run."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from playprm.atomic import save_atomic
from playprm.report.clemscore import CI_HIGH, CI_LOW, CLEMSCORE, ENV_LOOKAHEAD, INTERACTIVE, STATSCORE


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # files only; never needs a display
    import matplotlib.pyplot as plt

    return plt


def save_png(figure, path: Path) -> Path:
    """Write ``figure`` to ``path`` as PNG (atomically), its canvas grown to hold every title, label and legend
    (``bbox_inches="tight"``: text placed outside the axes is never cut at an edge)."""
    save_atomic(path, lambda temporary: figure.savefig(temporary, format="png", dpi=120, bbox_inches="tight"))
    return path


def _error_bars(points: pd.Series, lows: pd.Series, highs: pd.Series) -> list[list[float]]:
    # a NaN bound draws no bar; matplotlib wants non-negative distances below and above the point
    below = [max(0.0, p - lo) if not math.isnan(lo) else 0.0 for p, lo in zip(points, lows, strict=True)]
    above = [max(0.0, hi - p) if not math.isnan(hi) else 0.0 for p, hi in zip(points, highs, strict=True)]
    return [below, above]


def plotted_scores(static: bool) -> list[tuple[str, str, str]]:
    """``(column, label, colour)`` of the scores a figure shows: with static tasks Playpen's clemscore and
    statscore, each named, and clemcore's all-games clemscore labelled as such; without, the one clemscore."""
    if not static:
        return [(CLEMSCORE, "clemscore (clemcore's, all games; none static)", "#4C72B0")]
    return [(INTERACTIVE, "Playpen clemscore (interactive games)", "#4C72B0"),
            (STATSCORE, "Playpen statscore (static tasks)", "#DD8452"),
            (CLEMSCORE, "clemcore clemscore (all games)", "#A0A0A0")]


def plot_clemscore(table: pd.DataFrame, path: Path) -> Path:
    """Bars per model (rows of ``compute_table``) with 95% CI bars and each value written beside its bar: Playpen's
    clemscore and statscore and clemcore's all-games clemscore where the games include static tasks (the table's
    ``static_games``), else clemcore's clemscore; every bar is named in the legend. Saved as PNG."""
    plt = _pyplot()
    scores = plotted_scores(bool(table.attrs.get("static_games")))
    scored = table[table[CLEMSCORE].notna()]
    lookahead = (scored[ENV_LOOKAHEAD].fillna(False).astype(bool) if ENV_LOOKAHEAD in scored.columns
                 else pd.Series(False, index=scored.index))
    scored, lookahead = scored.loc[lookahead.sort_values(kind="stable").index], lookahead.sort_values(kind="stable")
    width = 0.8 / len(scores)
    # horizontal bars: model-pair names are long and stay readable on the y axis
    figure, axes = plt.subplots(figsize=(9.0, max(2.8, (0.35 * len(scores) + 0.3) * len(scored) + 1.8)))
    for index, (column, label, colour) in enumerate(scores):
        points = scored[column].astype(float)
        rows = [row + (index - (len(scores) - 1) / 2) * width for row in range(len(scored))]
        axes.barh(rows, points.fillna(0.0), height=width, color=colour, label=label, capsize=3,
                  xerr=_error_bars(points.fillna(0.0), scored[column + CI_LOW].astype(float),
                                   scored[column + CI_HIGH].astype(float)))
        highs = scored[column + CI_HIGH].astype(float)
        for row, point, high in zip(rows, points, highs, strict=True):  # the value beside the bar, after its CI
            if not math.isnan(point):
                axes.annotate(f"{point:.2f}", (point if math.isnan(high) else max(point, high), row), xytext=(4, 0),
                              textcoords="offset points", va="center", fontsize=8)
    # environment-lookahead runs last and named so (as the tables keep them apart)
    axes.set_yticks(range(len(scored)), [f"{model} (env lookahead, not honest)" if flag else str(model)
                                         for model, flag in lookahead.items()], fontsize=8)
    axes.invert_yaxis()  # first model on top, as in the table
    axes.set_xlabel("score (0-100)")
    axes.set_xlim(0, 100)
    axes.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=len(scores), frameon=False)
    axes.set_title("clemscore with 95% bootstrap CI" if len(scores) == 1 else
                   "Playpen's clemscore and statscore, and clemcore's all-games clemscore (95% bootstrap CI)",
                   fontsize=10)
    figure.tight_layout()
    save_png(figure, path)
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
    """clemscore against mean generated tokens per episode, one point per run of ``compare_runs``: Playpen's
    clemscore (interactive games) where a run has static tasks, else clemcore's, named on the axis.

    Honest runs are circles, env-lookahead runs red crosses; runs without cost.json are left out.
    """
    plt = _pyplot()
    static = bool((comparison["static games"].fillna("") != "").any())
    score, score_label, _ = plotted_scores(static)[0]
    figure, axes = plt.subplots(figsize=(6.5, 4.5))
    placed = comparison[comparison[cost_column].notna() & comparison[score].notna()]
    short = _short_labels(list(comparison.index))
    styles = {False: ("o", "#4C72B0", "honest decoding"), True: ("x", "#C44E52", "env lookahead (not honest)")}
    for lookahead, (marker, color, label) in styles.items():
        runs = placed[placed["env_lookahead"] == lookahead]
        if not len(runs):
            continue
        points = runs[score].astype(float)
        axes.errorbar(
            runs[cost_column].astype(float), points,
            yerr=_error_bars(points, runs[score + CI_LOW].astype(float), runs[score + CI_HIGH].astype(float)),
            fmt=marker, color=color, capsize=4, label=label, markersize=8,
        )
        for name, x, y in zip(runs.index, runs[cost_column], points, strict=True):
            axes.annotate(short[name], (x, y), textcoords="offset points", xytext=(5, 5), fontsize=7)
    name = score_label.split(" (")[0]
    if not len(placed):
        why = ("no run has cost.json files" if comparison[cost_column].isna().all()
               else f"no run has a {name} (no episode of its games was played to the end)")
        axes.text(0.5, 0.5, why, ha="center", va="center", transform=axes.transAxes)
    else:
        axes.legend(fontsize=8)
    left_out = left_out_runs(comparison, score, cost_column)
    if left_out:  # a run the plot cannot place is named, never dropped in silence
        figure.text(0.01, -0.02, "left out: " + "; ".join(f"{short[label]} ({why})" for label, why in left_out),
                    fontsize=7, va="top", wrap=True)
    axes.set_xlabel(f"mean {cost_column}")
    axes.set_ylabel(score_label)
    axes.set_title(f"{name} against compute (95% bootstrap CI)", fontsize=10)
    figure.tight_layout()
    save_png(figure, path)
    plt.close(figure)
    return path


def left_out_runs(comparison: pd.DataFrame, score: str, cost_column: str = "generated tokens / episode"
                  ) -> list[tuple[str, str]]:
    """``(run, why)`` for each run of a comparison that ``plot_compute`` cannot place: no score (no episode of
    its games played to the end) or no cost.json."""
    return [(label, "no clemscore: no episode played to the end" if pd.isna(row[score]) else "no cost.json")
            for label, row in comparison.iterrows() if pd.isna(row[score]) or pd.isna(row[cost_column])]


GAINED, LOST, UNSURE = "#55A868", "#C44E52", "#8C8C8C"


def plot_game_differences(a: str, b: str, differences: list, path: Path, *, static: set[str] = frozenset(),
                          totals: list = ()) -> Path:
    """Forest plot of a per-game paired comparison (``paired_games.per_game_differences``): one row per game (static
    tasks marked and below the interactive games), the overall paired differences (``totals``:
    ``paired.PairedDifference`` per score) on top, three panels (score points, % played, quality; A - B with 95%
    CI). Green: A higher, red: A lower (the CI excludes 0); grey: the CI includes 0."""
    plt = _pyplot()
    from matplotlib.lines import Line2D

    ordered = ([d for d in differences if d.game not in static] + [d for d in differences if d.game in static])
    totals = [t for t in totals if t.episodes]
    labels = [f"overall: {t.score}" for t in totals] + [f"{d.game} (static)" if d.game in static else d.game
                                                        for d in ordered]
    panels = (("score points", "points", "points_ci"), ("% played", "played", "played_ci"),
              ("quality (Main Score)", "quality", "quality_ci"))
    figure, axes = plt.subplots(1, 3, sharey=True, figsize=(13.0, max(3.4, 0.32 * len(labels) + 2.2)))
    for axis, (title, name, interval) in zip(axes, panels, strict=True):
        values = [(t.difference, t.low, t.high) if name == "points" else (math.nan,) * 3 for t in totals]
        values += [(getattr(d, name), *getattr(d, interval)) for d in ordered]
        for row, (point, low, high) in enumerate(values):
            if math.isnan(point):
                continue
            color = LOST if high < 0 else GAINED if low > 0 else UNSURE
            (below,), (above,) = _error_bars(pd.Series([point]), pd.Series([low]), pd.Series([high]))
            overall = row < len(totals)
            axis.errorbar([point], [row], xerr=[[below], [above]], fmt="D" if overall else "o", color=color,
                          capsize=3, markersize=7 if overall else 5)
        if totals:
            axis.axhline(len(totals) - 0.5, color="black", linewidth=0.6)
        static_rows = [i for i, d in enumerate(ordered) if d.game in static]
        if static_rows and len(static_rows) < len(ordered):
            axis.axhline(len(totals) + static_rows[0] - 0.5, color="black", linewidth=0.4, linestyle="--")
        axis.axvline(0.0, color="black", linewidth=0.8)
        axis.set_title(f"{title}, A - B", fontsize=10)
        axis.grid(axis="x", alpha=0.3)
    axes[0].set_yticks(range(len(labels)), labels, fontsize=8)
    axes[0].invert_yaxis()  # overall on top, then the games, most lost first, as in the table
    legend = [Line2D([], [], marker="o", linestyle="", color=GAINED, label="A higher (95% CI excludes 0)"),
              Line2D([], [], marker="o", linestyle="", color=LOST, label="A lower (95% CI excludes 0)"),
              Line2D([], [], marker="o", linestyle="", color=UNSURE, label="95% CI includes 0"),
              Line2D([], [], marker="D", linestyle="", color="black", label="overall paired difference")]
    figure.legend(handles=legend, loc="lower center", ncol=4, fontsize=8, frameon=False)
    points_of = ("score points: what a game alone moves its score by (interactive games: Playpen clemscore; static "
                 "tasks: statscore)" if static else "score points: what a game alone moves clemscore by")
    figure.suptitle(f"A = {a}  vs  B = {b}: paired differences on shared instances (95% bootstrap CI)\n{points_of}",
                    fontsize=9)
    figure.tight_layout(rect=(0, 0.05, 1, 1))
    save_png(figure, path)
    plt.close(figure)
    return path
