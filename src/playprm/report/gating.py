"""Per-game gating: which games a guided run guides, decided from a validation run's per-game paired comparison.

Snell et al. (2024) choose test-time compute per problem; a game benchmark's natural unit is the game. The
decision is read from the ``paired.json`` that ``playprm report --compare GREEDY GUIDED --paired GUIDED GREEDY``
writes for runs on *validation* instances (never the held-out ones): a game is guided when guidance won more than
``MIN_VALIDATION_POINTS`` clemscore points there (the per-game paired point estimate); every other game plays
greedy. A game the
validation run did not play is not guided (nothing says guidance pays there).

The gate can also be read from a PRM folder of ``train-prm`` (its ``metrics.json``), with no validation eval run:
a game is guided when the PRM's validation Δ/σ on sibling replies (``validation_sibling_games``: the mean score
gap in favour of the better of two replies to one context over the PRM's own gap between equal replies) is at
least ``MIN_DELTA_OVER_SIGMA`` on at least ``MIN_SIBLING_PAIRS`` pairs. Why 1: below it the PRM's noise between
replies of equal value is larger than the gap it finds in favour of the better one, and Dalal et al. (2026) find
the useful search width growing with (Δ/σ)². It is not tuned and is conservative: the PRMs measured on the small
preset sat at Δ/σ −0.28 to 0.69, and the one whose best-of-4 beat greedy on the weaker policy (mc labels, ``--loss
both``) had 0.41-0.56 there, so this rule would have kept those games greedy (BENCHMARKS.md, issue 33).
"""

from __future__ import annotations

import json
from pathlib import Path

from playprm.errors import UsageError

PAIRED_FILE = "paired.json"
# a game is guided when guidance beat greedy on the validation split by more than this many clemscore points (the
# paired point estimate). Fitted by ``cross_fit`` (benchmarks/fit_gate.py) on the small preset's validation runs of
# seeds 0-1 (2026-12-06): the held-half gain rose with τ (τ 0: −0.57, 2: −0.36, 5: −0.13 points; never guiding: 0),
# since best-of-4 lost on every validation comparison there; 5 is the most conservative finite τ tried: half a
# validation split's noise passes τ 0 in about 12 % of decisions and τ 5 in 2 % (docs/inference.md)
MIN_VALIDATION_POINTS = 5.0
# train-prm's metrics file (playprm.train.run_record.METRICS_FILE), named here: importing train/ from report/ would close
# a cycle (train/ reads reports back), which tests/test_where_things_live.py forbids
PRM_METRICS_FILE = "metrics.json"
MIN_DELTA_OVER_SIGMA = 1.0
MIN_SIBLING_PAIRS = 20


def read_gate(path: Path) -> dict[str, dict]:
    """``{game: {"guided": bool, "points": float, "ci": [low, high], "episodes": int, "reason": str}}`` from a
    report's paired.json (or the folder holding it): its first pair is read as (guided run, greedy run); or, from
    a PRM folder (``metrics.json`` and no paired.json), ``{game: {"guided": bool, "delta_over_sigma": float,
    "pairs": int, "reason": str}}`` by the sibling rule above. UsageError, one line, where the file is missing or
    has no per-game table."""
    path = Path(path)
    file = path / PAIRED_FILE if path.is_dir() else path
    if path.is_dir() and not file.is_file() and (path / PRM_METRICS_FILE).is_file():
        return sibling_gate(path / PRM_METRICS_FILE)
    if not file.is_file():
        raise UsageError(f"--gate-from {path}: no {PAIRED_FILE}; write one with `playprm report --compare GREEDY "
                         f"GUIDED --paired GUIDED GREEDY --out DIR` on validation runs, or give a train-prm folder "
                         f"(gated by its validation sibling Δ/σ)")
    try:
        document = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise UsageError(f"--gate-from {file} cannot be read ({error}); write it again with playprm report") from error
    pairs = document if isinstance(document, list) else []
    games = pairs[0].get("games") if pairs and isinstance(pairs[0], dict) else None
    if not isinstance(games, list) or not games:
        raise UsageError(f"--gate-from {file} holds no per-game table; write it with a playprm report that has "
                         f"--paired GUIDED GREEDY")
    a, b = pairs[0].get("a"), pairs[0].get("b")
    gate = {}
    for row in games:
        points = float(row.get("points", float("nan")))
        guided = points > MIN_VALIDATION_POINTS  # nan compares False: greedy
        verdict = "guided" if guided else "greedy"
        gate[str(row["game"])] = {
            "guided": guided, "points": points, "ci": row.get("points_ci"), "episodes": row.get("episodes"),
            "reason": f"{verdict}: {a} - {b} = {points:+.2f} clemscore points on {row.get('episodes')} validation "
                      f"episodes (guided above {MIN_VALIDATION_POINTS:+g})",
        }
    return gate


