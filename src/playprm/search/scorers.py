"""Scorers that rank best-of-n candidates without a PRM: the baselines a PRM has to beat.

- ``LogprobScorer``: the policy's own mean token log-probability of each candidate (length-normalised, so
  short replies are not preferred for being short) — what best-of-n amounts to without a verifier;
- ``ExpertScorer``: 1 for the candidate that is the programmatic expert's move for the player's context, else 0
  (``playprm.models.programmatic``). It sees only what the player sees, never the game's hidden state, so it is
  an honest upper bound for built-in games rather than a look at the game's answers;
- ``WordleOracleScorer``: a PRM that knows wordle's target word (tests of the search strategies).

The first two score ``Candidate`` objects (``score_candidates``); ``PRMScorer`` scores texts. ``score_candidates`` below
hands each scorer what it reads.
"""

from __future__ import annotations

import math

from playprm.models.base import Candidate
from playprm.prm.scorer import ScoreStats


class LogprobScorer:
    def __init__(self):
        self.stats = ScoreStats()

    def score_candidates(self, contexts, candidates: list[list[Candidate]]) -> list[list[float]]:
        self.stats.calls += 1
        # a sigmoid keeps scores in [0, 1] like the PRM's, order-preserving
        return [[1 / (1 + math.exp(-c.logprob / max(1, c.num_tokens))) for c in group] for group in candidates]


class ExpertScorer:
    def __init__(self):
        self.stats = ScoreStats()

    def score_candidates(self, contexts, candidates: list[list[Candidate]]) -> list[list[float]]:
        from playprm.models.programmatic import expert_move

        self.stats.calls += 1
        scores = []
        for context, group in zip(contexts, candidates):
            expert = " ".join(expert_move(context).split()).lower()
            scores.append([1.0 if " ".join(c.text.split()).lower() == expert else 0.0 for c in group])
        return scores


def score_candidates(scorer, contexts, candidates: list[list[Candidate]]) -> list[list[float]]:
    """Scores of each context's candidates by ``scorer``. A PRMScorer reads their texts only, so candidates
    with identical texts in one context are scored once (sampling repeats short replies often)."""
    if hasattr(scorer, "score_candidates"):
        return scorer.score_candidates(contexts, candidates)
    texts = [list(dict.fromkeys(c.text for c in group)) for group in candidates]
    scores = scorer.score(contexts, texts)
    return [[dict(zip(unique, row))[c.text] for c in group] for group, unique, row in zip(candidates, texts, scores)]


SCORER_CLASSES = {"logprob": LogprobScorer, "expert": ExpertScorer}


class WordleOracleScorer:
    """A PRM that knows the answer: 1 for the target, otherwise the share of green (and half of yellow) letters."""

    def __init__(self, target: str):
        self.target = target.lower()
        self.stats = ScoreStats()

    def score(self, contexts, candidates):
        from playprm.games.builtin.protocol import parse_tagged
        from playprm.games.builtin.wordle import rules

        scores = []
        for group in candidates:
            row = []
            for text in group:
                try:
                    guess = parse_tagged(text, "GUESS").strip().lower()
                    pattern = rules.feedback(guess, self.target)
                except Exception:
                    row.append(0.0)
                    continue
                row.append(1.0 if guess == self.target else
                           (pattern.count(rules.GREEN) + 0.5 * pattern.count(rules.YELLOW)) / 10)
            scores.append(row)
            self.stats.calls += 1
        return scores
