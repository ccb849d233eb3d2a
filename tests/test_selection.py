"""Which best-of-n candidate is played: the card's argmax, greedy-anchored with a switch margin, weighted pools;
never a reply the game already rejected; identical candidates scored once; the margin train-prm measures."""

from __future__ import annotations

import json
import random

import pytest
from clemcore.clemgame import DialogueGameMaster, GameScorer, GameSpec, Player

from playprm.episode import Episode, EpisodeTask
from playprm.models.base import Candidate, PolicySpec
from playprm.play.config import default_search_settings
from playprm.play.wiring import guide_filter, turn_player
from playprm.prm import switch_margin
from playprm.prm.scorer import ScoreStats
from playprm.search import best_of_n
from playprm.search.base import SearchSettings
from playprm.search.scorers import score_by_text
from playprm.search.selection import repeats, select

CONTEXT = [{"role": "user", "content": "Say a word."}]


class ListPolicy:
    """Scripted candidates: the greedy reply at temperature 0, else the first n of ``samples``."""

    def __init__(self, greedy: str, samples: list[str]):
        self.spec = PolicySpec(name="list", backend="scripted", model_id="scripted:list")
        self.greedy, self.samples = greedy, samples

    def generate(self, contexts, *, n=1, temperature=0.0, max_tokens=256, seed=None, prefixes=None):
        texts = [self.greedy] * n if temperature <= 0 else self.samples[:n]
        return [[Candidate(text=t, num_tokens=len(t), logprob=-1.0) for t in texts] for _ in contexts]


class TableScorer:
    """A PRM with a fixed score per reply text; records the texts it was asked to score and charges a token each."""

    def __init__(self, table: dict[str, float]):
        self.table = table
        self.stats = ScoreStats()
        self.seen: list[list[str]] = []

    def score_candidates(self, contexts, candidates):
        return score_by_text(self.score_texts, contexts, candidates)  # as the PRM: identical texts once

    def score_texts(self, contexts, texts):
        self.seen += [list(group) for group in texts]
        self.stats.candidate_tokens += sum(len(group) for group in texts)
        return [[self.table[text] for text in group] for group in texts]


def settings(**values) -> SearchSettings:
    return default_search_settings(**{"n_candidates": 4, "temperature": 1.0, "max_tokens": 8, **values})


def test_anchored_best_of_n_keeps_greedy_within_margin():
    texts, scores = ["greedy", "a", "b"], [0.50, 0.58, 0.55]
    assert select(scores, texts, selection="anchored", greedy=0, margin=0.1) == 0
    assert select(scores, texts, selection="anchored", greedy=0, margin=0.05) == 1  # beats greedy by 0.08
    assert select([0.5, 0.6], ["greedy", "a"], selection="anchored", greedy=0, margin=0.1) == 0  # not *more*


def test_anchored_margin_zero_is_the_argmax_over_a_set_that_holds_greedy():
    for seed in range(50):
        rng = random.Random(seed)
        scores = [rng.choice([0.1, 0.4, 0.7]) for _ in range(5)]
        texts = [f"reply {i}" for i in range(5)]
        assert select(scores, texts, selection="anchored", greedy=0, margin=0.0) == \
            select(scores, texts, selection="argmax")


def test_the_greedy_reply_is_candidate_zero_and_a_margin_suppresses_switching():
    policy = ListPolicy("GREEDY", ["s1", "s2", "s3", "s4"])
    scorer = TableScorer({"GREEDY": 0.4, "s1": 0.45, "s2": 0.9, "s3": 0.2, "s4": 0.1})
    (switching,) = best_of_n.choose([CONTEXT], policy, scorer, settings(selection="anchored", switch_margin=0.1))
    assert [c.text for c in switching.candidates] == ["GREEDY", "s1", "s2", "s3"]  # greedy + N - 1 samples
    assert (switching.greedy, switching.text, switching.switched) == (0, "s2", True)
    (kept,) = best_of_n.choose([CONTEXT], policy, scorer, settings(selection="anchored", switch_margin=0.6))
    assert (kept.text, kept.switched, kept.margin) == ("GREEDY", False, 0.6)
    record = kept.log("best-of-n")
    assert {key: record[key] for key in ("selection", "greedy", "margin", "switched", "rejected")} == {
        "selection": "anchored", "greedy": 0, "margin": 0.6, "switched": False, "rejected": []}
    (card,) = best_of_n.choose([CONTEXT], policy, scorer, settings())  # the card's argmax: N samples, no greedy
    assert [c.text for c in card.candidates] == ["s1", "s2", "s3", "s4"] and card.greedy is None
    assert card.log("best-of-n")["switched"] is None


