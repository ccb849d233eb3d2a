"""What every search strategy returns for a policy turn, and the settings they read."""

from __future__ import annotations

from dataclasses import dataclass, field

from playprm.models.base import Candidate


@dataclass
class SearchSettings:
    """Decoding knobs shared by all strategies (validated in ``playprm.config``)."""

    n_candidates: int = 4
    temperature: float = 0.7
    max_tokens: int = 2048
    beam_width: int = 2
    num_beam_iterations: int = 20
    aggregate: str = "last"  # how turn scores combine along a trajectory: last | min | mean | prod
    seed: int = 0
    _calls: int = field(default=0, repr=False)

    def next_seed(self) -> int:
        """A fresh, reproducible seed for each policy call."""
        self._calls += 1
        return self.seed * 1_000_003 + self._calls


@dataclass
class Choice:
    """The reply sent to the game and the record of how it was chosen."""

    text: str
    candidates: list[Candidate]
    scores: list[float] | None
    chosen: int
    prm_tokens: int = 0

    @property
    def generated_tokens(self) -> int:
        return sum(c.num_tokens for c in self.candidates)

    def log(self, mode: str) -> dict:
        return {
            "mode": mode,
            "chosen": self.chosen,
            "candidates": [
                {"text": c.text, "tokens": c.num_tokens, "logprob": round(c.logprob, 4),
                 "score": None if self.scores is None else self.scores[i]}
                for i, c in enumerate(self.candidates)
            ],
        }


def argmax(scores: list[float]) -> int:
    """Index of the best score; the first one on ties."""
    return max(range(len(scores)), key=lambda i: (scores[i], -i))


def aggregate(scores: list[float], how: str) -> float:
    """Combine the PRM scores of a trajectory's turns."""
    if not scores:
        return 0.0
    if how == "last":
        return scores[-1]
    if how == "min":
        return min(scores)
    if how == "mean":
        return sum(scores) / len(scores)
    if how == "prod":
        product = 1.0
        for s in scores:
            product *= s
        return product
    raise ValueError(f"unknown aggregate {how!r}")


AGGREGATES = ("last", "min", "mean", "prod")
