"""Beam search over game trajectories, scored by the PRM.

Keep B partial trajectories per episode; at each of up to ``num_beam_iterations`` steps expand every open beam
with N candidates, step a copy of the game for each, and keep the B best by aggregated PRM score; then finish
the best beam with best-of-N. Because trajectories that are finally dropped were played against the game,
this mode looks at the game's answers to unplayed actions: its runs carry ``env_lookahead: true``.
All beams of all episodes in flight are expanded in one batched policy call and one PRM call per step.
The chosen trajectory is charged with the tokens of the whole search behind it.
"""

from __future__ import annotations

from playprm.episode import Episode
from playprm.search.base import SearchSettings
from playprm.search.tree import expand, settle, trajectory_value


def search(roots: list[Episode], policy, scorer, settings: SearchSettings, *, is_guided,
           mode: str = "beam-search") -> list[Episode]:
    """Per root episode, the finished trajectory with the best aggregated PRM score."""
    value = trajectory_value(settings)
    beams: list[list[Episode]] = [[root] for root in roots]
    spent = [[0, 0] for _ in roots]
    for _ in range(settings.num_beam_iterations):
        open_ = [(r, b) for r, group in enumerate(beams) for b in group if not b.done]
        if not open_:
            break
        children, costs = expand([b for _, b in open_], policy, scorer, settings, is_guided=is_guided, mode=mode)
        pools: list[list[Episode]] = [[b for b in group if b.done] for group in beams]
        for (r, _), kids, (g, p) in zip(open_, children, costs):
            pools[r].extend(kids)
            spent[r][0] += g
            spent[r][1] += p
        beams = [sorted(pool, key=lambda e: -value(e))[: settings.beam_width] for pool in pools]
    return settle([max(group, key=value) for group in beams], spent, policy, scorer, settings, is_guided=is_guided)
