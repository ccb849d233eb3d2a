"""PRM scoring with a shared context equals scoring every (context, candidate) sequence on its own."""

from __future__ import annotations

import pytest

from playprm.prm.scorer import PRMScorer

CONTEXTS = [
    [{"role": "user", "content": "Let's play wordle. Reply with GUESS: <word>"}],
    [{"role": "user", "content": "A much longer context " * 12}, {"role": "assistant", "content": "GUESS: crane"},
     {"role": "user", "content": "feedback: c<red> r<green> a<red> n<red> e<yellow>"}],
    [{"role": "user", "content": "x"}],
]
CANDIDATES = [["GUESS: house", "GUESS: mouse", "no idea", "GUESS: house EXPLANATION: vowels"],
              ["GUESS: treat"], ["a", "b b"]]


@pytest.fixture(scope="module")
def scorer(tiny_models):
    return PRMScorer.from_path(tiny_models["prm"])


def test_shared_context_scores_equal_full_sequence_scores(scorer):
    shared = scorer.score(CONTEXTS, CANDIDATES)
    naive = scorer.score_naive(CONTEXTS, CANDIDATES)
    assert [len(s) for s in shared] == [4, 1, 2]
    for a, b in zip(shared, naive):
        assert a == pytest.approx(b, abs=1e-5)
    assert all(0.0 < x < 1.0 for group in shared for x in group)


def test_scores_do_not_depend_on_batch_composition(scorer):
    alone = scorer.score(CONTEXTS[1:2], CANDIDATES[1:2])
    together = scorer.score(CONTEXTS, CANDIDATES)
    assert alone[0] == pytest.approx(together[1], abs=1e-5)


def test_small_row_budget_splits_batches_without_changing_scores(scorer):
    full = scorer.score(CONTEXTS, CANDIDATES)
    scorer.max_batch_rows, saved = 2, scorer.max_batch_rows
    try:
        split = scorer.score(CONTEXTS, CANDIDATES)
    finally:
        scorer.max_batch_rows = saved
    for a, b in zip(full, split):
        assert a == pytest.approx(b, abs=1e-5)


def test_out_of_memory_halves_the_batch_and_retries(scorer, monkeypatch):
    import torch

    real = scorer._score_shared
    calls = []

    def flaky(prompts, replies, *rest):
        calls.append(sum(len(r) for r in replies))
        if len(calls) == 1:
            raise torch.OutOfMemoryError("simulated")
        return real(prompts, replies, *rest)

    monkeypatch.setattr(scorer, "_score_shared", flaky)
    scores = scorer.score(CONTEXTS, CANDIDATES)
    assert calls[0] == 7 and max(calls[1:]) <= 32
    flat = [x for group in scores for x in group]
    expected = [x for group in scorer.score_naive(CONTEXTS, CANDIDATES) for x in group]
    assert flat == pytest.approx(expected, abs=1e-5)


def test_candidates_with_one_text_are_scored_once_and_share_its_score(scorer):
    from playprm.models.base import Candidate

    texts = ["GUESS: house", "GUESS: house", "no idea", "GUESS: house"]
    candidates = [[Candidate(text=t, num_tokens=len(t.split()), logprob=-float(k)) for k, t in enumerate(texts)]]
    before = scorer.stats.candidate_tokens
    [scores] = scorer.score_candidates(CONTEXTS[:1], candidates)
    charged = scorer.stats.candidate_tokens - before
    [distinct] = scorer.score(CONTEXTS[:1], [["GUESS: house", "no idea"]])
    assert scores == pytest.approx([distinct[0], distinct[0], distinct[1], distinct[0]], abs=1e-5)
    assert charged == scorer.stats.candidate_tokens - before - charged  # two texts charged, not four
