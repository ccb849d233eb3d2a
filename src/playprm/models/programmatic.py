"""The name of the programmatic expert policy: ``programmatic:expert`` or ``programmatic:expert-eps<E>``.

Only the selector lives here, where the model registry turns ``--policy-model`` into a ``PolicySpec``; the
expert itself plays the built-in games by their rules and lives beside them (``games.builtin.expert``).
"""

from __future__ import annotations

import re

from playprm.errors import UsageError
from playprm.models.base import PolicySpec

PREFIX = "programmatic:expert"
DEFAULT_EPSILON = 0.35


def parse_selector(selector: str) -> float:
    """``programmatic:expert`` or ``programmatic:expert-eps<E>`` -> epsilon in [0, 1]."""
    if selector == PREFIX:
        return DEFAULT_EPSILON
    match = re.fullmatch(re.escape(PREFIX) + r"-eps([0-9]*\.?[0-9]+)", selector)
    if not match or not 0 <= float(match.group(1)) <= 1:
        raise UsageError(f"--policy-model {selector}: write {PREFIX} or {PREFIX}-eps<E> with 0 <= E <= 1 "
                         f"(the share of random valid moves), e.g. {PREFIX}-eps0.2")
    return float(match.group(1))


def spec_for(selector: str) -> PolicySpec:
    epsilon = parse_selector(selector)
    name = "programmatic-expert" if selector == PREFIX else f"programmatic-expert-eps{epsilon:g}"
    return PolicySpec(name=name, backend="programmatic", model_id=selector, lookup_source="programmatic teacher")
