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
from playprm.search import best_of_n, greedy
from playprm.search.base import SearchSettings, aggregate


def expand(beams: list[Episode], policy, scorer, settings: SearchSettings, *, width: int,
           is_guided, mode: str) -> tuple[list[list[Episode]], list[tuple[int, int]]]:
    """Children of each beam (one game copy per candidate, the candidate played) and the tokens spent
    (generated, PRM) per beam. Unguided turns get one plain sample and a single child."""
    guided = [i for i, b in enumerate(beams) if is_guided(b.pending)]
    plain = [i for i, b in enumerate(beams) if not is_guided(b.pending)]
    children: list[list[Episode]] = [[] for _ in beams]
    spent = [(0, 0) for _ in beams]
    if guided:
        wide = SearchSettings(**{**settings.__dict__, "n_candidates": width})
        choices = best_of_n.choose([beams[i].pending.context for i in guided], policy, scorer, wide)
        settings._calls = wide._calls  # keep seeds fresh across calls
        for i, choice in zip(guided, choices):
            spent[i] = (choice.generated_tokens, choice.prm_tokens)
            beam = beams[i]
            copies = [beam.fork() for _ in choice.candidates[1:]] + [beam]
            for k, (child, candidate) in enumerate(zip(copies, choice.candidates)):
                child.turn_scores.append(choice.scores[k])
                child.play(candidate.text, log={**choice.log(mode), "chosen": k})
                children[i].append(child)
    if plain:
        choices = greedy.choose([beams[i].pending.context for i in plain], policy, scorer, settings,
                                temperature=settings.temperature)
        for i, choice in zip(plain, choices):
            spent[i] = (choice.generated_tokens, 0)
            beams[i].play(choice.text, log=choice.log("plain"))
            children[i].append(beams[i])
    return children, spent


def finish(episodes: list[Episode], policy, scorer, settings: SearchSettings, *, is_guided) -> list[tuple[int, int]]:
    """Play unfinished trajectories to the end with best-of-N (guided turns) or plain sampling; returns the
    tokens spent per episode."""
    spent = {id(e): (0, 0) for e in episodes}
    while True:
        open_ = [e for e in episodes if not e.done]
        if not open_:
            return [spent[id(e)] for e in episodes]
        children, costs = expand(open_, policy, scorer, settings, width=settings.n_candidates,
                                 is_guided=is_guided, mode="best-of-n")
        for e, kids, (g, p) in zip(open_, children, costs):
            best = max(kids, key=lambda k: k.turn_scores[-1] if k.turn_scores else 0.0)
            if best is not e:  # keep playing the argmax on the original object
                e.__dict__.update(best.__dict__)
            spent[id(e)] = (spent[id(e)][0] + g, spent[id(e)][1] + p)


def settle(finals: list[Episode], spent: list[list[int]], policy, scorer, settings: SearchSettings, *,
           is_guided) -> list[Episode]:
    """Finish the chosen trajectories and charge each with the tokens of its whole search."""
    for r, (g, p) in enumerate(finish(finals, policy, scorer, settings, is_guided=is_guided)):
        spent[r][0] += g
        spent[r][1] += p
    for final, (g, p) in zip(finals, spent):
        final.generated_tokens, final.prm_tokens = g, p
    return finals


def search(roots: list[Episode], policy, scorer, settings: SearchSettings, *, is_guided,
           mode: str = "beam-search") -> list[Episode]:
    """Per root episode, the finished trajectory with the best aggregated PRM score."""

    def value(episode: Episode) -> float:
        return aggregate(episode.turn_scores, settings.aggregate)

    beams: list[list[Episode]] = [[root] for root in roots]
    spent = [[0, 0] for _ in roots]
    for _ in range(settings.num_beam_iterations):
        open_ = [(r, b) for r, group in enumerate(beams) for b in group if not b.done]
        if not open_:
            break
        children, costs = expand([b for _, b in open_], policy, scorer, settings, width=settings.n_candidates,
                                 is_guided=is_guided, mode=mode)
        pools: list[list[Episode]] = [[b for b in group if b.done] for group in beams]
        for (r, _), kids, (g, p) in zip(open_, children, costs):
            pools[r].extend(kids)
            spent[r][0] += g
            spent[r][1] += p
        beams = [sorted(pool, key=lambda e: -value(e))[: settings.beam_width] for pool in pools]
    return settle([max(group, key=value) for group in beams], spent, policy, scorer, settings, is_guided=is_guided)
