"""Mastermind (TextArena's Mastermind-v0 code, six guesses, wordle's speed score): the built-in game of the room
probe. Checked here: the pegs, the game master's reply format, feedback and invalid moves, the score, the splits
that share no code, and the expert (its move and the scores its best-of-n ranks candidates by)."""

from __future__ import annotations

import json
from itertools import permutations

import pytest
from test_games import ScriptedModel, first_instance, games, outcome, play  # noqa: F401 - games is a fixture

from playprm.cli import main
from playprm.games.builtin import expert
from playprm.games.builtin.mastermind import rules
from playprm.games.splits import split_instances, write_split


def code_instance(games, code) -> tuple[dict, dict]:  # noqa: F811
    experiment, instance = first_instance(games["mastermind"])
    return experiment, {**instance, "code": list(code)}


def sent_messages(results) -> list[str]:
    interactions = json.loads(next(results.rglob("interactions.json")).read_text())
    return [e["action"]["content"] for turn in interactions["turns"] for e in turn
            if e["action"]["type"] == "send message"]


def test_pegs_count_right_places_black_and_right_digits_elsewhere_white():
    assert rules.pegs((1, 2, 3, 4), (1, 2, 3, 4)) == (4, 0)
    assert rules.pegs((1, 2, 3, 4), (4, 3, 2, 1)) == (0, 4)
    assert rules.pegs((1, 2, 3, 4), (1, 3, 5, 6)) == (1, 1)
    assert rules.pegs((5, 6, 1, 2), (3, 4, 1, 6)) == (1, 1)
    assert len(rules.all_codes()) == 360 == len(set(rules.all_codes()))
    # by hand over every pair of a few codes: black by place, white by shared digits not in place
    for guess, code in permutations(rules.all_codes()[::61], 2):
        black = sum(g == c for g, c in zip(guess, code))
        assert rules.pegs(guess, code) == (black, len(set(guess) & set(code)) - black)


def test_the_last_bracketed_list_is_the_guess_and_bad_codes_are_invalid():
    assert rules.last_guess("I quote 1 2 3 4, then [1 2 3 4] and finally [2 1 4 5]") == [2, 1, 4, 5]
    assert rules.last_guess("no guess") is None
    assert rules.invalid_reason([2, 1, 4, 5]) is None
    assert "square brackets" in rules.invalid_reason(None)
    assert "4 digits" in rules.invalid_reason([1, 2, 3])
    assert "from 1 to 6" in rules.invalid_reason([1, 2, 3, 7])
    assert "twice" in rules.invalid_reason([1, 1, 2, 3])


def test_a_game_answers_each_guess_with_textarenas_feedback_line_and_scores_speed(games, tmp_path):  # noqa: F811
    experiment, instance = code_instance(games, (2, 1, 4, 5))
    replies = ["My guess: [1 2 3 4]", "[1 2 3 4]", "I will go with [2 1 4 5]"]  # the second repeats the first
    scores = play(games["mastermind"], experiment, instance, [ScriptedModel("scripted", replies)], tmp_path)
    assert outcome(scores) == (0, 1, 0)
    episode = scores["episode scores"]
    assert episode["Guesses Used"] == 3 and episode["Repeated Guesses"] == 1
    assert episode["Main Score"] == pytest.approx(100 * (6 + 1 - 3) / 6)
    sent = sent_messages(tmp_path)
    assert "4 digits long, each digit from 1 to 6, with no duplicates" in sent[0] and "6 guesses" in sent[0]
    assert "Submitted [1 2 3 4]. Feedback: 0 black peg(s), 3 white peg(s)." in sent[1]
    assert "You have 5 guesses left." in sent[1]
    assert rules.read_feedback(sent[1]) == [((1, 2, 3, 4), (0, 3))]
    rounds = scores["round scores"]
    assert [rounds[str(r)]["Fits Feedback"] for r in range(3)] == [1, 0, 1]  # a repeat never fits


@pytest.mark.parametrize("reply", ["1 2 3 4", "[1 2 3]", "[1 2 3 9]", "[1 1 2 3]"])
def test_an_invalid_move_aborts_the_episode(games, tmp_path, reply):  # noqa: F811
    experiment, instance = code_instance(games, (2, 1, 4, 5))
    scores = play(games["mastermind"], experiment, instance, [ScriptedModel("scripted", [reply])], tmp_path)
    assert outcome(scores) == (1, 0, 0)
    assert scores["episode scores"]["Main Score"] != scores["episode scores"]["Main Score"]  # NaN, as clembench


def test_six_wrong_guesses_lose_with_score_zero(games, tmp_path):  # noqa: F811
    experiment, instance = code_instance(games, (6, 5, 4, 3))
    replies = [rules.format_code(c) for c in rules.all_codes()[:6]]
    scores = play(games["mastermind"], experiment, instance, [ScriptedModel("scripted", replies)], tmp_path)
    assert outcome(scores) == (0, 0, 1) and scores["episode scores"]["Main Score"] == 0


