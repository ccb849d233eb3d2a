"""Figure 2: PRM scoring of candidates that share a context. ``PRMScorer.score`` encodes each context once and
runs only the candidate tokens a second time; ``score_naive`` runs every (context, candidate) pair in full."""

from __future__ import annotations

import random
import time

from playprm import chat
from playprm.bench import workload
from playprm.bench.report import Figure, Goal, ratio, seconds
from playprm.bench.timing import alternate


def candidate_texts(tokenizer, count: int, target_tokens: int, seed: int = 0) -> list[str]:
    """``count`` wordle-style replies of about ``target_tokens`` tokens each (end-of-turn included)."""
    words = workload.wordle_words()
    rng = random.Random(seed)
    texts = []
    for _ in range(count):
        text = f"GUESS: {rng.choice(words)}\nEXPLANATION:"
        while len(chat.response_ids(tokenizer, text)) < target_tokens:
            text += " " + rng.choice(words)
        texts.append(text)
    return texts


def workload_for(tokenizer, contexts: int, context_tokens: int, candidates: int, candidate_tokens: int):
    batch = [workload.long_context(tokenizer, context_tokens, offset=i) for i in range(contexts)]
    groups = [candidate_texts(tokenizer, candidates, candidate_tokens, seed=i) for i in range(contexts)]
    return batch, groups


def run(models: workload.ModelPair, *, contexts: int = 4, context_tokens: int = 1000, candidates: int = 8,
        candidate_tokens: int = 32, pairs: int = 3) -> Figure:
    from playprm.prm.scorer import PRMScorer

    started = time.perf_counter()
    scorer = PRMScorer.from_path(models.prm)
    batch, groups = workload_for(scorer.tokenizer, contexts, context_tokens, candidates, candidate_tokens)
    singles = [g[:1] for g in groups]
    trial = alternate({
        "shared, 1 candidate": lambda: scorer.score(batch, singles),
        f"shared, {candidates} candidates": lambda: scorer.score(batch, groups),
        f"naive, {candidates} candidates": lambda: scorer.score_naive(batch, groups),
    }, pairs=pairs)
    one, many, naive = (trial.median(k) for k in trial.times)
    shared_scores = trial.outputs[f"shared, {candidates} candidates"]
    naive_scores = trial.outputs[f"naive, {candidates} candidates"]
    difference = max(abs(a - b) for x, y in zip(shared_scores, naive_scores) for a, b in zip(x, y))
    context_lengths = [len(chat.prompt_ids(scorer.tokenizer, c, scorer.chat_template_kwargs)) for c in batch]
    reply_lengths = [len(chat.response_ids(scorer.tokenizer, t)) for g in groups for t in g]
    rows = [[name, seconds(trial.median(name)), ratio(trial.median(name) / one)] for name in trial.times]
    measured = many / one
    goals = [Goal(
        text=f"{candidates} candidates cost <= 1.5x one (shared context)", measured=measured, limit=1.5,
        met=measured <= 1.5,
        why_missed=(f"the second pass runs {candidates} x {max(reply_lengths)} candidate tokens per context "
                    f"against a {max(context_lengths)}-token cache; on CPU that work grows with the "
                    f"candidate rows, while the context prefill it saves is paid once."),
    )]
    notes = [
        f"The naive path costs {naive / many:.1f}x the shared one for the same {candidates} candidates "
        f"({naive / one:.1f}x one candidate).",
        f"Shared and naive scores agree to {difference:.1e} (largest absolute difference).",
    ]
    return Figure(
        key="prm", title="2. Shared-context PRM scoring",
        setup=(f"{contexts} game conversations of {min(context_lengths)}-{max(context_lengths)} tokens, each with "
               f"{candidates} candidate replies of {min(reply_lengths)}-{max(reply_lengths)} tokens, the "
               f"{models.label} tiny PRM, {pairs} alternated rounds; times are medians."),
        header=["path", "wall s", "x shared 1 candidate"], rows=rows, raw=trial.times, goals=goals, notes=notes,
        seconds=time.perf_counter() - started,
    )
