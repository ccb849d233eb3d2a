"""A PRM stand-in for tests of the search strategies: it knows wordle's target word."""

from __future__ import annotations

from playprm.games.builtin.protocol import parse_tagged
from playprm.games.builtin.wordle import rules
from playprm.search.scorers import ScoreStats


class WordleOracleScorer:
    """A PRM that knows the answer: 1 for the target, otherwise the share of green (and half of yellow) letters."""

    def __init__(self, target: str):
        self.target = target.lower()
        self.stats = ScoreStats()

    def score_candidates(self, contexts, candidates):
        scores = []
        for group in candidates:
            row = []
            for candidate in group:
                try:
                    guess = parse_tagged(candidate.text, "GUESS").strip().lower()
                    pattern = rules.feedback(guess, self.target)
                except Exception:
                    row.append(0.0)
                    continue
                row.append(1.0 if guess == self.target else
                           (pattern.count(rules.GREEN) + 0.5 * pattern.count(rules.YELLOW)) / 10)
            scores.append(row)
            self.stats.calls += 1
        return scores
