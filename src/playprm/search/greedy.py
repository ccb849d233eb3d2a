"""Plain decoding: one candidate per turn (temperature 0 is greedy)."""

from __future__ import annotations

from playprm.models.base import clean_candidates
from playprm.search.base import Choice, SearchSettings


def choose(contexts: list[list[dict]], policy, scorer, settings: SearchSettings, *,
           rejected: list[list[str]] | None = None) -> list[Choice]:
    """One reply per context at ``settings.temperature``; no scorer involved, and nothing to choose among, so
    ``scorer`` and ``rejected`` (the replies the game refused) are not read: a plain policy repeats them."""
    outputs = clean_candidates(policy.generate(contexts, n=1, temperature=settings.temperature,
                                               max_tokens=settings.max_tokens, seed=settings.next_seed()))
    greedy = 0 if settings.temperature == 0 else None
    return [Choice(text=cands[0].text, candidates=cands, scores=None, chosen=0, greedy=greedy) for cands in outputs]
