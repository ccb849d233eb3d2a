"""What the tree searches over game trajectories (``beam_search``, ``dvts``) share: expanding trajectories with
scored candidates (one game copy each), playing the chosen ones to the end, and charging each with the tokens
of the whole search behind it."""

from __future__ import annotations

from collections.abc import Callable

from playprm.episode import Episode
from playprm.search import best_of_n, greedy
from playprm.search.base import SearchSettings, aggregate


def trajectory_value(settings: SearchSettings) -> Callable[[Episode], float]:
    """A trajectory's value: the PRM scores of its guided turns combined by ``settings.aggregate``."""
    return lambda episode: aggregate(episode.turn_scores, settings.aggregate)


def expand(beams: list[Episode], policy, scorer, settings: SearchSettings, *, is_guided,
           mode: str) -> tuple[list[list[Episode]], list[tuple[int, int]]]:
    """Children of each beam (one game copy per candidate, ``settings.n_candidates`` of them, the candidate
    played) and the tokens spent (generated, PRM) per beam. Unguided turns get one plain sample and a single
    child."""
    guided = [i for i, b in enumerate(beams) if is_guided(b.pending)]
    plain = [i for i, b in enumerate(beams) if not is_guided(b.pending)]
    children: list[list[Episode]] = [[] for _ in beams]
    spent = [(0, 0) for _ in beams]
    if guided:
        choices = best_of_n.choose([beams[i].pending.context for i in guided], policy, scorer, settings)
        for i, choice in zip(guided, choices):
            spent[i] = (choice.generated_tokens, choice.prm_tokens)
            beam = beams[i]
            copies = [beam.fork() for _ in choice.candidates[1:]] + [beam]
            for k, (child, candidate) in enumerate(zip(copies, choice.candidates)):
                child.turn_scores.append(choice.scores[k])
                child.play(candidate.text, log={**choice.log(mode), "chosen": k})
                children[i].append(child)
    if plain:
        choices = greedy.choose([beams[i].pending.context for i in plain], policy, scorer, settings)
        for i, choice in zip(plain, choices):
            spent[i] = (choice.generated_tokens, 0)
            beams[i].play(choice.text, log=choice.log("plain"))
            children[i].append(beams[i])
    return children, spent


def finish(episodes: list[Episode], policy, scorer, settings: SearchSettings, *,
           is_guided) -> tuple[list[Episode], list[tuple[int, int]]]:
    """Play unfinished trajectories to the end with best-of-N (guided turns) or plain sampling; returns the
    finished trajectories (each step's best-scored child in place of its parent) and the tokens each spent."""
    current = list(episodes)
    spent = [(0, 0) for _ in current]
    while True:
        open_ = [i for i, episode in enumerate(current) if not episode.done]
        if not open_:
            return current, spent
        children, costs = expand([current[i] for i in open_], policy, scorer, settings, is_guided=is_guided,
                                 mode="best-of-n")
        for i, kids, (generated, prm) in zip(open_, children, costs):
            current[i] = max(kids, key=lambda kid: kid.turn_scores[-1] if kid.turn_scores else 0.0)
            spent[i] = (spent[i][0] + generated, spent[i][1] + prm)


def settle(finals: list[Episode], spent: list[list[int]], policy, scorer, settings: SearchSettings, *,
           is_guided) -> list[Episode]:
    """Finish the chosen trajectories and charge each with the tokens of its whole search."""
    finished, costs = finish(finals, policy, scorer, settings, is_guided=is_guided)
    for episode, (generated, prm), (more_generated, more_prm) in zip(finished, spent, costs):
        episode.generated_tokens, episode.prm_tokens = generated + more_generated, prm + more_prm
    return finished
