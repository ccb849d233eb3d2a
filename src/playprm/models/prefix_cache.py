"""Cross-turn reuse of a model's state: a prompt that extends one encoded before runs only its new tokens.

A game's next context is the last one plus the reply that was played and the game's answer, so re-encoding the
whole conversation at every turn prefills O(T²) tokens over a T-turn episode. ``PrefixStore`` keeps, for recently
encoded prompts, each row's model state at the prompt's end (attention keys/values and, on Qwen3.5, the
linear-attention convolution and recurrent states) and the last position's logits; ``encode`` finds for each new
prompt the longest stored prompt that is a token-for-token prefix of it, encodes only the rest, and returns one
left-padded batch ready for decoding. The check is on token ids, so a chat template that rewrites history
(think blocks dropped from earlier turns, a system prompt that changes) simply finds no prefix and encodes in
full (counted in ``ReuseStats.full``). Prompts of one call that open alike (a game's episodes share its
instructions) encode their common prefix once and continue from it (``_shared_bases``, counted in
``ReuseStats.shared``).

transformers has no public API to split a batched cache into rows or to stack rows of different lengths, so
this module reads and writes the two layer kinds of ``DynamicCache`` that playprm's models use
(``DynamicLayer`` keys/values, ``LinearAttentionLayer`` states, and their combination); a cache with any other
layer kind (sliding windows, static or quantized caches) turns reuse off for the model with one warning.

Padding rules (why the grouping below): attention layers take padding anywhere through the 2D mask, but a
linear-attention layer's recurrent and convolution states are corrupted by padding that comes after real tokens.
Prompts without a stored prefix are therefore encoded left-padded from an empty state, one call per group of
similar lengths (``transformers_runtime.length_groups``: padding is work too); prompts that
continue a stored state are grouped by the length of their new tokens on hybrid models (no padding at all), and
padded between state and new tokens on attention-only models (one call).

Memory is bounded: a stored prompt that another prompt extended is dropped after the call (the longer one
replaces it), prompts not used for ``keep_calls`` calls are dropped (an episode that ended leaves within a few
turns of the others), and the least recently used go first beyond ``max_tokens`` or ``max_rows``.
"""

from __future__ import annotations

import copy
import logging
from collections import OrderedDict
from dataclasses import dataclass, field

import torch

from playprm.transformers_runtime import (
    attention_only,
    cache_kwargs,
    last_logits_kwargs,
    left_padded,
    length_groups,
    output_cache,
)

logger = logging.getLogger(__name__)

# below this many tokens, a shared prefix is not encoded apart (a chat template's header is about a dozen)
SHARED_PREFIX_TOKENS = 32
_KV = "kv"
_STATES = "states"
_SUPPORTED = {"DynamicLayer": (_KV,), "LinearAttentionLayer": (_STATES,),
              "LinearAttentionAndFullAttentionLayer": (_STATES, _KV)}


@dataclass
class RowState:
    """One prompt's model state: per layer, its keys/values without padding ``(1, heads, tokens, dim)`` and its
    linear-attention states ``{index: (conv, recurrent)}``; plus the logits after its last token."""

    tokens: tuple[int, ...]
    layers: list[dict]
    logits: torch.Tensor
    last_used: int = 0

    def __len__(self) -> int:
        return len(self.tokens)


@dataclass
class ReuseStats:
    """What ``encode`` did: prompts encoded from scratch (``full``), continued from a stored prefix
    (``continued``) or found whole (``exact``), and the tokens run through the model vs the prompt tokens."""

    full: int = 0
    continued: int = 0
    exact: int = 0
    shared: int = 0  # of ``full``: rows that continued a prefix they share with others of the same call
    encoded_tokens: int = 0
    prompt_tokens: int = 0


@dataclass
class Encoded:
    """A batch ready for decoding: the model cache with one row per prompt (left-padded), its attention mask,
    each row's next position, the logits after each prompt and the tokens each prompt cost to encode."""

    cache: object
    mask: torch.Tensor
    next_position: torch.Tensor
    logits: torch.Tensor
    encoded: list[int] = field(default_factory=list)


