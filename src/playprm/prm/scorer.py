"""Batched PRM scoring of candidate replies that share a context.

Each context is encoded once; its KV cache is repeated for the N candidates, and only the candidate tokens
(plus the end-of-turn token, where the head is read) go through the model a second time. For 8 candidates of
~32 tokens after a ~1000-token context this is close to the cost of scoring one (see BENCHMARKS.md), where
the naive way costs ~8x. Across an episode's turns the context's state is kept (``playprm.models.prefix_cache``), so a
turn encodes only what was added since the last one. ``score_naive`` keeps the plain full-sequence path for correctness tests.

The strategies call ``score_candidates`` (``search.scorers.Scorer``, the interface of every scorer); the PRM reads
only the candidates' texts, so it scores each distinct text of a context once, through ``score`` (texts in, the
call a model card shows).
"""

from __future__ import annotations

import logging
from pathlib import Path

import torch

from playprm import chat
from playprm.models import prefix_cache
from playprm.models.base import Candidate
from playprm.search.scorers import ScoreStats, score_by_text
from playprm.transformers_runtime import select_rows

logger = logging.getLogger(__name__)


class PRMScorer:
    """Scores (context, candidate) pairs with a ``ProcessRewardModel``; scores are probabilities in [0, 1]."""

    def __init__(self, model, tokenizer, *, chat_template_kwargs: dict | None = None, max_batch_rows: int = 64,
                 reuse_cache: bool = True):
        self.model = model
        self.tokenizer = tokenizer
        self.chat_template_kwargs = chat_template_kwargs or {}
        self.max_batch_rows = max_batch_rows
        self.stats = ScoreStats()
        # each episode's context state from its last scored turn, so the next turn encodes only the new tokens
        self.prefix_store = prefix_cache.PrefixStore() if reuse_cache else None

    @classmethod
    def from_path(cls, path: str | Path, *, chat_template_kwargs: dict | None = None, load_in_4bit: bool = False):
        from playprm.prm.model import load_prm

        model, tokenizer, config = load_prm(path, load_in_4bit=load_in_4bit)
        kwargs = chat_template_kwargs if chat_template_kwargs is not None else config.get("chat_template_kwargs")
        return cls(model, tokenizer, chat_template_kwargs=kwargs)

    def _prompt(self, context: list[dict]) -> list[int]:
        return chat.prompt_ids(self.tokenizer, context, self.chat_template_kwargs)

    def score_candidates(self, contexts: list[list[dict]], candidates: list[list[Candidate]]) -> list[list[float]]:
        """Per context, the PRM probability of each of its candidates; identical texts are scored once."""
        return score_by_text(self.score, contexts, candidates)

    def score(self, contexts: list[list[dict]], candidates: list[list[str]]) -> list[list[float]]:
        """Per context, the PRM probability of each of its candidates. On out-of-memory the batch is halved."""
        prompts = [self._prompt(c) for c in contexts]
        keep = [chat.history_length(self.tokenizer, c, p, self.chat_template_kwargs) for c, p in zip(contexts, prompts)] \
            if prefix_cache.reuses(self.prefix_store) else [None] * len(contexts)
        replies = [[chat.response_ids(self.tokenizer, text) for text in group] for group in candidates]
        results: list[list[float]] = [[] for _ in contexts]
        rows = self.max_batch_rows
        pending = [i for i in range(len(contexts)) if replies[i]]
        while pending:
            chunk, width = [], 0
            for i in pending:
                if chunk and width + len(replies[i]) > rows:
                    break
                chunk.append(i)
                width += len(replies[i])
            try:
                scores = self._score_shared([prompts[i] for i in chunk], [replies[i] for i in chunk],
                                            [keep[i] for i in chunk])
            except torch.OutOfMemoryError:
                if rows <= 1:
                    raise
                rows = max(1, rows // 2)
                logger.warning("PRM batch ran out of memory; retrying with %d rows", rows)
                if torch.cuda.is_available():
                    torch.cuda.empty_cache()
                continue
            for i, s in zip(chunk, scores):
                results[i] = s
            pending = pending[len(chunk):]
        return results

    @torch.inference_mode()
    def _score_shared(self, prompts: list[list[int]], replies: list[list[list[int]]],
                      keep: list[int] | None = None) -> list[list[float]]:
        device = self.model.device
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        # Prefill: all contexts once (continuing each one's stored state from an earlier turn where there is
        # one), the last prompt token held back so that every candidate row starts its second pass from it
        # (keeps positions simple and the cache shape uniform).
        batch = prefix_cache.encode(self.model, [p[:-1] for p in prompts], pad, self.prefix_store, device,
                                    keep=keep)
        cache, mask = batch.cache, batch.mask
        counts = [len(r) for r in replies]
        index = torch.tensor([row for row, k in enumerate(counts) for _ in range(k)], device=device)
        if counts != [1] * len(counts):
            cache = select_rows(cache, index)
        mask = mask.index_select(0, index)
        start = batch.next_position.index_select(0, index)  # position of the held-back prompt token
        tails = [[prompts[row][-1]] + reply for row, group in enumerate(replies) for reply in group]
        width = max(len(t) for t in tails)
        tail_ids = torch.full((len(tails), width), pad, dtype=torch.long)
        tail_mask = torch.zeros((len(tails), width), dtype=torch.long)
        for row, tail in enumerate(tails):  # right padding: padded positions come after the read-out token
            tail_ids[row, : len(tail)] = torch.tensor(tail)
            tail_mask[row, : len(tail)] = 1
        tail_ids, tail_mask = tail_ids.to(device), tail_mask.to(device)
        tail_positions = start[:, None] + torch.arange(width, device=device)[None, :]
        out = self.model(tail_ids, attention_mask=torch.cat([mask, tail_mask], dim=1),
                         position_ids=tail_positions, past_key_values=cache, use_cache=True)
        last = torch.tensor([len(t) - 1 for t in tails], device=device)
        logits = out.logits.gather(1, last[:, None]).squeeze(1).float()
        probs = torch.sigmoid(logits).cpu().tolist()
        self.stats.calls += 1
        self.stats.context_tokens += sum(batch.encoded) + len(prompts)  # + the held-back tokens
        self.stats.candidate_tokens += sum(len(t) - 1 for t in tails)
        result, offset = [], 0
        for k in counts:
            result.append(probs[offset:offset + k])
            offset += k
        return result

    @torch.inference_mode()
    def score_naive(self, contexts: list[list[dict]], candidates: list[list[str]]) -> list[list[float]]:
        """Reference path: every (context, candidate) pair as one full sequence, one at a time."""
        device = self.model.device
        results = []
        for context, group in zip(contexts, candidates):
            prompt = self._prompt(context)
            scores = []
            for text in group:
                ids = torch.tensor([prompt + chat.response_ids(self.tokenizer, text)], device=device)
                logits = self.model(ids).logits[0, -1].float()
                scores.append(float(torch.sigmoid(logits)))
            results.append(scores)
        return results

