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

    from playprm.report.plots import save_png

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
    save_png(figure, path)
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


# Sibling metrics: what best-of-N asks of a PRM (order replies to one context), measured on held-out siblings.
# A function of (records, scores) only, so predictions gathered from several ranks compose with it.


def sibling_pairs(records: list[dict], scores) -> list[dict]:
    """Every two different replies (by ``models.replies.move``; a repeated one counts once, as its first record) to
    one context, in a stable order: ``{"game",
    "context" (index of its context), "equal" (same label), "gap", "correct"}``. For replies with different labels
    ``gap`` is score(higher-labelled) - score(lower-labelled) and ``correct`` 1 when it is positive, 0.5 at a tie,
    0 otherwise; for equal labels ``gap`` is score(first) - score(second) in record order and ``correct`` None.

    Labels are compared within a context only, so mc labels and advantage labels (value minus the context's mean
    value) give the same pairs."""
    from itertools import combinations

    from playprm.data.rollout_tree import context_key
    from playprm.models.replies import move

    groups: dict[tuple, dict[str, tuple[float, float]]] = {}
    for record, score in zip(records, scores, strict=True):
        # a reply repeated in one context (two rollouts sampled it) is one move: its first record stands for it
        groups.setdefault(context_key(record), {}).setdefault(move(record["response"]),
                                                              (float(record["label"]), float(score)))
    pairs = []
    for index, (key, members) in enumerate(groups.items()):
        for (a_label, a_score), (b_label, b_score) in combinations(members.values(), 2):
            if a_label == b_label:
                pairs.append({"game": key[0], "context": index, "equal": True, "gap": a_score - b_score,
                              "correct": None})
                continue
            gap = a_score - b_score if a_label > b_label else b_score - a_score
            pairs.append({"game": key[0], "context": index, "equal": False, "gap": gap,
                          "correct": 1.0 if gap > 0 else 0.5 if gap == 0 else 0.0})
    return pairs


def _signal_to_noise(different: list[dict], equal: list[dict]) -> dict:
    delta = float(np.mean([p["gap"] for p in different])) if different else math.nan
    # an equal-value pair has no direction: sigma is taken over both orders, i.e. the root mean square gap
    sigma = float(np.sqrt(np.mean([p["gap"] ** 2 for p in equal]))) if equal else math.nan
    return {"delta": delta, "sigma": sigma}


def sibling_metrics(records: list[dict], scores) -> dict:
    """``{"sibling_accuracy", "sibling_pairs", "sibling_equal_pairs", "sibling_contexts", "sibling_delta",
    "sibling_sigma", "sibling_delta_over_sigma", "sibling_games": {game: {...the same per game...,
    "sigma_from"}}}`` over ``records`` scored ``scores`` (module section above; docs/inference.md).

    Sibling accuracy: share of different-label pairs whose higher-labelled reply scores higher (ties 1/2). Delta:
    mean score gap in favour of the higher-labelled reply. Sigma: root mean square score gap of equal-label
    pairs. A game without equal-label pairs takes sigma over every game's equal-label pairs (``sigma_from``
    "all games"); with none anywhere Delta/sigma is left out. Undefined values are left out (no NaN)."""
    pairs = sibling_pairs(records, scores)
    pooled = _signal_to_noise([p for p in pairs if not p["equal"]], [p for p in pairs if p["equal"]])

    def summary(members: list[dict]) -> dict:
        different, equal = [p for p in members if not p["equal"]], [p for p in members if p["equal"]]
        found = _signal_to_noise(different, equal)
        out = {"accuracy": float(np.mean([p["correct"] for p in different])) if different else math.nan,
               "pairs": len(different), "equal_pairs": len(equal),
               "contexts": len({p["context"] for p in different}), "delta": found["delta"],
               "sigma": found["sigma"] if equal else pooled["sigma"],
               "sigma_from": "this game" if equal else "all games"}
        out["delta_over_sigma"] = out["delta"] / out["sigma"] if out["sigma"] and out["sigma"] > 0 else math.nan
        return {k: v for k, v in out.items() if not (isinstance(v, float) and math.isnan(v))}

    overall = summary(pairs)
    overall.pop("sigma_from", None)
    games = {game: summary([p for p in pairs if p["game"] == game]) for game in sorted({p["game"] for p in pairs})}
    return {**{f"sibling_{key}": value for key, value in overall.items()}, "sibling_games": games}


def paired_sibling_difference(pairs_a: list[dict], pairs_b: list[dict], *, n_resamples: int = 2000,
                              seed: int = 0, level: float = 0.95) -> dict:
    """Sibling accuracy of A minus B on the same pairs (``sibling_pairs`` of the same records under two scorers)
    with a percentile bootstrap over contexts (pairs of one context share replies, so contexts are the unit):
    ``{"difference", "low", "high", "pairs", "contexts"}``."""
    rows = [(a["context"], a["correct"] - b["correct"]) for a, b in zip(pairs_a, pairs_b, strict=True)
            if not a["equal"]]
    if not rows:
        return {"pairs": 0, "contexts": 0}
    contexts = sorted({context for context, _ in rows})
    index = {context: i for i, context in enumerate(contexts)}
    sums, counts = np.zeros(len(contexts)), np.zeros(len(contexts))
    for context, difference in rows:
        sums[index[context]] += difference
        counts[index[context]] += 1
    draws = np.random.default_rng(seed).integers(0, len(contexts), size=(n_resamples, len(contexts)))
    replicates = sums[draws].sum(axis=1) / counts[draws].sum(axis=1)
    tail = (1 - level) / 2 * 100
    return {"difference": float(sums.sum() / counts.sum()), "low": float(np.percentile(replicates, tail)),
            "high": float(np.percentile(replicates, 100 - tail)), "pairs": len(rows), "contexts": len(contexts)}
