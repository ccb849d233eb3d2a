"""Wordle with the small word list (``"vocabulary": "small"``): the multi-turn game of the small preset's
``--game wordle``. Its rules and feedback are clembench's; only the list of accepted words and secret words is
shorter. Checked here: the list, the game master's use of it, the held-out split, and the expert (its move and
the scores its best-of-n ranks candidates by)."""

from __future__ import annotations

import json
import random

import pytest
from test_games import ScriptedModel, games, outcome, play, wordle_instance  # noqa: F401 - games is a fixture

from playprm.cli import main
from playprm.games.builtin import expert
from playprm.games.builtin.wordle import rules
from playprm.games.splits import split_instances, write_split


def small_instance(games, target: str) -> tuple[dict, dict]:  # noqa: F811
    experiment, instance = wordle_instance(games, target)
    return experiment, {**instance, "vocabulary": "small"}


def test_the_small_list_is_300_allowed_words():
    small = rules.valid_words("small")
    assert len(small) == len(set(small)) == 300
    assert set(small) <= set(rules.valid_words())
    assert rules.is_valid_word("about", "small") and not rules.is_valid_word("crane", "small")
    assert rules.is_valid_word("crane")  # the full list is unchanged
    with pytest.raises(ValueError, match="unknown wordle vocabulary"):
        rules.valid_words("tiny")


def test_expected_left_is_the_mean_size_of_the_targets_a_guess_leaves():
    targets = random.Random(0).sample(rules.valid_words("small"), 40)
    for guess in ("about", targets[0], "which"):
        # by hand: for each possible target, how many targets give the same feedback as it
        by_hand = sum(sum(rules.feedback(guess, o) == rules.feedback(guess, t) for o in targets)
                      for t in targets) / len(targets)
        assert rules.expected_left(guess, targets) == pytest.approx(by_hand)
    assert rules.expected_left(targets[0], targets[:1]) == 1.0


def test_the_small_game_names_its_list_and_refuses_other_words_without_costing_a_guess(games, tmp_path):  # noqa: F811
    experiment, instance = small_instance(games, "plant")
    replies = ["GUESS: crane", "GUESS: about", "GUESS: plant"]  # crane: an English word, not on the small list
    scores = play(games["wordle"], experiment, instance, [ScriptedModel("scripted", replies)], tmp_path)
    assert outcome(scores) == (0, 1, 0)
    episode = scores["episode scores"]
    assert episode["Guesses Used"] == 2 and episode["Invalid Guesses"] == 1
    assert episode["Main Score"] == pytest.approx(100 * 5 / 6)
    interactions = json.loads(next(tmp_path.rglob("interactions.json")).read_text())
    sent = [e["action"]["content"] for turn in interactions["turns"] for e in turn
            if e["action"]["type"] == "send message"]
    assert rules.SMALL_LIST_NOTE in sent[0] and rules.vocabulary_of(sent[0]) == "small"
    assert "not in my word list" in sent[1]
    # clembench's feedback, unchanged: about against plant
    assert f"Feedback on guess 1 (about): {rules.describe_feedback('about', rules.feedback('about', 'plant'))}" in sent[2]


def test_the_full_game_still_accepts_any_allowed_word(games, tmp_path):  # noqa: F811
    experiment, instance = wordle_instance(games, "plant")
    scores = play(games["wordle"], experiment, instance, [ScriptedModel("scripted", ["GUESS: crane", "GUESS: plant"])],
                  tmp_path)
    assert outcome(scores) == (0, 1, 0) and scores["episode scores"]["Invalid Guesses"] == 0


def test_held_out_and_validation_take_the_targets_training_left(tmp_path, capsys):
    argv = lambda out, seed, n, *exclude: ["instances", "--out", str(tmp_path / out), "--seed", str(seed),  # noqa: E731
                                           "--per-experiment", str(n), "--game", "wordle", "--vocabulary", "small",
                                           *(["--exclude", *(str(tmp_path / e) for e in exclude)] if exclude else [])]
    assert main(argv("train", 1, 200)) == 0
    assert main(argv("heldout", 2, 70, "train")) == 0
    assert main(argv("validation", 3, 70, "train", "heldout")) == 0
    out = capsys.readouterr().out
    assert "wordle: 30 instances" in out and "no more targets outside --exclude" in out
    targets = {name: [i["target_word"] for i in split_instances(tmp_path / name)["wordle"]]
               for name in ("train", "heldout", "validation")}
    assert [len(t) for t in targets.values()] == [200, 70, 30]
    assert all(len(set(t)) == len(t) for t in targets.values())  # each target once per split
    assert set().union(*targets.values()) == set(rules.valid_words("small"))  # disjoint, covering the list
    instances = split_instances(tmp_path / "heldout")["wordle"]
    assert all(i["vocabulary"] == "small" for i in instances)
    summary = json.loads((tmp_path / "heldout" / "split.json").read_text())["games"]["wordle"]
    assert summary["vocabulary"] == "small" and summary["target_shared_with_exclude"] == 0
    # a fourth split has nothing left to hold out: one line, no folder
    assert main(argv("more", 4, 10, "train", "heldout", "validation")) == 2
    assert "no more" not in capsys.readouterr().out and not (tmp_path / "more").exists()


