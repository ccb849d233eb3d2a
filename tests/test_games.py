"""The built-in games, played through clemcore's GameMasterEnv by scripted players, scored by their scorers.

Every episode is recorded with clemcore's own file callbacks into a temporary results folder and scored with
``GameBenchmark.compute_scores``, so the checks read the same ``scores.json`` that ``clem score`` writes.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from clemcore.backends import CustomResponseModel, Model, ModelSpec
from clemcore.clemgame import (
    ExperimentFileSaver,
    GameBenchmark,
    GameBenchmarkCallbackList,
    InstanceFileSaver,
    InteractionsFileSaver,
    ParseError,
    ResultsFolder,
)
from clemcore.clemgame.envs.pettingzoo.master import GameMasterEnv

from playprm.games.builtin.protocol import parse_tagged, tagged_values
from playprm.games.builtin.wordle.rules import (
    consistent_words,
    describe_feedback,
    feedback,
    is_valid_word,
    read_feedback,
    valid_words,
)
from playprm.games.registry import discover_games, load_instances


class ScriptedModel(Model):
    """A model that answers with the given replies, in order."""

    def __init__(self, name: str, replies: list[str]):
        super().__init__(ModelSpec(model_name=name))
        self.set_gen_args(temperature=0.0, max_tokens=100)
        self._replies = list(replies)

    def generate_response(self, messages: list[dict]):
        reply = self._replies.pop(0)
        return {"messages": messages}, {"reply": reply}, reply


@pytest.fixture(scope="module")
def games():
    return discover_games(cwd=Path(__file__).parent)  # a folder without game_registry.json: built-in only


def play(game, experiment: dict, instance: dict, models: list[Model], results: Path) -> dict:
    """Play one episode the way clemcore's sequential runner does, then score it; returns scores.json."""
    folder = ResultsFolder(results, run_dir="scripted")
    callbacks = GameBenchmarkCallbackList(
        [
            InstanceFileSaver(folder),
            ExperimentFileSaver(folder),
            InteractionsFileSaver(folder),
        ]
    )
    with GameBenchmark.load_from_spec(game.spec) as benchmark:
        env = GameMasterEnv(benchmark, callbacks=callbacks)
        env.reset(options={"player_models": models, "experiment": experiment, "game_instance": instance})
        for agent in env.agent_iter():
            context, _reward, termination, truncation, _info = env.last()
            env.step(None if termination or truncation else env.player_by_agent_id[agent](context))
        interaction_files = sorted(results.rglob("interactions.json"))
        assert len(interaction_files) == 1
        benchmark.compute_scores(interaction_files)
    return json.loads((interaction_files[0].parent / "scores.json").read_text())


def outcome(scores: dict) -> tuple[int, int, int]:
    episode = scores["episode scores"]
    return episode["Aborted"], episode["Success"], episode["Lose"]


def first_instance(game, experiment_name: str | None = None) -> tuple[dict, dict]:
    pairs = load_instances(game, experiments=[experiment_name] if experiment_name else None)
    return pairs[0]


def wordle_instance(games, target: str) -> tuple[dict, dict]:
    experiment, instance = first_instance(games["wordle"])
    return experiment, {**instance, "target_word": target}


# wordle


def test_feedback_marks_green_yellow_red():
    assert feedback("crane", "crane") == "GGGGG"
    assert feedback("house", "month") == "YGRRR"
    assert feedback("CRANE", "react") == "YYGRY"


def test_feedback_counts_repeated_letters_once_per_target_letter():
    assert feedback("speed", "abide") == "RRYRY"  # one e in the target: only the first spare e is yellow
    assert feedback("eerie", "crepe") == "YRYRG"  # the green e is matched before any yellow
    assert feedback("llama", "hello") == "YYRRR"


def test_valid_words_are_five_lowercase_letters_and_include_plurals():
    words = valid_words()
    assert len(words) > 10000 and words == sorted(words)
    assert all(len(w) == 5 and w.isalpha() and w.islower() for w in words)
    assert is_valid_word("Crane") and is_valid_word("stars") and not is_valid_word("xqzvt")


def test_consistent_words_keep_only_words_matching_all_feedback():
    history = [("crane", feedback("crane", "plant")), ("slant", feedback("slant", "plant"))]
    survivors = consistent_words(history)
    assert "plant" in survivors and "crane" not in survivors
    assert all(feedback(g, w) == p for w in survivors for g, p in history)


def test_read_feedback_recovers_patterns_from_the_game_masters_message():
    message = f"Feedback on guess 1 (crane): {describe_feedback('crane', 'RRGGR')}\nYou have 5 guesses left."
    assert read_feedback(message) == [("crane", "RRGGR")]
    assert read_feedback("no feedback here") == []