class PrefixStore:
    """Recently encoded prompts' states of one model (see the module docstring)."""

    def __init__(self, *, max_tokens: int = 1 << 17, max_rows: int = 128, keep_calls: int = 8):
        self.max_tokens = max_tokens
        self.max_rows = max_rows  # a row of a hybrid model also holds its linear-attention states
        self.keep_calls = keep_calls
        self.entries: OrderedDict[tuple[int, ...], RowState] = OrderedDict()
        self.calls = 0
        self.enabled = True
        self.stats = ReuseStats()
        self._template = None  # a cache of this model: the layer objects that stacked rows are written into

    @property
    def tokens(self) -> int:
        return sum(len(e) for e in self.entries.values())

    def longest_prefix(self, prompt: list[int]) -> RowState | None:
        """The longest stored prompt that ``prompt`` starts with (itself included)."""
        key = tuple(prompt)
        best = None
        for entry in self.entries.values():
            size = len(entry)
            if size <= len(key) and (best is None or size > len(best)) and key[:size] == entry.tokens:
                best = entry
        return best

    def keep(self, rows: list[RowState], extended: list[RowState]) -> None:
        """After a call: store ``rows``, drop the prompts they ``extended``, the stale and, beyond the cap, the
        least recently used."""
        for entry in extended:
            self.entries.pop(entry.tokens, None)
        for row in rows:
            row.last_used = self.calls
            self.entries[row.tokens] = row
            self.entries.move_to_end(row.tokens)
        for key in [k for k, e in self.entries.items() if self.calls - e.last_used >= self.keep_calls]:
            del self.entries[key]
        total = self.tokens
        while self.entries and (total > self.max_tokens or len(self.entries) > self.max_rows):
            _, dropped = self.entries.popitem(last=False)
            total -= len(dropped)


def reuses(store: PrefixStore | None) -> bool:
    """Whether ``store`` keeps states (``None``: reuse off; disabled: the model's cache cannot be split)."""
    return store is not None and store.enabled


def encode(model, prompts: list[list[int]], pad: int, store: PrefixStore | None, device, *,
           keep: list[int] | None = None) -> Encoded:
    """Run ``prompts`` through ``model`` (a causal LM or a PRM), continuing stored prefixes from ``store``
    (``None``: encode every prompt in full, the path without reuse). Returns the batch in prompt order.

    ``keep[i]`` is how much of prompt ``i`` to store for the next call (default: all of it). A chat prompt ends
    with the generation prompt, which templates may render differently once the reply is in the history
    (Qwen3's empty think block with ``enable_thinking=False`` is not kept for earlier turns); storing the state
    before it keeps the next turn a continuation. The prompt is then encoded in two calls, up to ``keep[i]`` and
    the rest."""
    if not reuses(store):
        return _encode_full(model, prompts, pad, device)
    store.calls += 1
    keep = [len(p) if k is None or not 0 < k <= len(p) else k for p, k in zip(prompts, keep or [None] * len(prompts))]
    found = [store.longest_prefix(p[:k]) for p, k in zip(prompts, keep)]
    store.stats.full += sum(1 for f in found if f is None)
    store.stats.exact += sum(1 for f, k in zip(found, keep) if f is not None and len(f) == k)
    store.stats.continued += sum(1 for f, k in zip(found, keep) if f is not None and len(f) < k)
    shared = _shared_bases(model, store, [p[:k] if f is None else None for p, k, f in zip(prompts, keep, found)],
                           pad, device)
    if shared is None:  # a cache this module cannot split into rows
        return encode(model, prompts, pad, None, device)
    bases, charged = shared
    bases = [f if f is not None else b for f, b in zip(found, bases)]
    kept = _advance(model, store, bases, [p[:k] for p, k in zip(prompts, keep)], pad, device)
    if kept is None:
        return encode(model, prompts, pad, None, device)
    rows = _advance(model, store, kept, prompts, pad, device)
    store.stats.shared += sum(1 for f, b in zip(found, bases) if f is None and b is not None)
    encoded = [len(p) - (len(b) if b is not None else 0) + c for p, b, c in zip(prompts, bases, charged)]
    store.stats.encoded_tokens += sum(encoded)
    store.stats.prompt_tokens += sum(len(p) for p in prompts)
    store.keep(kept, [f for f in found if f is not None])
    cache, mask = _stack(rows, store._template, device)
    return Encoded(cache=cache, mask=mask, next_position=torch.tensor([len(r) for r in rows], device=device),
                   logits=torch.stack([r.logits for r in rows]).to(device), encoded=encoded)


def common_prefix(rows: list[list[int]]) -> int:
    """Length of the longest token prefix every row shares."""
    if not rows:
        return 0
    shortest = min(len(row) for row in rows)
    for position in range(shortest):
        token = rows[0][position]
        if any(row[position] != token for row in rows[1:]):
            return position
    return shortest


