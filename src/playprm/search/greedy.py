"""Plain decoding: one candidate per turn (temperature 0 is greedy)."""

from __future__ import annotations

from playprm.models.base import clean_candidates
from playprm.search.base import Choice, SearchSettings


def choose(contexts: list[list[dict]], policy, scorer, settings: SearchSettings, *,
           temperature: float = 0.0) -> list[Choice]:
    """One reply per context; no PRM involved."""
    outputs = clean_candidates(policy.generate(contexts, n=1, temperature=temperature, max_tokens=settings.max_tokens,
                              seed=settings.next_seed()))
    greedy = 0 if temperature == 0 else None
    return [Choice(text=cands[0].text, candidates=cands, scores=None, chosen=0, greedy=greedy) for cands in outputs]
