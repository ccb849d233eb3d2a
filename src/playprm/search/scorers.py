"""What a search strategy asks of a scorer, and the scorer that ranks best-of-n candidates without a PRM.

- ``ScoreStats``: the calls and tokens every scorer counts (the PRM's are its cost; the baselines count calls);
- ``LogprobScorer``: the policy's own mean token log-probability of each candidate (length-normalised, so
  short replies are not preferred for being short) — what best-of-n amounts to without a verifier.

The other scorers live with what they know: ``prm.scorer.PRMScorer`` (the trained PRM) and
``games.builtin.expert.ExpertScorer`` (the built-in games' programmatic expert, an upper bound); ``playprm.players``
names them for ``--scorer``. ``LogprobScorer`` and ``ExpertScorer`` score ``Candidate`` objects
(``score_candidates``); ``PRMScorer`` scores texts. ``score_candidates`` below hands each scorer what it reads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from playprm.models.base import Candidate


@dataclass
class ScoreStats:
    calls: int = 0
    context_tokens: int = 0  # tokens actually run through the model for contexts
    candidate_tokens: int = 0

    @property
    def tokens(self) -> int:
        return self.context_tokens + self.candidate_tokens


class LogprobScorer:
    def __init__(self):
        self.stats = ScoreStats()

    def score_candidates(self, contexts, candidates: list[list[Candidate]]) -> list[list[float]]:
        self.stats.calls += 1
        # a sigmoid keeps scores in [0, 1] like the PRM's, order-preserving
        return [[1 / (1 + math.exp(-c.logprob / max(1, c.num_tokens))) for c in group] for group in candidates]


def score_candidates(scorer, contexts, candidates: list[list[Candidate]]) -> list[list[float]]:
    """Scores of each context's candidates by ``scorer``. A PRMScorer reads their texts only, so candidates
    with identical texts in one context are scored once (sampling repeats short replies often)."""
    if hasattr(scorer, "score_candidates"):
        return scorer.score_candidates(contexts, candidates)
    texts = [list(dict.fromkeys(c.text for c in group)) for group in candidates]
    scores = scorer.score(contexts, texts)
    return [[dict(zip(unique, row))[c.text] for c in group] for group, unique, row in zip(candidates, texts, scores)]
