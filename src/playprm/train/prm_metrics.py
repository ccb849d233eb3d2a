"""How well PRM scores separate and predict outcomes: AUROC, Brier score, a reliability (calibration) curve.

Labels are soft (a Monte-Carlo win rate or a 0/1 outcome). AUROC counts a label >= 0.5 as positive; the Brier
score and the calibration curve use the soft label itself.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

POSITIVE_AT = 0.5


def auroc(scores, labels) -> float:
    """Area under the ROC curve of ``scores`` against ``labels >= 0.5`` (ties count one half); NaN when only one
    class is present. The Mann-Whitney U statistic over average ranks."""
    scores = np.asarray(scores, dtype=np.float64)
    positive = np.asarray(labels, dtype=np.float64) >= POSITIVE_AT
    n_positive, n_negative = int(positive.sum()), int((~positive).sum())
    if n_positive == 0 or n_negative == 0:
        return math.nan
    order = np.argsort(scores, kind="mergesort")
    ranks = np.empty(len(scores), dtype=np.float64)
    sorted_scores = scores[order]
    start = 0
    while start < len(scores):  # average ranks over runs of tied scores
        end = start
        while end + 1 < len(scores) and sorted_scores[end + 1] == sorted_scores[start]:
            end += 1
        ranks[order[start:end + 1]] = (start + end) / 2 + 1
        start = end + 1
    u = ranks[positive].sum() - n_positive * (n_positive + 1) / 2
    return float(u / (n_positive * n_negative))


def brier_score(probabilities, labels) -> float:
    """Mean squared difference between predicted probabilities and (soft) labels; lower is better."""
    probabilities = np.asarray(probabilities, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.float64)
    return float(np.mean((probabilities - labels) ** 2)) if len(labels) else math.nan


def calibration_bins(probabilities, labels, bins: int = 10) -> list[dict]:
    """Equal-width probability bins: ``{"low", "high", "count", "mean_probability", "mean_label"}`` each."""
    probabilities = np.asarray(probabilities, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.float64)
    index = np.minimum((probabilities * bins).astype(int), bins - 1)
    rows = []
    for b in range(bins):
        members = index == b
        count = int(members.sum())
        rows.append({
            "low": b / bins, "high": (b + 1) / bins, "count": count,
            "mean_probability": float(probabilities[members].mean()) if count else None,
            "mean_label": float(labels[members].mean()) if count else None,
        })
    return rows


def plot_calibration(bins: list[dict], path: Path, title: str) -> None:
    """A reliability diagram (mean label against mean predicted probability per bin) with the bin counts below,
    written atomically to ``path`` (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from playprm.atomic import save_atomic

    filled = [b for b in bins if b["count"]]
    figure, (curve, counts) = plt.subplots(2, 1, figsize=(5, 6), height_ratios=(3, 1), sharex=True)
    curve.plot([0, 1], [0, 1], linestyle="--", color="grey", label="perfect calibration")
    curve.plot([b["mean_probability"] for b in filled], [b["mean_label"] for b in filled], marker="o",
               label="PRM")
    curve.set_ylabel("mean label")
    curve.set_xlim(0, 1)
    curve.set_ylim(0, 1)
    curve.set_title(title)
    curve.legend(loc="upper left")
    counts.bar([(b["low"] + b["high"]) / 2 for b in bins], [b["count"] for b in bins],
               width=1 / len(bins) * 0.9)
    counts.set_xlabel("predicted probability")
    counts.set_ylabel("turns")
    figure.tight_layout()
    save_atomic(path, lambda temporary: figure.savefig(temporary, format="png", dpi=120))
    plt.close(figure)


def prm_metrics(probabilities, labels, margins=None) -> dict:
    """``auroc``, ``brier``, ``count``, ``positive_rate`` and, given pair margins (chosen minus rejected score),
    ``pair_accuracy``; NaN-free values only (a metric that is undefined here is left out)."""
    metrics = {
        "auroc": auroc(probabilities, labels),
        "brier": brier_score(probabilities, labels),
        "count": len(labels),
        "positive_rate": float(np.mean(np.asarray(labels) >= POSITIVE_AT)) if len(labels) else math.nan,
    }
    if margins is not None and len(margins):
        metrics["pair_accuracy"] = float(np.mean(np.asarray(margins) > 0))
    return {key: value for key, value in metrics.items() if not (isinstance(value, float) and math.isnan(value))}
