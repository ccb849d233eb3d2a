"""KV-cache plumbing across transformers 5.x releases (``past_key_values`` was renamed ``cache``)."""

from __future__ import annotations

import inspect
from functools import lru_cache


@lru_cache(maxsize=64)
def _cache_parameter(forward_owner: type) -> str:
    parameters = inspect.signature(forward_owner.forward).parameters
    return "cache" if "cache" in parameters else "past_key_values"


def cache_kwargs(model, cache) -> dict:
    """Keyword arguments that hand ``cache`` to ``model.forward``."""
    base = getattr(model, "get_base_model", lambda: model)()
    return {_cache_parameter(type(base)): cache}


def output_cache(output):
    """The cache a forward pass returned."""
    cache = getattr(output, "cache", None)
    return cache if cache is not None else getattr(output, "past_key_values", None)
