"""The switch margin of anchored best-of-N (``--switch-margin auto``), measured on a PRM's validation rollouts.

Anchored best-of-N plays the greedy reply unless one of the N - 1 other candidates scores more than a margin
above it. The margin should be what the PRM's noise inside one context reaches on its own: how far an
alternative that is *not better* scores above the reply it would replace. ``train-prm`` measures that on its
validation records (never on held-out instances): for every context that holds several different replies of
one player (siblings of ``collect --branch-factor`` rollouts, or the same first turn of several episodes), every
ordered pair (a, b) of different replies whose labels say b is not better than a (label b <= label a) gives a
*null difference* score(b) - score(a). Switching on such a pair can only lose.

With N - 1 alternatives the greedy reply faces the maximum of N - 1 such differences, so the margin is the
quantile at level ``CONFIDENCE ** (1 / (N - 1))`` of the null differences: the maximum of N - 1 independent null
differences stays below it with probability ``CONFIDENCE`` (0.9). The more candidates, the higher the margin,
which is the over-optimisation best-of-N showed as N grew. The differences that share one anchor are
positively correlated (they all subtract score(a)), so their maximum is smaller than that of independent ones
and the margin errs on the side of keeping greedy. Never below 0: an alternative has to beat greedy.

``train-prm`` writes the quantiles of the null differences to ``switch_margin.json`` in its output folder
(``write``); ``eval --switch-margin auto`` reads the margin for its N from the ``--prm-path`` folder
(``margin_for``).
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from pathlib import Path

from playprm.errors import UsageError
from playprm.models.replies import move

logger = logging.getLogger(__name__)

SWITCH_MARGIN_FILE = "switch_margin.json"
CONFIDENCE = 0.9  # how often, at most, N - 1 not-better alternatives would make anchored best-of-N switch
GRID = 1000  # quantiles stored at levels k / GRID
# below this many validation contexts auto plays greedy (and says why): the small preset's margins came from 200-400
# contexts and held greedy; the smol preset's from 8 switched on a third of held-out turns and lost
MIN_CONTEXTS = 30
# PRM scores are probabilities, so no candidate beats greedy by more than 1: this margin keeps greedy on every turn
GREEDY_MARGIN = 1.0


def null_differences(records: list[dict], scores: list[float]) -> tuple[list[float], int]:
    """``(differences, contexts)``: score(b) - score(a) for every two different replies a, b to one context of
    one player whose labels say b is not better (``label b <= label a``), and how many contexts gave any."""
    groups: dict[tuple, list[tuple[str, float, float]]] = defaultdict(list)
    for record, score in zip(records, scores, strict=True):
        meta = record.get("meta") or {}
        key = (meta.get("game"), meta.get("experiment"), str(meta.get("game_id")), meta.get("player"),
               json.dumps(record["messages"], sort_keys=True))
        groups[key].append((move(record["response"]), float(record["label"]), float(score)))
    differences, contexts = [], 0
    for members in groups.values():
        found = [b_score - a_score for a_reply, a_label, a_score in members for b_reply, b_label, b_score in members
                 if b_reply != a_reply and b_label <= a_label]
        contexts += bool(found)
        differences += found
    return differences, contexts


def quantile(levels: list[float], values: list[float], level: float) -> float:
    """The value at ``level`` by linear interpolation in a quantile table."""
    import numpy as np

    return float(np.interp(level, levels, values))


def margin(levels: list[float], values: list[float], n_candidates: int) -> float:
    """The switch margin for ``n_candidates`` (the greedy reply and N - 1 alternatives); module doc."""
    if n_candidates < 2:
        return 0.0
    return max(0.0, quantile(levels, values, CONFIDENCE ** (1 / (n_candidates - 1))))


def write(output_dir: Path, records: list[dict], scores: list[float]) -> dict | None:
    """Write ``switch_margin.json`` from the validation ``records`` and their PRM ``scores``; returns what was
    written, or None (nothing written) when no validation context holds two different replies."""
    import numpy as np

    from playprm.atomic import write_json

    differences, contexts = null_differences(records, scores)
    if not differences:  # a file of an earlier run into this folder would describe another PRM
        (Path(output_dir) / SWITCH_MARGIN_FILE).unlink(missing_ok=True)
        return None
    levels = [k / GRID for k in range(GRID + 1)]
    values = [round(float(v), 6) for v in np.quantile(np.asarray(differences), levels)]
    content = {
        "rule": "margin(N) = max(0, quantile of the null differences at level confidence ** (1 / (N - 1))); "
                "null difference: score(b) - score(a) for two different replies to one validation context whose "
                "labels say b is not better than a",
        "confidence": CONFIDENCE, "differences": len(differences), "contexts": contexts,
        "margins": {str(n): round(margin(levels, values, n), 6) for n in (2, 4, 8, 16, 32)},
        "levels": levels, "quantiles": values,
    }
    write_json(Path(output_dir) / SWITCH_MARGIN_FILE, content)
    return content


def margin_for(prm_path: Path, n_candidates: int) -> float:
    """``--switch-margin auto``: the margin for ``n_candidates`` from ``prm_path/switch_margin.json`` (``auto_margin``
    without its rule)."""
    return auto_margin(prm_path, n_candidates)[0]


def auto_margin(prm_path: Path, n_candidates: int) -> tuple[float, str]:
    """``(margin, rule)`` of ``--switch-margin auto`` for ``n_candidates`` from ``prm_path/switch_margin.json``.

    ``rule`` is "auto"; or, when the margin was measured on fewer than ``MIN_CONTEXTS`` validation contexts, the
    margin is ``GREEDY_MARGIN`` (anchored selection plays greedy), ``rule`` says why and a warning says so too. A
    one-line UsageError when the PRM folder has no readable file (it loads no model)."""
    path = Path(prm_path) / SWITCH_MARGIN_FILE
    if not path.is_file():
        raise UsageError(f"--switch-margin auto reads {path}, which train-prm writes when its validation data holds "
                         "two different replies to one context (mc labels of collect --branch-factor); this PRM "
                         "folder has none: give --switch-margin a number (0 = argmax over a set with greedy)")
    try:
        content = json.loads(path.read_text())
        value = margin(content["levels"], content["quantiles"], n_candidates)
    except (ValueError, KeyError, TypeError) as error:
        raise UsageError(f"{path} is not a switch-margin file of train-prm ({error}); train the PRM again or "
                         "give --switch-margin a number") from error
    contexts = content.get("contexts")
    if isinstance(contexts, int) and contexts < MIN_CONTEXTS:
        rule = (f"auto: greedy, the measured margin {value:.4g} for N = {n_candidates} came from {contexts} validation "
                f"context(s), fewer than {MIN_CONTEXTS}")
        logger.warning("--switch-margin auto plays greedy: the margin %.4g for N = %d was measured on %d validation "
                       "context(s) (%s null differences), fewer than %d, too few to hold greedy (the smol preset's "
                       "margin from 8 contexts switched on a third of held-out turns and lost, BENCHMARKS.md); collect "
                       "more rollouts with several replies per context, or give --switch-margin a number", value,
                       n_candidates, contexts, content.get("differences", "?"), MIN_CONTEXTS)
        return GREEDY_MARGIN, rule
    return value, "auto"