def shared_prefixes(targets: list[list[int] | None], minimum: int) -> list[tuple[int, list[int]]]:
    """``(length, rows)`` for each set of two or more of ``targets`` (None: left out) that share their first
    ``length`` >= ``minimum`` tokens: rows sorted by their tokens, cut where neighbours share fewer than
    ``minimum``; ``length`` is the set's common prefix (the least of its neighbours' shares)."""
    order = sorted((i for i, t in enumerate(targets) if t is not None), key=targets.__getitem__)
    clusters: list[list[int]] = []
    for index in order:
        if clusters and common_prefix([targets[clusters[-1][-1]], targets[index]]) >= minimum:
            clusters[-1].append(index)
        else:
            clusters.append([index])
    return [(common_prefix([targets[i] for i in c]), c) for c in clusters if len(c) > 1]


def _shared_bases(model, store: PrefixStore, targets: list[list[int] | None], pad: int,
                  device) -> tuple[list[RowState | None], list[int]] | None:
    """For prompts without a stored prefix (``targets[i]``; None for the others), the state of a prefix they share
    with others of this call (``shared_prefixes``, at least ``SHARED_PREFIX_TOKENS``; attention-only models),
    encoded once: a game's episodes open with the same instructions (clembench's referencegame and matchit_ascii
    prompts share 116 of their 151-290 tokens), which each row would otherwise encode again. A row's prompt is one
    of the set's only when it is longer, or the whole prompt when rows repeat it. Returns each row's base (or None)
    and the prefix tokens charged to it (all to the set's first row: the sum is what ran); None when the cache
    cannot be split into rows."""
    bases: list[RowState | None] = [None] * len(targets)
    charged = [0] * len(targets)
    if not attention_only(model) or _has_linear_layers(store._template):
        # a hybrid model continues rows one call per number of new tokens (no padding after a linear-attention
        # state): a shared base would split one padded call into about one call per row; not measured to pay
        return bases, charged
    sets = shared_prefixes(targets, SHARED_PREFIX_TOKENS)
    prefixes = [targets[rows[0]][:length] for length, rows in sets]
    states = _advance(model, store, [None] * len(prefixes), prefixes, pad, device) if prefixes else []
    if states is None:
        return None
    for (length, rows), state in zip(sets, states):
        for i in rows:
            bases[i] = state
        charged[rows[0]] = length
    return bases, charged


def _advance(model, store: PrefixStore, bases: list[RowState | None], targets: list[list[int]], pad: int,
             device) -> list[RowState] | None:
    """Each row's state after ``targets[i]``, from ``bases[i]`` (a state of a prefix of it, or ``None``: from
    scratch). Rows from scratch go in one left-padded call; the others continue their states in one call on
    attention-only models, one per number of new tokens on hybrid ones (linear-attention states take no
    padding after them). ``None`` when the model's cache cannot be split into rows."""
    rows: list[RowState | None] = [b if b is not None and len(b) == len(t) else None
                                   for b, t in zip(bases, targets)]
    fresh = [i for i, b in enumerate(bases) if b is None]
    for group in length_groups([len(targets[i]) for i in fresh]):  # rows are split below: no batch to keep whole
        group = [fresh[g] for g in group]
        batch = _encode_full(model, [targets[i] for i in group], pad, device)
        if not _supported(batch.cache, store):
            return None
        store._template = store._template or _skeleton(batch.cache)
        for j, i in enumerate(group):
            rows[i] = _row(batch, j, targets[i])
    todo = [i for i, b in enumerate(bases) if b is not None and len(b) < len(targets[i])]
    if _has_linear_layers(store._template):
        groups: dict[int, list[int]] = {}
        for i in todo:
            groups.setdefault(len(targets[i]) - len(bases[i]), []).append(i)
        calls = list(groups.values())
    else:
        calls = [todo] if todo else []
    for call in calls:
        cache, mask = _stack([bases[i] for i in call], store._template, device)
        tails = [targets[i][len(bases[i]):] for i in call]
        ids, tail_mask, _ = left_padded(tails, pad, device)
        lengths = torch.tensor([len(bases[i]) for i in call], device=device)
        positions = lengths[:, None] + (tail_mask.cumsum(-1) - 1).clamp(min=0)
        full_mask = torch.cat([mask, tail_mask], dim=1)
        out = model(input_ids=ids, attention_mask=full_mask, position_ids=positions, use_cache=True,
                    **cache_kwargs(model, cache), **last_logits_kwargs(model))
        batch = Encoded(cache=output_cache(out), mask=full_mask, next_position=lengths + tail_mask.sum(-1),
                        logits=_last_logits(out))
        for j, i in enumerate(call):
            rows[i] = _row(batch, j, targets[i])
    return rows  # type: ignore[return-value]