def test_the_same_seed_writes_the_same_split(tmp_path):
    for name in ("a", "b"):
        write_split(tmp_path / name, seed=5, per_experiment=20, games=["wordle"], vocabulary="small")
    assert split_instances(tmp_path / "a") == split_instances(tmp_path / "b")


def context_after(target: str, guesses: list[str]) -> list[dict]:
    """A small-list guesser's context after ``guesses`` against ``target``, as the game master words it."""
    first = f"Let's play Wordle. ... Every guess must be a word of {rules.SMALL_LIST_NOTE} ..."
    context = [{"role": "user", "content": first}]
    for n, guess in enumerate(guesses, 1):
        pattern = rules.feedback(guess, target)
        context += [{"role": "assistant", "content": expert.wordle_reply(guess)},
                    {"role": "user", "content": f"Feedback on guess {n} ({guess}): "
                                                f"{rules.describe_feedback(guess, pattern)}\nYou have 5 guesses left."}]
    return context


def guess_of(reply: str) -> str:
    from playprm.games.builtin.protocol import parse_tagged

    return parse_tagged(reply, "GUESS")


def test_the_small_expert_plays_the_consistent_word_that_leaves_fewest_targets():
    for target in ("plant", "house", "which"):
        guesses = []
        while not guesses or guesses[-1] != target:
            context = context_after(target, guesses)
            possible = rules.consistent_words(rules.read_feedback("\n".join(m["content"] for m in context)),
                                              vocabulary="small")
            reply = expert.expert_move(context)
            guess = guess_of(reply)
            assert guess in possible
            # its work first, what the feedback says letter by letter, then the guess spelt out (the game reads only
            # the GUESS line): every word that fits the summary's greens, present and absent letters
            work, line = reply.split("\n")
            assert line == f"GUESS: {guess}" and work.endswith(f". guess {' '.join(guess)}")
            known, has, absent = (part.split()[1:] for part in work.removeprefix("EXPLANATION: ").split(" , "))
            absent = absent[:absent.index(".")]
            fits = [w for w in rules.valid_words("small")
                    if all(k in ("_", c) for k, c in zip(known, w)) and all(c in w for c in has if c != "-")
                    and not any(c in w for c in absent if c != "-")]
            assert set(possible) <= set(fits)  # the summary never rules out a possible target
            if guesses:
                assert target in fits and len(fits) < len(rules.valid_words("small"))
            assert rules.expected_left(guess, possible) == min(rules.expected_left(w, possible) for w in possible)
            guesses.append(guess)
            assert len(guesses) <= 6
    # the full game's expert is unchanged: the first consistent allowed word
    assert guess_of(expert.expert_move([{"role": "user", "content": "Let's play Wordle."}])) == rules.valid_words()[0]


def test_the_expert_scores_wordle_replies_by_consistency_then_the_targets_they_leave():
    context = context_after("plant", ["about"])  # a=yellow t=green: "plant" and a few others remain
    possible = rules.consistent_words(rules.read_feedback(context[-1]["content"]), vocabulary="small")
    assert "plant" in possible and len(possible) > 2
    best = guess_of(expert.expert_move(context))
    worst_consistent = max(possible, key=lambda w: rules.expected_left(w, possible))
    inconsistent = next(w for w in rules.valid_words("small") if w not in possible)
    replies = [expert.wordle_reply(w) for w in (best, worst_consistent, inconsistent)]
    replies += ["GUESS: crane", "I think it is plant", "GUESS: pla"]  # off the list, no GUESS line, no word
    scores = expert.ExpertScorer().score_candidates([context], [[_candidate(r) for r in replies]])[0]
    assert rules.expected_left(best, possible) < rules.expected_left(worst_consistent, possible)
    assert 2 < scores[1] < scores[0] < 3 and 1 <= scores[2] < 2
    assert scores[3:] == [0.0, 0.0, 0.0]


def _candidate(text: str):
    from playprm.models.base import Candidate

    return Candidate(text=text, num_tokens=1, logprob=0.0)