def test_weighted_selection_pools_the_scores_of_identical_moves():
    texts = ["GUESS: crane", "GUESS: slate ", "GUESS: slate", " GUESS: slate"]
    scores = [0.9, 0.4, 0.35, 0.3]
    assert select(scores, texts, selection="argmax") == 0
    assert select(scores, texts, selection="weighted") == 1  # 1.05 pooled beats 0.9; its best-scored member
    assert select([0.9, 0.4, 0.3], ["a", "b", "b"], selection="weighted") == 0  # 0.7 pooled does not


def test_a_rejected_reply_is_not_chosen_while_another_candidate_exists():
    texts, scores = ["wrong", "wrong ", "right"], [0.9, 0.8, 0.1]
    assert repeats(texts, ["wrong"]) == [0, 1]
    for selection in ("argmax", "weighted"):
        assert select(scores, texts, selection=selection, rejected=["wrong"]) == 2
    assert select(scores, texts, selection="anchored", greedy=0, margin=0.5, rejected=["wrong"]) == 2
    assert select(scores, ["wrong", "wrong"], selection="argmax", rejected=["wrong"]) == 0  # nothing else to play


def test_identical_candidates_are_scored_once_and_charged_once():
    policy = ListPolicy("x", ["same", "same", "other", "same"])
    scorer = TableScorer({"same": 0.3, "other": 0.6})
    (choice,) = best_of_n.choose([CONTEXT], policy, scorer, settings())
    assert scorer.seen == [["same", "other"]]
    assert choice.scores == [0.3, 0.3, 0.6, 0.3] and choice.text == "other"
    assert choice.prm_tokens == 2


class Asker(Player):
    def _custom_response(self, context):
        return "right"


class RepromptingGame(DialogueGameMaster):
    """Say the allowed word: a reply that is not allowed is refused and the player is asked again in the same
    round (as clembench's wordle re-prompts an invalid guess), three refusals abort."""

    def _on_setup(self, **instance):
        self.allowed = instance["allowed"]
        self.refusals = 0
        self.accepted = False
        self.player = Asker(self.player_models[0])
        self.add_player(self.player, initial_context="Say the allowed word.")

    def _parse_response(self, player, response):
        return response

    def _advance_game(self, player, reply):
        if reply.strip() in self.allowed:
            self.accepted = True
            self.state.succeed()
            return
        self.refusals += 1
        if self.refusals >= 3:
            self.aborted = True
            self.state.abort()
            return
        self.set_context_for(player, "That word is not allowed. Try again.")

    def _on_after_game(self):  # the flags clemcore's scorer reads when the episode is written
        self.log_key("Aborted", int(getattr(self, "aborted", False)))
        self.log_key("Success", int(self.accepted))
        self.log_key("Lose", 0)

    def _should_pass_turn(self):
        return self.accepted

    def _start_next_round(self):
        return self.accepted


class RepromptingBenchmark:
    """What ``Episode`` asks of a clemcore GameBenchmark, for the game above."""

    def __init__(self):
        self.game_spec = GameSpec.from_dict({"game_name": "reprompt", "game_path": ".", "players": 1,
                                             "description": "re-prompts refused replies"})

    def create_game_master(self, experiment, player_models):
        return RepromptingGame(self.game_spec, experiment, player_models)

    def create_game_scorer(self, experiment, instance):
        return GameScorer("reprompt", experiment, instance)


def play_reprompting(tmp_path, policy, scorer, search: SearchSettings) -> Episode:
    task = EpisodeTask(game="reprompt", benchmark=RepromptingBenchmark(), experiment={"name": "e"},
                       instance={"game_id": 0, "allowed": ["right"]}, episode_dir=tmp_path / "instance_00000")
    episode = Episode.start(task, "scripted", "scripted--scripted", {})
    choose = turn_player("best-of-n", policy, scorer, search, guide_filter(None))
    while not episode.done:
        choose([episode])
    return episode


