"""How best-of-n picks one of a turn's scored candidates, and the guard against replies the game rejected.

- ``argmax`` (the model card's): the best-scored candidate of N sampled ones.
- ``anchored``: the policy's greedy reply is candidate 0; another candidate replaces it only when its score
  beats the greedy one's by more than ``margin``. A PRM that is right on average but noisy inside one context
  then changes a turn only where it is confident; margin 0 is argmax over a set that contains greedy.
- ``weighted`` (search-and-learn's weighted best-of-N): candidates that make the same move (the same text after
  ``strip()``) pool their scores (sum); the move with the best pool is played.

Every selection skips candidates that repeat a reply the game already rejected in this episode (``repeats``)
while another candidate exists: a PRM that liked a move before the game refused it likes it again after.
"""

from __future__ import annotations

from playprm.models.replies import move, repeats
from playprm.search.base import argmax

SELECTIONS = ("argmax", "anchored", "weighted")
SELECTION_HELP = ("argmax: the best-scored of N sampled candidates (the model card's); anchored: the greedy reply "
                  "is a candidate and is replaced only by one that beats its score by more than --switch-margin; "
                  "weighted: candidates with the same reply pool their scores")


def select(scores: list[float], texts: list[str], *, selection: str, greedy: int | None = None,
           margin: float = 0.0, rejected: list[str] | None = None) -> int:
    """The index of the candidate to play.

    ``scores`` and ``texts`` are the candidates'; ``greedy`` the index of the greedy reply (``anchored`` needs
    one); ``rejected`` the replies the game already refused this player in this episode. Ties go to the first.
    """
    barred = set(repeats(texts, rejected))
    allowed = [i for i in range(len(texts)) if i not in barred] or list(range(len(texts)))
    if selection == "weighted":
        pools: dict[str, float] = {}
        for i in allowed:
            pools[move(texts[i])] = pools.get(move(texts[i]), 0.0) + scores[i]
        best = max(pools.values())
        # the best-scored member of the first best pool (members share the move; their texts may differ)
        pool = next(key for key, total in pools.items() if total == best)
        return _best([i for i in allowed if move(texts[i]) == pool], scores)
    best = _best(allowed, scores)
    if selection == "argmax":
        return best
    if selection == "anchored":
        if greedy is None:
            raise ValueError("anchored selection needs the greedy candidate's index")
        if greedy not in allowed:  # the greedy reply is one the game refused: the best other one
            return best
        others = [i for i in allowed if move(texts[i]) != move(texts[greedy])]
        if not others:
            return greedy
        challenger = _best(others, scores)
        return challenger if scores[challenger] > scores[greedy] + margin else greedy
    raise ValueError(f"unknown selection {selection!r}; one of {', '.join(SELECTIONS)}")


def _best(indices: list[int], scores: list[float]) -> int:
    """The index (among ``indices``) of the best score; the first one on ties."""
    return indices[argmax([scores[i] for i in indices])]
