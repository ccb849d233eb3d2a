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


def select_rows(cache, index):
    """Keep row ``index[j]`` of ``cache`` as its row ``j``, in place (repeats, reorders and drops rows).

    ``DynamicCache.batch_repeat_interleave`` / ``batch_select_indices`` only touch attention keys and values;
    Qwen3.5's hybrid cache also holds ``LinearAttentionLayer``s (gated delta-net convolution and recurrent
    states) that lack them. ``reorder_cache`` is implemented by every layer kind, both states included.
    """
    cache.reorder_cache(index)
    return cache


def repeat_rows(cache, rows: int, n: int, device=None):
    """Each of the ``rows`` rows of ``cache`` ``n`` times in a row (row i becomes rows i*n ... i*n+n-1)."""
    import torch

    return select_rows(cache, torch.arange(rows, device=device).repeat_interleave(n))