def test_wordle_win_in_two_guesses_scores_by_speed(games, tmp_path):
    experiment, instance = wordle_instance(games, "plant")
    model = ScriptedModel("scripted", ["GUESS: crane\nEXPLANATION: common letters", "  guess:  **Plant** "])
    scores = play(games["wordle"], experiment, instance, [model], tmp_path)
    assert outcome(scores) == (0, 1, 0)
    assert scores["episode scores"]["Main Score"] == pytest.approx(100 * 5 / 6)
    assert scores["round scores"]["0"]["Green Letters"] == 2  # crane vs plant: a and n in place
    assert scores["round scores"]["1"]["Green Letters"] == 5


def test_wordle_unknown_word_is_asked_again_in_the_same_round_without_costing_a_guess(games, tmp_path):
    experiment, instance = wordle_instance(games, "plant")
    replies = ["GUESS: xqzvt", "GUESS: xqzvt"] + ["GUESS: crane"] * 6
    scores = play(games["wordle"], experiment, instance, [ScriptedModel("scripted", replies)], tmp_path)
    assert outcome(scores) == (0, 0, 1)  # six guesses from the list, all wrong
    episode = scores["episode scores"]
    assert episode["Main Score"] == 0 and episode["Guesses Used"] == 6 and episode["Invalid Guesses"] == 2
    first = scores["round scores"]["0"]
    assert (first["Request Count"], first["Invalid Guesses"], first["Valid Guess"]) == (3, 2, 1)
    assert len(scores["round scores"]) == 6
    assert episode["Violated Request Count"] == 0  # an unknown word is parsed, not a format violation
    interactions = json.loads(next(tmp_path.rglob("interactions.json")).read_text())
    asked = [e["action"]["content"] for e in interactions["turns"][0] if e["action"]["type"] == "send message"]
    assert "not in my word list" in asked[1] and "You have 6 guesses left" in asked[1]


def test_wordle_sixth_unknown_word_for_one_guess_aborts(games, tmp_path):
    experiment, instance = wordle_instance(games, "plant")
    replies = ["GUESS: crane"] + ["GUESS: xqzvt"] * 6
    scores = play(games["wordle"], experiment, instance, [ScriptedModel("scripted", replies)], tmp_path)
    assert outcome(scores) == (1, 0, 0)
    assert math.isnan(scores["episode scores"]["Main Score"])
    second = scores["round scores"]["1"]
    assert (second["Request Count"], second["Invalid Guesses"], second["Valid Guess"]) == (6, 6, 0)


def test_wordle_guess_of_another_length_aborts(games, tmp_path):
    experiment, instance = wordle_instance(games, "plant")
    scores = play(games["wordle"], experiment, instance, [ScriptedModel("scripted", ["GUESS: cranes"])], tmp_path)
    assert outcome(scores) == (1, 0, 0)
    assert scores["episode scores"]["Violated Request Count"] == 1


def test_wordle_reply_without_guess_line_aborts(games, tmp_path):
    experiment, instance = wordle_instance(games, "plant")
    model = ScriptedModel("scripted", ["GUESS: crane", "I think the word is plant."])
    scores = play(games["wordle"], experiment, instance, [model], tmp_path)
    assert outcome(scores) == (1, 0, 0)
    assert math.isnan(scores["episode scores"]["Main Score"])
    assert scores["episode scores"]["Violated Request Count"] == 1


def test_wordle_programmatic_guesser_plays_only_consistent_words(games, tmp_path):
    experiment, instance = wordle_instance(games, "plant")
    scores = play(games["wordle"], experiment, instance, [CustomResponseModel()], tmp_path)
    assert scores["episode scores"]["Aborted"] == 0
    interactions = json.loads(next(tmp_path.rglob("interactions.json")).read_text())
    history = []
    assert interactions["invalid_words"] == []
    for note in interactions["guesses"]:
        assert note["guess"] in consistent_words(history)
        history.append((note["guess"], note["feedback"]))


# taboo


def taboo_instance(games) -> tuple[dict, dict]:
    experiment, instance = first_instance(games["taboo"])
    return experiment, {**instance, "target_word": "umbrella", "taboo_words": ["rain", "wet", "open"]}


def test_taboo_guess_on_second_try_wins_half_score(games, tmp_path):
    describer = ScriptedModel(
        "describer", ["CLUE: You hold it over your head in a storm.", "CLUE: A folding canopy on a stick."]
    )
    guesser = ScriptedModel("guesser", ["GUESS: hat", "Guess: Umbrella."])
    scores = play(games["taboo"], *taboo_instance(games), [describer, guesser], tmp_path)
    assert outcome(scores) == (0, 1, 0)
    assert scores["episode scores"]["Main Score"] == pytest.approx(50)
    assert (
        scores["round scores"]["0"]["Correct Guess"] == 0
        and scores["round scores"]["1"]["Correct Guess"] == 1
    )


