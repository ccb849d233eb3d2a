"""Best-of-N: sample N candidates per turn, score each with the PRM in one batch, play the argmax (or rank them
with a baseline scorer of ``search.scorers``: the policy's log-probability, the programmatic expert).

The game only ever sees the chosen reply, so the resulting numbers are honest benchmark numbers.
"""

from __future__ import annotations

from playprm.models.base import clean_candidates
from playprm.search.base import Choice, SearchSettings, argmax
from playprm.search.scorers import score_candidates


def choose(contexts: list[list[dict]], policy, scorer, settings: SearchSettings) -> list[Choice]:
    """For each context: N sampled candidates, their PRM scores and the argmax."""
    outputs = clean_candidates(policy.generate(contexts, n=settings.n_candidates, temperature=settings.temperature,
                              max_tokens=settings.max_tokens, seed=settings.next_seed()))
    before = scorer.stats.tokens
    scores = score_candidates(scorer, contexts, outputs)
    spent = scorer.stats.tokens - before
    total = sum(len(c) for c in outputs) or 1
    choices = []
    for cands, group in zip(outputs, scores):
        best = argmax(group)
        choices.append(Choice(text=cands[best].text, candidates=cands, scores=group, chosen=best,
                              prm_tokens=round(spent * len(cands) / total)))
    return choices
