"""Best-of-N: N candidates per turn, scored with the PRM in one batch, one of them played (or ranked with a
baseline scorer named in ``players.SCORER_KINDS``: the policy's log-probability, the programmatic expert).

Which one is played is ``settings.selection`` (``search.selection``): the argmax of N samples (the model card's),
the greedy reply unless a sample beats it by ``settings.switch_margin`` (``anchored``: the greedy reply is
candidate 0), or the move whose identical candidates pool the best score (``weighted``). A candidate that repeats
a reply the game already rejected in the episode is not played while another exists. The game only ever sees
the chosen reply, so the resulting numbers are honest benchmark numbers.
"""

from __future__ import annotations

from playprm.models.base import Candidate, clean_candidates
from playprm.search.base import Choice, SearchSettings
from playprm.search.selection import select


def choose(contexts: list[list[dict]], policy, scorer, settings: SearchSettings, *,
           rejected: list[list[str]] | None = None) -> list[Choice]:
    """For each context: N candidates, their scores and the one ``settings.selection`` picks.

    ``rejected[i]``: the replies the game already refused the player of context ``i`` in this episode.
    """
    anchored = settings.selection == "anchored"
    generate = anchored_candidates if anchored else sampled_candidates
    outputs = clean_candidates(generate(contexts, policy, settings))
    before = scorer.stats.tokens
    scores = scorer.score_candidates(contexts, outputs)
    spent = scorer.stats.tokens - before
    scored = [len({c.text for c in cands}) for cands in outputs]  # identical texts are scored once
    total = sum(scored) or 1
    choices = []
    for i, (cands, group) in enumerate(zip(outputs, scores)):
        greedy = 0 if anchored else None
        best = select(group, [c.text for c in cands], selection=settings.selection, greedy=greedy,
                      margin=settings.switch_margin, rejected=rejected[i] if rejected else None)
        choices.append(Choice(text=cands[best].text, candidates=cands, scores=group, chosen=best,
                              prm_tokens=round(spent * scored[i] / total), selection=settings.selection,
                              greedy=greedy, margin=settings.switch_margin if anchored else None))
    return choices


def sampled_candidates(contexts: list[list[dict]], policy, settings: SearchSettings) -> list[list[Candidate]]:
    """N sampled candidates per context."""
    return policy.generate(contexts, n=settings.n_candidates, temperature=settings.temperature,
                           max_tokens=settings.max_tokens, seed=settings.next_seed())


def anchored_candidates(contexts: list[list[dict]], policy, settings: SearchSettings) -> list[list[Candidate]]:
    """Per context, the policy's greedy reply first, then N - 1 samples.

    A policy with ``greedy_first`` (the transformers backend) decodes the greedy row beside the sampled ones
    from one prefill. The others (vLLM, OpenAI-compatible servers, scripted policies) get a second, greedy
    request for the same contexts: vLLM's and most servers' prefix caching keep its prefill cheap, and the
    candidates' ``prefill_tokens`` then count the greedy request's only.
    """
    seed = settings.next_seed()
    if getattr(policy, "greedy_first", False):
        return policy.generate(contexts, n=settings.n_candidates, temperature=settings.temperature,
                               max_tokens=settings.max_tokens, seed=seed, greedy_first=True)
    greedy = policy.generate(contexts, n=1, temperature=0.0, max_tokens=settings.max_tokens, seed=seed)
    sampled = policy.generate(contexts, n=settings.n_candidates - 1, temperature=settings.temperature,
                              max_tokens=settings.max_tokens, seed=seed)
    return [first + rest for first, rest in zip(greedy, sampled)]