def test_taboo_three_wrong_guesses_lose(games, tmp_path):
    describer = ScriptedModel("describer", ["CLUE: You hold it over your head."] * 3)
    guesser = ScriptedModel("guesser", ["GUESS: hat", "GUESS: cap", "GUESS: helmet"])
    scores = play(games["taboo"], *taboo_instance(games), [describer, guesser], tmp_path)
    assert outcome(scores) == (0, 0, 1)
    assert scores["episode scores"]["Main Score"] == 0


@pytest.mark.parametrize(
    "clue",
    ["CLUE: It keeps you dry when it is raining.", "CLUE: not quite an umbrella", "CLUE: the umbr- thing"],
)
def test_taboo_clue_with_a_forbidden_word_or_its_form_aborts(games, tmp_path, clue):
    describer = ScriptedModel("describer", [clue])
    guesser = ScriptedModel("guesser", [])  # never asked: the game ends at the clue
    scores = play(games["taboo"], *taboo_instance(games), [describer, guesser], tmp_path)
    assert outcome(scores) == (1, 0, 0)
    assert math.isnan(scores["episode scores"]["Main Score"])


def test_taboo_guess_of_several_words_aborts(games, tmp_path):
    describer = ScriptedModel("describer", ["CLUE: You hold it over your head in a storm."])
    guesser = ScriptedModel("guesser", ["GUESS: an umbrella"])
    scores = play(games["taboo"], *taboo_instance(games), [describer, guesser], tmp_path)
    assert outcome(scores) == (1, 0, 0)


def test_taboo_programmatic_players_win_every_built_in_card(games):
    from playprm.games.builtin.taboo.master import TabooDescriber, TabooGuesser, card_vocabulary

    for _experiment, instance in load_instances(games["taboo"]):
        describer = TabooDescriber(CustomResponseModel(), instance["target_word"])
        guesser = TabooGuesser(CustomResponseModel(), card_vocabulary())
        guesses = []
        for _ in range(instance["max_turns"]):
            clue = describer._custom_response({"role": "user", "content": ""})
            guesses.append(parse_tagged(guesser._custom_response({"role": "user", "content": clue}), "GUESS"))
            if guesses[-1] == instance["target_word"]:
                break
        assert guesses[-1] == instance["target_word"]


# referencegame


def reference_instance(games, experiment_name: str = "letter_grids") -> tuple[dict, dict]:
    return first_instance(games["referencegame"], experiment_name)


def test_referencegame_answer_naming_the_target_in_guesser_order_wins(games, tmp_path):
    experiment, instance = reference_instance(games)
    describer = ScriptedModel("describer", ["EXPRESSION: the one that looks like a letter"])
    guesser = ScriptedModel("guesser", [f"ANSWER: The {instance['guesser_target'].upper()} grid."])
    scores = play(games["referencegame"], experiment, instance, [describer, guesser], tmp_path)
    assert outcome(scores) == (0, 1, 0)
    assert scores["episode scores"]["Main Score"] == 100
    assert scores["round scores"]["0"]["Success"] == 1


def test_referencegame_wrong_answer_loses(games, tmp_path):
    experiment, instance = reference_instance(games)
    wrong = next(label for label in ("first", "second", "third") if label != instance["guesser_target"])
    describer = ScriptedModel("describer", ["EXPRESSION: the one that looks like a letter"])
    guesser = ScriptedModel("guesser", [f"ANSWER: {wrong}"])
    scores = play(games["referencegame"], experiment, instance, [describer, guesser], tmp_path)
    assert outcome(scores) == (0, 0, 1)
    assert scores["episode scores"]["Main Score"] == 0


@pytest.mark.parametrize(
    "describer_reply,guesser_reply",
    [
        ("It looks like a letter.", "ANSWER: first"),  # no EXPRESSION: line
        ("EXPRESSION: the letter one", "ANSWER: fourth"),  # no grid named
        ("EXPRESSION: the letter one", "ANSWER: first or second"),  # two grids named
    ],
)
def test_referencegame_broken_format_aborts(games, tmp_path, describer_reply, guesser_reply):
    experiment, instance = reference_instance(games)
    describer = ScriptedModel("describer", [describer_reply])
    guesser = ScriptedModel("guesser", [guesser_reply])
    scores = play(games["referencegame"], experiment, instance, [describer, guesser], tmp_path)
    assert outcome(scores) == (1, 0, 0)
    assert math.isnan(scores["episode scores"]["Main Score"])