def test_held_out_and_validation_take_the_codes_training_left(tmp_path):
    write_split(tmp_path / "train", seed=1, per_experiment=240, games=["mastermind"])
    write_split(tmp_path / "heldout", seed=2, per_experiment=60, games=["mastermind"], exclude=[tmp_path / "train"])
    write_split(tmp_path / "validation", seed=3, per_experiment=100, games=["mastermind"],
                exclude=[tmp_path / "train", tmp_path / "heldout"])
    codes = {name: [tuple(i["code"]) for i in split_instances(tmp_path / name)["mastermind"]]
             for name in ("train", "heldout", "validation")}
    assert [len(c) for c in codes.values()] == [240, 60, 60]  # validation gets the 60 codes left, not 100
    assert len(set().union(*codes.values())) == 360


def context_after(code, guesses) -> list[dict]:
    """A guesser's context after ``guesses`` against ``code``, as the game master words it."""
    context = [{"role": "user", "content": "You are playing Mastermind.\n..."}]
    for guess in guesses:
        black, white = rules.pegs(guess, code)
        context += [{"role": "assistant", "content": rules.format_code(guess)},
                    {"role": "user", "content": f"Submitted {rules.format_code(guess)}. Feedback: {black} black "
                                                f"peg(s), {white} white peg(s).\nYou have 5 guesses left."}]
    return context


def _candidate(text: str):
    from playprm.models.base import Candidate

    return Candidate(text=text, num_tokens=1, logprob=0.0)


def test_the_expert_plays_the_consistent_code_that_leaves_fewest_and_wins_within_six():
    for code in rules.all_codes()[::90]:
        guesses = []
        while not guesses or guesses[-1] != code:
            move = rules.last_guess(expert.expert_move(context_after(code, guesses)))
            possible = rules.consistent_codes([(g, rules.pegs(g, code)) for g in guesses])
            assert tuple(move) in possible  # never a code the feedback rules out
            if guesses:  # (every first guess leaves the same: the codes are symmetric)
                assert rules.expected_left(tuple(move), possible) == min(rules.expected_left(c, possible)
                                                                         for c in possible)
            guesses.append(tuple(move))
        assert len(guesses) <= 6


def test_the_expert_scores_replies_by_format_repeats_consistency_then_codes_left():
    code = (2, 1, 4, 5)
    context = context_after(code, [(1, 2, 3, 4)])
    possible = rules.consistent_codes([((1, 2, 3, 4), (0, 3))])
    best = rules.last_guess(expert.expert_move(context))
    worst_consistent = max(possible, key=lambda c: rules.expected_left(c, possible))
    contradicting = next(c for c in rules.all_codes() if c not in possible and c != (1, 2, 3, 4))
    replies = [rules.format_code(c) for c in (best, worst_consistent, contradicting)]
    replies += ["[1 2 3 4]", "[1 1 2 3]", "I think 2 1 4 5"]  # a repeat, a duplicate digit, no brackets
    scores = expert.ExpertScorer().score_candidates([context], [[_candidate(r) for r in replies]])[0]
    assert rules.expected_left(tuple(best), possible) < rules.expected_left(worst_consistent, possible)
    assert 2 < scores[1] < scores[0] < 3 and 1 <= scores[2] < 2
    assert scores[3] == 0.5 and scores[4:] == [0.0, 0.0]


def test_random_valid_moves_fit_the_feedback():
    from playprm.games.builtin.scripted import valid_moves

    context = context_after((2, 1, 4, 5), [(1, 2, 3, 4), (2, 1, 3, 6)])
    possible = rules.consistent_codes(rules.read_feedback("\n".join(m["content"] for m in context)))
    assert sorted(tuple(rules.last_guess(m)) for m in valid_moves(context)) == sorted(possible)


def test_a_tiny_model_plays_held_out_codes_and_the_experts_best_of_n_ranks_them(tiny_models, tmp_path):
    """On both tiny architectures: held-out codes played end to end with the expert's best-of-n (a random-weight
    model breaks the format, so every candidate scores 0: what matters is that game, split and scorer run
    together)."""
    write_split(tmp_path / "train", seed=1, per_experiment=350, games=["mastermind"])
    write_split(tmp_path / "heldout", seed=2, per_experiment=5, games=["mastermind"], exclude=[tmp_path / "train"])
    assert main(["eval", "--policy-model", str(tiny_models["policy"]), "--games-dir", str(tmp_path / "heldout"),
                 "--game", "mastermind", "--limit", "2", "--max-tokens", "6", "--mode", "best-of-n",
                 "--n-candidates", "2", "--scorer", "expert", "--results-dir", str(tmp_path / "results")]) == 0
    records = sorted((tmp_path / "results").rglob("interactions.json"))
    assert len(records) == 2
    train = {tuple(i["code"]) for i in split_instances(tmp_path / "train")["mastermind"]}
    for path in records:
        assert tuple(json.loads(path.read_text())["code"]) not in train
        candidates = [json.loads(line) for line in (path.parent / "candidates.jsonl").read_text().splitlines()]
        scored = [c for turn in candidates for c in turn["candidates"]]
        assert scored and all(c["score"] == 0.0 for c in scored if rules.invalid_reason(rules.last_guess(c["text"])))
