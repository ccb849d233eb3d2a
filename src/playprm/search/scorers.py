"""What a search strategy asks of a scorer, and the scorer that ranks best-of-n candidates without a PRM.

- ``Scorer``: the one interface of every scorer: ``score_candidates(contexts, candidates)``, each context with its
  candidate replies (``Candidate`` objects: best-of-n's sampled replies, lf-beam's partial replies), one score in
  [0, 1] per candidate, higher is better; ``stats`` counts what the scoring cost;
- ``ScoreStats``: the calls and tokens every scorer counts (the PRM's are its cost; the baselines count calls);
- ``score_by_text``: how a scorer that reads only the candidates' texts (the PRM) scores identical texts of one
  context once;
- ``LogprobScorer``: the policy's own mean token log-probability of each candidate (length-normalised, so
  short replies are not preferred for being short) — what best-of-n amounts to without a verifier.

The other scorers live with what they know: ``prm.scorer.PRMScorer`` (the trained PRM) and
``games.builtin.expert.ExpertScorer`` (the built-in games' programmatic expert, an upper bound); the ``--scorer``
table ``playprm.play.players.SCORER_KINDS`` names them all.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from playprm.models.base import Candidate


@dataclass
class ScoreStats:
    calls: int = 0
    context_tokens: int = 0  # tokens actually run through the model for contexts
    candidate_tokens: int = 0

    @property
    def tokens(self) -> int:
        return self.context_tokens + self.candidate_tokens


class Scorer(Protocol):
    """What every strategy calls to rank candidates (``best_of_n`` and the tree searches built on it, ``lf-beam``
    on partial replies). A candidate is scored as the player's reply to its context, ``text`` being what the game
    would receive; a strategy charges a turn with the growth of ``stats.tokens`` across its call."""

    stats: ScoreStats

    def score_candidates(self, contexts: list[list[dict]],
                         candidates: list[list[Candidate]]) -> list[list[float]]:
        """Per context (a chat, list of messages), the score of each of its candidates, in their order."""
        ...


def score_by_text(score_texts: Callable[[list[list[dict]], list[list[str]]], list[list[float]]],
                  contexts: list[list[dict]], candidates: list[list[Candidate]]) -> list[list[float]]:
    """``score_candidates`` of a scorer that reads only the candidates' texts: ``score_texts(contexts, texts)``
    gets each context's distinct texts once, in first-seen order (sampling repeats short replies often), and
    every candidate gets the score of its text."""
    texts = [list(dict.fromkeys(c.text for c in group)) for group in candidates]
    scores = score_texts(contexts, texts)
    return [[dict(zip(unique, row))[c.text] for c in group] for group, unique, row in zip(candidates, texts, scores)]


class LogprobScorer:
    def __init__(self):
        self.stats = ScoreStats()

    def score_candidates(self, contexts, candidates: list[list[Candidate]]) -> list[list[float]]:
        self.stats.calls += 1
        # a sigmoid keeps scores in [0, 1] like the PRM's, order-preserving
        return [[1 / (1 + math.exp(-c.logprob / max(1, c.num_tokens))) for c in group] for group in candidates]
