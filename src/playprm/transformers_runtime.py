"""How playprm runs transformers models, shared by the policy (``models.hf``), the PRM (``prm``) and training
(``train``): CPU threads (decided once per run, where it starts), left-padded batches and KV-cache rows across
transformers 5.x releases (``past_key_values`` was renamed ``cache``). How their weights load: ``models.loading``.
It imports neither models nor prm."""

from __future__ import annotations

import inspect
import os
from functools import lru_cache

import torch


def choose_cpu_threads() -> None:
    """On CPU, one torch thread unless ``OMP_NUM_THREADS`` asks for more (torch reads it at start-up). A process-wide
    setting, so a run decides it once where it starts (``play.run_eval``, ``collect``, the trainers, ``summarize``,
    ``bench``, the clemcore backend's ``get_model_for``), never a model loader.

    Measured when issue 13 was filed (2 cores, real clembench games, the tiny policy): one thread was faster than
    every core for playprm's batched play, idle (18.2 s against 19.7 s) and beside another busy process (21.9 s
    against 107.7 s; BENCHMARKS.md figure 0 has this machine's figures), because OpenMP threads spin-wait for each other and lose several-fold when a core is taken;
    clemcore's backend pins one thread for the same reason. A model large enough to gain from more cores on an
    idle machine gets them with ``OMP_NUM_THREADS=<cores>``."""
    if not torch.cuda.is_available() and not os.environ.get("OMP_NUM_THREADS"):
        torch.set_num_threads(1)


def left_padded(rows: list[list[int]], pad: int, device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(input_ids, attention_mask, position_ids)`` of token rows padded on the left (at least one column),
    on ``device``; positions count each row's own tokens from 0."""
    length = max(1, max(len(row) for row in rows))
    ids = torch.full((len(rows), length), pad, dtype=torch.long)
    mask = torch.zeros((len(rows), length), dtype=torch.long)
    for index, row in enumerate(rows):
        if row:
            ids[index, length - len(row):] = torch.tensor(row)
            mask[index, length - len(row):] = 1
    ids, mask = ids.to(device), mask.to(device)
    return ids, mask, (mask.cumsum(-1) - 1).clamp(min=0)


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
    return select_rows(cache, torch.arange(rows, device=device).repeat_interleave(n))