def sibling_gate(file: Path) -> dict[str, dict]:
    """The gate from a PRM's validation sibling metrics (``validation_sibling_games`` of train-prm's metrics.json):
    a game is guided when its Δ/σ is at least ``MIN_DELTA_OVER_SIGMA`` over at least ``MIN_SIBLING_PAIRS`` pairs."""
    try:
        metrics = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise UsageError(f"--gate-from {file} cannot be read ({error}); train the PRM again") from error
    games = metrics.get("validation_sibling_games") if isinstance(metrics, dict) else None
    if not isinstance(games, dict) or not games:
        raise UsageError(f"--gate-from {file.parent}: the PRM's metrics.json has no per-game sibling figures "
                         "(its validation data held no two different replies to one context with different labels: "
                         "train it on mc labels of `collect --branch-factor` rollouts), or gate from a validation "
                         "run's paired.json")
    gate = {}
    for game, row in games.items():
        ratio, pairs = row.get("delta_over_sigma"), row.get("pairs") or 0
        ratio = float(ratio) if isinstance(ratio, int | float) else float("nan")
        guided = ratio >= MIN_DELTA_OVER_SIGMA and pairs >= MIN_SIBLING_PAIRS  # nan compares False: greedy
        why = (f"Δ/σ {ratio:.3f} on {pairs} validation sibling pairs of the PRM" if pairs >= MIN_SIBLING_PAIRS
               else f"{pairs} validation sibling pairs of the PRM, fewer than {MIN_SIBLING_PAIRS}")
        gate[str(game)] = {"guided": guided, "delta_over_sigma": ratio, "pairs": pairs,
                           "reason": f"{'guided' if guided else 'greedy'}: {why} (guided from Δ/σ >= "
                                     f"{MIN_DELTA_OVER_SIGMA:g})"}
    return gate


def cross_fit(comparisons: dict[str, tuple], thresholds: list[float], *, splits: int = 200,
              seed: int = 0) -> dict[float, dict]:
    """How well "guide where validation guided − greedy > τ" would have chosen, for each τ of ``thresholds``, by
    split halves of the validation instances alone: decide on a random half, then count the other half's paired
    difference as the gain where guided (0 where greedy). ``comparisons``: name -> (guided, greedy) per-episode
    frames of one validation comparison (``paired.run_episodes``). Returns τ -> {"gain": mean over splits and
    comparisons, "guided": share of decisions that guide, "per_comparison": {name: mean gain}}."""
    import numpy as np

    from playprm.report.paired import KEYS, paired_difference

    stream = np.random.default_rng(seed)
    gains = {tau: {name: [] for name in comparisons} for tau in thresholds}
    guided = {tau: [] for tau in thresholds}
    for name, (a, b) in comparisons.items():
        shared = a[KEYS].merge(b[KEYS], on=KEYS)
        for _ in range(splits):
            half = stream.permutation(len(shared)) < len(shared) // 2
            fit, held = shared[half], shared[~half]
            pick = lambda frame, rows: frame.merge(rows, on=KEYS)  # noqa: E731
            decide = paired_difference(pick(a, fit), pick(b, fit), n_resamples=1).difference
            gain = paired_difference(pick(a, held), pick(b, held), n_resamples=1).difference
            for tau in thresholds:
                on = decide > tau  # as read_gate decides
                gains[tau][name].append(gain if on else 0.0)
                guided[tau].append(on)
    return {tau: {"gain": float(np.mean([g for rows in gains[tau].values() for g in rows])),
                  "guided": float(np.mean(guided[tau])),
                  "per_comparison": {name: float(np.mean(rows)) for name, rows in gains[tau].items()}}
            for tau in thresholds}