def test_referencegame_instances_shuffle_the_grids_for_the_guesser(games):
    pairs = load_instances(games["referencegame"])
    labels = ("first", "second", "third")
    for _experiment, instance in pairs:
        target = instance["describer_grids"][labels.index(instance["describer_target"])]
        assert instance["guesser_grids"][labels.index(instance["guesser_target"])] == target
        assert sorted(instance["guesser_grids"]) == sorted(instance["describer_grids"])
        assert len(set(instance["describer_grids"])) == 3
    assert any(i["guesser_grids"] != i["describer_grids"] for _e, i in pairs)


def test_referencegame_programmatic_pair_wins(games, tmp_path):
    experiment, instance = reference_instance(games, "random_grids")
    scores = play(games["referencegame"], experiment, instance, [CustomResponseModel()], tmp_path)
    assert outcome(scores) == (0, 1, 0)


# arithmetic (static)


def test_arithmetic_scores_an_exact_answer_100_and_anything_else_0_without_aborting(games, tmp_path):
    experiment, instance = first_instance(games["arithmetic"], "multiplication")
    answer = instance["answer"]
    assert answer == str(instance["left"] * instance["right"])
    for k, (reply, won) in enumerate([(answer, True), (f"{answer}.", False), (f"The answer is {answer}", False)]):
        scores = play(games["arithmetic"], experiment, instance, [ScriptedModel("s", [reply])], tmp_path / str(k))
        assert outcome(scores) == ((0, 1, 0) if won else (0, 0, 1)), reply
        assert scores["episode scores"]["Main Score"] == (100 if won else 0)
        assert scores["episode scores"]["Request Count"] == 1  # one question, one reply


def test_arithmetic_programmatic_solver_wins(games, tmp_path):
    experiment, instance = first_instance(games["arithmetic"], "addition")
    assert outcome(play(games["arithmetic"], experiment, instance, [CustomResponseModel()], tmp_path)) == (0, 1, 0)


# all games


def test_every_game_ships_two_experiments_of_about_ten_instances(games):
    for name in ("wordle", "taboo", "referencegame"):
        pairs = load_instances(games[name])
        experiments = {experiment["name"] for experiment, _ in pairs}
        assert len(experiments) == 2 and len(pairs) == 20, name
        assert len({instance["game_id"] for _, instance in pairs}) == 20, name


@pytest.mark.parametrize("name", ["wordle", "taboo", "referencegame", "arithmetic"])
def test_instance_generators_reproduce_the_committed_instances(games, tmp_path, name, monkeypatch):
    import importlib.util

    module_path = games[name].path / "instancegenerator.py"
    spec = importlib.util.spec_from_file_location(f"{name}_instancegenerator", module_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    generator_class = next(
        v for v in vars(module).values() if isinstance(v, type) and v.__module__ == module.__name__
    )
    generator = generator_class()
    generator.game_path = str(
        tmp_path
    )  # write the copy elsewhere; resources are read from the module's folder
    generator.generate(seed=generator_class.SEED)
    regenerated = json.loads((tmp_path / "in" / "instances.json").read_text(encoding="utf-8"))
    committed = json.loads((games[name].path / "in" / "instances.json").read_text(encoding="utf-8"))
    assert regenerated == committed


def test_lenient_tags_tolerate_case_markdown_and_reasoning_but_not_repeats():
    reply = "<think>GUESS: wrong</think>\n**Guess:** crane\nexplanation: fine"
    assert tagged_values(reply, "GUESS") == ["crane"]
    assert parse_tagged("  - GUESS :  plant  ", "GUESS") == "plant"
    with pytest.raises(ParseError):
        parse_tagged("GUESS: crane\nGUESS: plant", "GUESS")
    with pytest.raises(ParseError):
        parse_tagged("GUESS:\ncrane", "GUESS")


def test_wordle_rescores_an_episode_recorded_before_it_re_prompted():
    """Results written when an unknown word cost a guess (no ``invalid_words``) still score: the guesses noted
    invalid are the refused ones, and the Main Score counts every guess used, as it did then."""
    from clemcore.clemgame.metrics import BENCH_SCORE, METRIC_SUCCESS

    from playprm.games.builtin.wordle.master import WordleScorer

    scorer = WordleScorer("wordle", {"name": "e"}, {"game_id": 0, "target_word": "crane", "max_guesses": 6})
    old = {METRIC_SUCCESS: True, "guesses": [{"attempt": 1, "guess": "xxxxx", "feedback": None, "valid": False},
                                            {"attempt": 2, "guess": "crane", "feedback": "GGGGG", "valid": True}]}
    scores = scorer.episode_scores(old)
    assert scores["Invalid Guesses"] == 1 and scores["Guesses Used"] == 2
    assert scores[BENCH_SCORE] == pytest.approx(100 * 5 / 6)