def test_a_tiny_model_plays_the_small_game_and_the_experts_best_of_n_picks_by_the_score(tiny_models, tmp_path):
    """On both tiny architectures: held-out small-list instances played end to end, candidates ranked by the
    expert's score (a random-weight model breaks the format, so every candidate scores 0 and the first is kept:
    what matters is that the game, the split and the scorer run together)."""
    write_split(tmp_path / "train", seed=1, per_experiment=295, games=["wordle"], vocabulary="small")
    write_split(tmp_path / "heldout", seed=2, per_experiment=5, games=["wordle"], vocabulary="small",
                exclude=[tmp_path / "train"])
    assert main(["eval", "--policy-model", str(tiny_models["policy"]), "--games-dir", str(tmp_path / "heldout"),
                 "--game", "wordle", "--limit", "2", "--max-tokens", "6", "--mode", "best-of-n", "--n-candidates",
                 "2", "--scorer", "expert", "--results-dir", str(tmp_path / "results")]) == 0
    interactions = sorted((tmp_path / "results").rglob("interactions.json"))
    assert len(interactions) == 2
    train = {i["target_word"] for i in split_instances(tmp_path / "train")["wordle"]}
    for path in interactions:
        record = json.loads(path.read_text())
        assert record["target_word"] not in train
        first = next(e["action"]["content"] for e in record["turns"][0] if e["action"]["type"] == "send message")
        assert rules.vocabulary_of(first) == "small"


def test_the_wordle_tokenizer_holds_each_word_as_one_token_and_reads_feedback_letter_by_letter(tmp_path, capsys):
    """make-tiny --tokenizer-pieces wordle, trained on the expert's small-list episodes: a feedback line keeps one
    token per letter's colour (without the pieces a whole line merged into a few opaque tokens) and every word of
    the list is one token, after a space and after the feedback's bracket."""
    from transformers import AutoTokenizer

    write_split(tmp_path / "train", seed=1, per_experiment=300, games=["wordle"], vocabulary="small")
    assert main(["collect", "--policy-model", "programmatic:expert", "--games-dir", str(tmp_path / "train"),
                 "--game", "wordle", "--samples-per-instance", "2", "--temperature", "1.0",
                 "--results-dir", str(tmp_path / "teacher")]) == 0
    assert main(["sft-data", "--results-dir", str(tmp_path / "teacher"), "--out", str(tmp_path / "data")]) == 0
    data = str(tmp_path / "data" / "train.jsonl")
    for pieces, out in ((["--tokenizer-pieces", "wordle"], "pieces"), ([], "plain")):
        assert main(["make-tiny", "--out", str(tmp_path / out), "--arch", "qwen3", "--tokenizer-data", data,
                     *pieces]) == 0
    line = "Feedback on guess 1 (rates): r=red a=yellow t=red e=red s=green"
    tokens = {out: [AutoTokenizer.from_pretrained(tmp_path / out / "policy").decode([i]) for i in
                    AutoTokenizer.from_pretrained(tmp_path / out / "policy")(line)["input_ids"]]
              for out in ("pieces", "plain")}
    assert tokens["pieces"][-5:] == [" r=red", " a=yellow", " t=red", " e=red", " s=green"]
    work = AutoTokenizer.from_pretrained(tmp_path / "pieces" / "policy")("known _ a _ _ t , guess p l a n t")["input_ids"]
    assert [AutoTokenizer.from_pretrained(tmp_path / "pieces" / "policy").decode([i]) for i in work][-5:] == \
        [" p", " l", " a", " n", " t"]  # the expert's spelt-out guess, a letter a token
    assert "(rates" in tokens["pieces"]
    assert not any(t.strip() in ("r=red", "a=yellow") for t in tokens["plain"])  # what the pieces change
    tokenizer = AutoTokenizer.from_pretrained(tmp_path / "pieces" / "policy")
    words = rules.valid_words("small")
    whole = sum(len(tokenizer(f" {w}")["input_ids"]) == 1 for w in words)
    assert whole >= 0.95 * len(words)  # the rest lose to the vocabulary's size (2,048): split in two
    plain = AutoTokenizer.from_pretrained(tmp_path / "plain" / "policy")
    assert sum(len(plain(f" {w}")["input_ids"]) == 1 for w in words) < whole
    # bad input: one line, nothing written
    assert main(["make-tiny", "--out", str(tmp_path / "x"), "--tokenizer-pieces", "wordle"]) == 2
    assert main(["make-tiny", "--out", str(tmp_path / "y"), "--tokenizer-data", data, "--tokenizer-pieces", "(a"]) == 2
    err = capsys.readouterr().err
    assert "needs --tokenizer-data" in err and "is not a regular expression" in err
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()