@pytest.mark.parametrize("selection", ["argmax", "anchored", "weighted"])
def test_best_of_n_never_repeats_a_reply_the_game_rejected(tmp_path, selection):
    # the PRM prefers the refused word; after the game refuses it once, the other candidate is played
    policy = ListPolicy("wrong", ["wrong", "right", "wrong", "wrong"])
    scorer = TableScorer({"wrong": 0.9, "right": 0.1})
    episode = play_reprompting(tmp_path, policy, scorer, settings(selection=selection, switch_margin=0.0))
    assert episode.error is None and episode.outcome == "success"
    assert episode.rejected == {"Player 1": ["wrong"]}
    first, second = episode.candidates
    assert first["candidates"][first["chosen"]]["text"] == "wrong" and first["rejected"] == []
    assert second["round"] == first["round"]  # asked again in the same round
    texts = [c["text"] for c in second["candidates"]]
    assert second["rejected"] == [i for i, t in enumerate(texts) if t == "wrong"]
    assert texts[second["chosen"]] == "right"
    assert second["selection"] == selection


def test_a_plain_turn_records_the_rejected_replies_it_repeats(tmp_path):
    task = EpisodeTask(game="reprompt", benchmark=RepromptingBenchmark(), experiment={"name": "e"},
                       instance={"game_id": 0, "allowed": ["right"]}, episode_dir=tmp_path / "instance_00000")
    episode = Episode.start(task, "scripted", "scripted--scripted", {})
    choose = turn_player("greedy", ListPolicy("wrong", []), None, settings(temperature=0.0), guide_filter(None))
    while not episode.done:
        choose([episode])
    assert episode.outcome == "aborted"  # greedy repeats the refused word until the game gives up
    assert [row["rejected"] for row in episode.candidates] == [[], [0], [0]]
    assert all(row["greedy"] == 0 and row["switched"] is False for row in episode.candidates)


def test_the_auto_margin_grows_with_n_and_comes_from_not_better_siblings(tmp_path):
    rng = random.Random(0)
    records, scores = [], []
    for context in range(200):
        messages = [{"role": "user", "content": f"context {context}"}]
        for reply in range(4):  # four different replies of equal label: noise alone
            records.append({"messages": messages, "response": f"reply {reply}", "label": 0.5,
                            "meta": {"game": "g", "experiment": "e", "game_id": context, "player": "Player 1"}})
            scores.append(rng.gauss(0.5, 0.1))
    differences, contexts = switch_margin.null_differences(records, scores)
    assert contexts == 200 and len(differences) == 200 * 4 * 3
    written = switch_margin.write(tmp_path, records, scores)
    assert json.loads((tmp_path / switch_margin.SWITCH_MARGIN_FILE).read_text())["differences"] == 2400
    margins = [switch_margin.margin_for(tmp_path, n) for n in (2, 4, 8, 16)]
    assert margins == sorted(margins) and margins[0] > 0
    # N = 2: a not-better alternative beats greedy by more than the margin in 10% of contexts
    assert sum(d > margins[0] for d in differences) / len(differences) == pytest.approx(0.1, abs=0.01)
    assert written["margins"]["16"] == pytest.approx(margins[3], abs=1e-6)
    # a better alternative (higher label) is no null difference
    better = [{**r, "label": 1.0 if r["response"] == "reply 0" else 0.0} for r in records]
    differences, _ = switch_margin.null_differences(better, scores)
    assert len(differences) == 200 * (3 + 3 * 2)  # reply 0 over the others (3), the others among themselves (6)


def test_eval_anchored_writes_the_greedy_candidate_margin_and_switch_of_every_turn(card_models, tmp_path):
    from playprm.play.config import EvalConfig
    from playprm.play.wiring import run_eval

    cfg = EvalConfig(policy_model=str(card_models["policy"]), mode="best-of-n", prm_path=card_models["prm"],
                     games=["referencegame"], limit=1, max_tokens=8, n_candidates=3, selection="anchored",
                     switch_margin="0.05", results_dir=tmp_path)
    run_dir, summary = run_eval(cfg, progress=False)
    assert run_dir.name.endswith("-bon3-anchored0.05")
    meta = json.loads((run_dir / "playprm_run.json").read_text())
    assert (meta["selection"], meta["switch_margin"], meta["switch_margin_rule"]) == ("anchored", 0.05, "given")
    rows = [json.loads(line) for path in run_dir.rglob("candidates.jsonl") for line in path.read_text().splitlines()]
    assert rows and sum(summary.played.values()) == 2
    for row in rows:
        assert (row["selection"], row["greedy"], row["margin"]) == ("anchored", 0, 0.05)
        chosen, greedy = row["candidates"][row["chosen"]], row["candidates"][0]
        assert row["switched"] == (chosen["text"] != greedy["text"])
        assert row["switched"] is False or chosen["score"] > greedy["score"] + 0.05
        assert row["rejected"] == []


