"""Lookahead-free beam search: a beam over the *reply* of one turn, ranked by the PRM before the game answers.

The reply is grown in chunks of ``max_tokens // num_beam_iterations`` tokens (at least 8). Each of the B partial
replies is extended with ``N // B`` sampled continuations (at least one), every partial reply is scored by the
PRM as if it ended there, and the B best are kept; replies that reached their end-of-turn token stay in the pool.
The best finished reply is played. The game only ever sees that one reply, so, unlike ``beam-search``, the mode
is honest (``env_lookahead: false``). Partial replies grow as raw decoded text; the PRM scores them as candidates
(``Scorer.score_candidates``, identical texts once) whose text is the policy's post-processing of it
(``models.replies``), what the game receives, as for every other mode. Needs a policy that can continue a reply
(``prefixes``): the transformers backend.
"""

from __future__ import annotations

from dataclasses import dataclass

from playprm.models import replies
from playprm.models.base import Candidate, clean_candidates
from playprm.search.base import Choice, SearchSettings
from playprm.search.selection import select


@dataclass
class _Partial:
    raw: str  # decoded so far; continued as it is
    tokens: int
    logprob: float
    finished: bool
    score: float = 0.0

    def candidate(self, rule) -> Candidate:
        """This partial reply as a candidate: the text ``rule`` (the policy's post-processing) makes of it."""
        return Candidate(text=rule(self.raw), num_tokens=self.tokens, logprob=self.logprob, finished=self.finished,
                         raw=self.raw)


def choose(contexts: list[list[dict]], policy, scorer, settings: SearchSettings, *,
           rejected: list[list[str]] | None = None) -> list[Choice]:
    """For each context, the reply the PRM ranks best, grown chunk by chunk without asking the game; a reply
    the game already refused (``rejected[i]``, as in best-of-n) is played only when no other one finished."""
    width = max(1, settings.beam_width)
    per_beam = max(1, settings.n_candidates // width)
    chunk = max(8, settings.max_tokens // max(1, settings.num_beam_iterations))
    rule = getattr(policy, "reply_rule", replies.unchanged)
    beams: list[list[_Partial]] = [[_Partial("", 0, 0.0, False)] for _ in contexts]
    generated = [0] * len(contexts)
    prm_before = scorer.stats.tokens
    for _ in range(settings.num_beam_iterations):
        open_ = [(i, b) for i, group in enumerate(beams) for b in group if not b.finished]
        if not open_:
            break
        outputs = clean_candidates(policy.generate(
            [contexts[i] for i, _ in open_], n=per_beam, temperature=settings.temperature,
            max_tokens=chunk, seed=settings.next_seed(), prefixes=[b.raw for _, b in open_]))
        children: list[list[_Partial]] = [[] for _ in contexts]
        for (i, beam), continuations in zip(open_, outputs):
            for c in continuations:
                generated[i] += c.num_tokens
                tokens = beam.tokens + c.num_tokens
                children[i].append(_Partial(beam.raw + (c.text if c.raw is None else c.raw), tokens,
                                            beam.logprob + c.logprob,
                                            c.finished or tokens >= settings.max_tokens))
        rows = [i for i in range(len(contexts)) if children[i]]
        scores = scorer.score_candidates([contexts[i] for i in rows],
                                         [[p.candidate(rule) for p in children[i]] for i in rows])
        for i, group in zip(rows, scores):
            for partial, score in zip(children[i], group):
                partial.score = score
            pool = [b for b in beams[i] if b.finished] + children[i]
            beams[i] = sorted(pool, key=lambda p: -p.score)[:width]
    spent = scorer.stats.tokens - prm_before
    total = sum(generated) or 1
    choices = []
    for i, group in enumerate(beams):
        finished = [b for b in group if b.finished] or group
        candidates = [b.candidate(rule) for b in finished]
        scores = [b.score for b in finished]
        best = select(scores, [c.text for c in candidates], selection="argmax",
                      rejected=rejected[i] if rejected else None)
        # charged with every sampled continuation, not only the surviving beams
        choices.append(Choice(text=candidates[best].text, candidates=candidates, scores=scores, chosen=best,
                              prm_tokens=round(spent * generated[i] / total), search_tokens=generated[i],
                              selection="argmax"))
    return choices
