"""Diverse verifier tree search (DVTS, as in the search-and-learn work): independent subtrees.

The N-candidate budget is split into ``N // beam_width`` subtrees. Each subtree keeps a single trajectory and
expands it with ``beam_width`` candidates per step, keeping its own best child, so the subtrees do not collapse
onto one prefix the way a shared beam can. The best finished subtree (aggregated PRM score) is played out.
Like beam search it steps copies of the game for unplayed actions: ``env_lookahead: true``.
"""

from __future__ import annotations

from dataclasses import replace

from playprm.episode import Episode
from playprm.search.base import SearchSettings
from playprm.search.tree import expand, settle, trajectory_value


def search(roots: list[Episode], policy, scorer, settings: SearchSettings, *, is_guided,
           mode: str = "dvts") -> list[Episode]:
    """Per root episode, the best of its independent subtrees."""
    value = trajectory_value(settings)
    subtrees = max(1, settings.n_candidates // settings.beam_width)
    # a subtree expands its trajectory with B candidates, not N (replace keeps the seed stream)
    subtree = replace(settings, n_candidates=settings.beam_width)
    trees: list[list[Episode]] = [[root] + [root.fork() for _ in range(subtrees - 1)] for root in roots]
    spent = [[0, 0] for _ in roots]
    for _ in range(settings.num_beam_iterations):
        open_ = [(r, t) for r, group in enumerate(trees) for t, e in enumerate(group) if not e.done]
        if not open_:
            break
        children, costs = expand([trees[r][t] for r, t in open_], policy, scorer, subtree, is_guided=is_guided,
                                 mode=mode)
        for (r, t), kids, (g, p) in zip(open_, children, costs):
            trees[r][t] = max(kids, key=value)
            spent[r][0] += g
            spent[r][1] += p
    return settle([max(group, key=value) for group in trees], spent, policy, scorer, settings, is_guided=is_guided)