def test_a_switch_margin_given_in_python_is_checked_as_on_the_command_line():
    from playprm.errors import UsageError
    from playprm.play.config import EvalConfig, SwitchMargin

    def config(**values):
        return EvalConfig(policy_model="p", mode="best-of-n", scorer="logprob", games=["wordle"],
                          selection="anchored", **values)

    assert config(switch_margin=0).validate().margin == SwitchMargin(0.0, "given")
    assert config().validate().margin == SwitchMargin(0.0, "given")  # no PRM to measure a margin on: 0 unless given
    assert config(switch_margin="0.25").validate().search_settings().switch_margin == 0.25
    assert config(switch_margin="0.25").switch_margin == "0.25"  # as given: validate() resolves it into margin
    with pytest.raises(UsageError, match="must be >= 0"):
        config(switch_margin=-0.5).validate()


def test_the_cards_selection_keeps_the_fingerprint_and_folder_of_runs_made_before_selections_existed():
    from playprm.play.config import EvalConfig

    def config(**values):
        return EvalConfig(policy_model="p", mode="best-of-n", scorer="logprob", games=["wordle"], **values).validate()

    card = config()
    assert card.mode_tag() == "t0.7-bon4-logprob"
    assert "selection" not in card.decoding() and "switch_margin" not in card.decoding()
    anchored, weighted = config(selection="anchored", switch_margin=0.05), config(selection="weighted")
    assert anchored.mode_tag() == "t0.7-bon4-logprob-anchored0.05" and weighted.mode_tag() == "t0.7-bon4-logprob-weighted"
    assert anchored.decoding()["switch_margin"] == 0.05 and weighted.decoding()["selection"] == "weighted"


def test_the_turn_account_shows_the_guard_keeping_a_refused_reply_out_and_greedy_repeating_it(tmp_path):
    from playprm.report.guided_turns import guided_turns

    policy = ListPolicy("wrong", ["wrong", "right", "wrong", "wrong"])
    scorer = TableScorer({"wrong": 0.9, "right": 0.1})
    guided = play_reprompting(tmp_path / "guided" / "m" / "reprompt" / "e", policy, scorer,
                              settings(selection="anchored", switch_margin=0.0))
    guided.write()
    task = EpisodeTask(game="reprompt", benchmark=RepromptingBenchmark(), experiment={"name": "e"},
                       instance={"game_id": 0, "allowed": ["right"]},
                       episode_dir=tmp_path / "greedy" / "m" / "reprompt" / "e" / "instance_00000")
    plain = Episode.start(task, "scripted", "scripted--scripted", {})
    choose = turn_player("greedy", ListPolicy("wrong", []), None, settings(temperature=0.0), guide_filter(None))
    while not plain.done:
        choose([plain])
    plain.write()
    (guard,) = guided_turns(tmp_path / "guided").values()
    (repeat,) = guided_turns(tmp_path / "greedy").values()
    assert (guard.reprompts, guard.repeats, guard.aborted) == (1, 0, 0)  # refused once, never replayed
    assert (guard.logged_rejected, guard.chosen_rejected, guard.switched) == (1, 0, 1)
    assert (repeat.repeats, repeat.aborted_after_repeat) == (2, 1)  # greedy replays it until the game aborts


UNKNOWN_WORD = "GUESS: xqzvt\nEXPLANATION: It looks like a word."  # five letters, not in wordle's list


class UnknownWordPolicy:
    """A wordle guesser whose greedy reply is always a five-letter word the game does not know; a sample is that
    word or the expert's move, in turn (so best-of-N candidates hold both)."""

    def __init__(self):
        self.spec = PolicySpec(name="unknown-word", backend="scripted", model_id="scripted:unknown-word")

    def generate(self, contexts, *, n=1, temperature=0.0, max_tokens=256, seed=None, prefixes=None):
        from playprm.games.builtin.expert import expert_move

        return [[Candidate(text=t, num_tokens=len(t.split()), logprob=-1.0)
                 for t in ([UNKNOWN_WORD] * n if temperature <= 0 else
                           [UNKNOWN_WORD if k % 2 == 0 else expert_move(context) for k in range(n)])]
                for context in contexts]