def _encode_full(model, prompts: list[list[int]], pad: int, device) -> Encoded:
    ids, mask, positions = left_padded(prompts, pad, device)
    out = model(input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=True, **last_logits_kwargs(model))
    return Encoded(cache=output_cache(out), mask=mask, next_position=positions[:, -1] + 1,
                   logits=_last_logits(out), encoded=[len(p) for p in prompts])


def _last_logits(out) -> torch.Tensor:
    return out.logits[:, -1].float()


def _has_linear_layers(template) -> bool:
    return template is not None and any(_STATES in _SUPPORTED[type(layer).__name__] for layer in template.layers)


def _skeleton(cache):
    """``cache``'s structure (cache and layer objects, their settings) without its tensors: what ``_stack``
    copies and fills, kept by the store without holding a batch in memory."""
    skeleton = copy.copy(cache)
    skeleton.layers = []
    for layer in cache.layers:
        layer = copy.copy(layer)
        if _KV in _SUPPORTED[type(layer).__name__]:
            layer.keys = layer.values = None
        if _STATES in _SUPPORTED[type(layer).__name__]:
            layer.conv_states = dict.fromkeys(layer.conv_states)
            layer.recurrent_states = dict.fromkeys(layer.recurrent_states)
        skeleton.layers.append(layer)
    return skeleton


def _supported(cache, store: PrefixStore) -> bool:
    kinds = {type(layer).__name__ for layer in getattr(cache, "layers", [None])}
    if kinds <= set(_SUPPORTED):
        return True
    logger.warning("cross-turn cache reuse is off for this model: its cache has %s layers (supported: %s)",
                   ", ".join(sorted(kinds - set(_SUPPORTED))), ", ".join(sorted(_SUPPORTED)))
    store.enabled = False
    return False


def _row(batch: Encoded, row: int, tokens: list[int]) -> RowState:
    """Row ``row`` of ``batch`` as a ``RowState`` (copies: the batch's tensors change as decoding goes on)."""
    real = batch.mask[row].nonzero().squeeze(-1)  # the row's columns that hold tokens (one sync, not one a layer)
    layers = []
    for layer in batch.cache.layers:
        parts: dict = {}
        if _KV in _SUPPORTED[type(layer).__name__]:
            parts[_KV] = (layer.keys[row:row + 1].index_select(2, real), layer.values[row:row + 1].index_select(2, real))
        if _STATES in _SUPPORTED[type(layer).__name__]:
            parts[_STATES] = {i: (layer.conv_states[i][row:row + 1].clone(),
                                  layer.recurrent_states[i][row:row + 1].clone())
                              for i in layer.conv_states if layer.is_conv_states_initialized[i]}
        layers.append(parts)
    return RowState(tokens=tuple(tokens), layers=layers, logits=batch.logits[row].clone())


def _stack(rows: list[RowState], template, device) -> tuple[object, torch.Tensor]:
    """A cache holding ``rows`` as a left-padded batch, written into copies of ``template``'s layer objects, and
    its attention mask."""
    width = max(len(r) for r in rows)
    mask = torch.zeros((len(rows), width), dtype=torch.long, device=device)
    for index, row in enumerate(rows):
        mask[index, width - len(row):] = 1
    cache = copy.copy(template)
    cache.layers = []
    for depth, layer in enumerate(template.layers):
        layer = copy.copy(layer)
        parts = [r.layers[depth] for r in rows]
        if _KV in parts[0]:
            keys = [_pad_left(p[_KV][0], width) for p in parts]
            values = [_pad_left(p[_KV][1], width) for p in parts]
            layer.keys, layer.values = torch.cat(keys).to(device), torch.cat(values).to(device)
        if _STATES in parts[0]:
            indices = list(parts[0][_STATES])
            layer.conv_states = {i: torch.cat([p[_STATES][i][0] for p in parts]).to(device) for i in indices}
            layer.recurrent_states = {i: torch.cat([p[_STATES][i][1] for p in parts]).to(device) for i in indices}
            layer.is_conv_states_initialized = dict.fromkeys(indices, True)
            layer.is_recurrent_states_initialized = dict.fromkeys(indices, True)
            layer.has_previous_state = dict.fromkeys(indices, True)
        cache.layers.append(layer)
    return cache, mask


def _pad_left(tensor: torch.Tensor, width: int) -> torch.Tensor:
    missing = width - tensor.shape[2]
    if not missing:
        return tensor
    return torch.cat([tensor.new_zeros((*tensor.shape[:2], missing, tensor.shape[3])), tensor], dim=2)

