"""Guess the number (TextArena's GuessTheNumber-v0 range, ten guesses, wordle's speed score): the room probe's
third candidate. Checked here: the hints, the score, invalid moves, the splits and the expert."""

from __future__ import annotations

import pytest
from test_games import ScriptedModel, first_instance, games, outcome, play  # noqa: F401 - games is a fixture
from test_mastermind import _candidate, sent_messages

from playprm.games.builtin import expert
from playprm.games.splits import split_instances, write_split


def number_context(number: int, guesses: list[int]) -> list[dict]:
    from playprm.games.builtin.guessthenumber import rules as numbers

    context = [{"role": "user", "content": "You are playing Guess The Number.\n..."}]
    for guess in guesses:
        context += [{"role": "assistant", "content": f"[{guess}]"},
                    {"role": "user", "content": f"Submitted [{guess}]. The number is {numbers.hint(guess, number)} "
                                                f"than {guess}.\nYou have 9 guesses left."}]
    return context


def test_guessthenumber_answers_higher_or_lower_scores_speed_and_aborts_a_bad_move(games, tmp_path):  # noqa: F811
    experiment, instance = first_instance(games["guessthenumber"])
    instance = {**instance, "number": 37}
    replies = ["I start in the middle: [50]", "[20]", "[20]", "so [37]"]
    scores = play(games["guessthenumber"], experiment, instance, [ScriptedModel("scripted", replies)], tmp_path / "a")
    assert outcome(scores) == (0, 1, 0)
    assert scores["episode scores"]["Main Score"] == pytest.approx(100 * (10 + 1 - 4) / 10)
    assert scores["episode scores"]["Repeated Guesses"] == 1
    assert [scores["round scores"][str(r)]["Fits Hints"] for r in range(4)] == [1, 1, 0, 1]
    sent = sent_messages(tmp_path / "a")
    assert "between 1 and 100" in sent[0] and "Submitted [50]. The number is lower than 50." in sent[1]
    for bad in ("fifty", "[101]"):
        scores = play(games["guessthenumber"], experiment, instance, [ScriptedModel("s", [bad])], tmp_path / bad)
        assert outcome(scores) == (1, 0, 0)


def test_guessthenumbers_expert_bisects_and_scores_moves_by_the_hints():
    from playprm.games.builtin.guessthenumber import rules as numbers

    context = number_context(37, [50, 20])  # 21..49 remain
    assert expert.expert_move(context) == "[35]"
    replies = ["[35]", "[48]", "[60]", "[50]", "[0]", "no number"]
    scores = expert.ExpertScorer().score_candidates([context], [[_candidate(r) for r in replies]])[0]
    assert 2 < scores[1] < scores[0] < 3  # both inside the hints, the middle leaves fewer
    assert 1 <= scores[2] < 2 and scores[3] == 0.5 and scores[4:] == [0.0, 0.0]
    assert numbers.options(((50, "lower"), (20, "higher"))) == tuple(range(21, 50))


def test_guessthenumber_splits_share_no_number(tmp_path):
    write_split(tmp_path / "train", seed=1, per_experiment=60, games=["guessthenumber"])
    write_split(tmp_path / "validation", seed=3, per_experiment=60, games=["guessthenumber"], exclude=[tmp_path / "train"])
    numbers = [{i["number"] for i in split_instances(tmp_path / name)["guessthenumber"]} for name in ("train", "validation")]
    assert [len(n) for n in numbers] == [60, 40] and not numbers[0] & numbers[1]


def test_a_tiny_model_plays_held_out_numbers_and_the_experts_best_of_n_ranks_them(tiny_models, tmp_path):
    """On both tiny architectures: held-out numbers played end to end with the expert's best-of-n (a random-weight
    model breaks the format, so its candidates score 0 where they hold no number in range)."""
    import json

    from playprm.cli import main
    from playprm.games.builtin.guessthenumber import rules as numbers

    write_split(tmp_path / "train", seed=1, per_experiment=60, games=["guessthenumber"])
    write_split(tmp_path / "heldout", seed=2, per_experiment=5, games=["guessthenumber"], exclude=[tmp_path / "train"])
    assert main(["eval", "--policy-model", str(tiny_models["policy"]), "--games-dir", str(tmp_path / "heldout"),
                 "--game", "guessthenumber", "--limit", "2", "--max-tokens", "6", "--mode", "best-of-n",
                 "--n-candidates", "2", "--scorer", "expert", "--results-dir", str(tmp_path / "results")]) == 0
    records = sorted((tmp_path / "results").rglob("interactions.json"))
    assert len(records) == 2
    train = {i["number"] for i in split_instances(tmp_path / "train")["guessthenumber"]}
    for path in records:
        assert json.loads((path.parent / "instance.json").read_text())["number"] not in train
        candidates = [json.loads(line) for line in (path.parent / "candidates.jsonl").read_text().splitlines()]
        scored = [c for turn in candidates for c in turn["candidates"]]
        invalid = [c for c in scored if numbers.invalid_reason(numbers.last_guess(c["text"]))]
        assert invalid and all(c["score"] == 0.0 for c in invalid)