class PrefersUnknownWord:
    """0.9 for the unknown word, 0.1 for any other reply."""

    def __init__(self):
        self.stats = ScoreStats()

    def score_candidates(self, contexts, candidates):
        return [[0.9 if c.text == UNKNOWN_WORD else 0.1 for c in group] for group in candidates]


def test_on_builtin_wordle_greedy_repeats_a_refused_word_until_it_aborts_and_the_guard_plays_on(tmp_path):
    from playprm.cli import main
    from playprm.play.config import EvalConfig
    from playprm.play.wiring import run_eval

    # the scorer, like a PRM that liked the word before the game refused it, prefers the unknown word throughout
    scorer = PrefersUnknownWord()
    common = {"policy_model": "scripted:unknown-word", "games": ["wordle"], "limit": 1, "max_tokens": 16}
    run_eval(EvalConfig(mode="greedy", results_dir=tmp_path / "greedy", **common),
             policy=UnknownWordPolicy(), progress=False)
    # --scorer logprob only passes validation and names the folder: the scorer given replaces it
    run_eval(EvalConfig(mode="best-of-n", scorer="logprob", n_candidates=3, selection="anchored", switch_margin=0,
                        results_dir=tmp_path / "guarded", **common),
             policy=UnknownWordPolicy(), scorer=scorer, progress=False)
    out = tmp_path / "report"
    assert main(["report", "--compare", str(tmp_path / "greedy"), str(tmp_path / "guarded"),
                 "--paired", "guarded", "greedy", "--resamples", "20", "--out", str(out)]) == 0
    rows = {row["run"]: row for row in json.loads((out / "turns.json").read_text())}
    greedy, guarded = rows["greedy"], rows["guarded"]
    # two episodes (one per experiment): greedy sends the refused word six times in round one, then wordle aborts
    assert (greedy["episodes"], greedy["aborted"], greedy["reprompts"]) == (2, 2, 10)
    assert (greedy["repeats"], greedy["aborted_after_repeat"]) == (10, 2)
    # the guard lets it be refused once per episode, then plays the other candidate to the end of the game
    assert (guarded["episodes"], guarded["aborted"], guarded["reprompts"], guarded["repeats"]) == (2, 0, 2, 0)
    assert guarded["chosen_rejected"] == 0 and guarded["logged_rejected"] == guarded["guided_turns"] - 2
    turns_md = (out / "turns.md").read_text()
    assert "| greedy | wordle | 2 | 2 | 10 | 10 | 2 |" in turns_md
    assert "| guarded | wordle | 2 | 0 | 2 | 0 | 0 |" in turns_md


def test_auto_margin_from_fewer_contexts_than_the_minimum_plays_greedy_and_says_why(tmp_path, caplog):
    # the smol preset's case: its PRM's validation held 8 contexts with different replies, and a margin measured
    # there switched on a third of held-out turns and lost
    rng = random.Random(0)
    records, scores = [], []
    for context in range(8):
        for reply in range(3):
            records.append({"messages": [{"role": "user", "content": f"context {context}"}],
                            "response": f"reply {reply}", "label": 0.5,
                            "meta": {"game": "g", "experiment": "e", "game_id": context, "player": "Player 1"}})
            scores.append(rng.gauss(0.5, 0.001))
    written = switch_margin.write(tmp_path, records, scores)
    assert written["contexts"] == 8 < switch_margin.MIN_CONTEXTS and written["margins"]["4"] < 0.01
    with caplog.at_level("WARNING", logger="playprm.prm.switch_margin"):
        margin, rule = switch_margin.auto_margin(tmp_path, 4)  # what eval --switch-margin auto runs with
    assert margin == switch_margin.GREEDY_MARGIN
    assert rule.startswith("auto: greedy") and "8 validation context(s)" in rule  # run metadata: switch_margin_rule
    assert "plays greedy" in caplog.text and "fewer than 30" in caplog.text
    # with it, even a sample that scores 1 against a greedy reply scoring 0 is not played
    policy, scorer = ListPolicy("GREEDY", ["s1", "s2", "s3"]), TableScorer({"GREEDY": 0.0, "s1": 1.0, "s2": 0.5,
                                                                             "s3": 0.2})
    (choice,) = best_of_n.choose([CONTEXT], policy, scorer, settings(selection="anchored", switch_margin=margin))
    assert (choice.text, choice.switched) == ("GREEDY", False)
