"""Reading clemcore results of both generations: episodes, outcomes, players, perspectives, skips."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

from playprm.results import iter_episodes, scan_results

LLAMA = "Llama-3.3-70B-Instruct-t0.0--Llama-3.3-70B-Instruct-t0.0"
META_LLAMA = "Meta-Llama-3.1-8B-Instruct-t0.0--Meta-Llama-3.1-8B-Instruct-t0.0"


def event(sender: str, receiver: str, kind: str, content: str, label: str | None = None) -> dict:
    action = {"type": kind, "content": content}
    if label:
        action["label"] = label
    return {"from": sender, "to": receiver, "timestamp": "2025-01-01T00:00:00", "action": action}


def write_clemcore_episode(folder: Path, *, turns: list, game_id=7, scores: dict | None = None,
                           extra: dict | None = None) -> Path:
    """A clemcore 3.7.2 episode folder: meta block, players as dicts, instance.json, completed.json."""
    folder.mkdir(parents=True)
    interactions = {
        "meta": {"game_name": "wordle", "experiment_name": "high_frequency", "game_id": game_id,
                 "results_folder": "tiny--programmatic", "clem_version": "3.7.2", "round_count": len(turns),
                 "completed": True},
        "players": {"GM": {"game_role": "Game Master", "model_name": "programmatic"},
                    "Player 1": {"game_role": "Guesser", "model_name": "tiny-policy"},
                    "Player 2": {"game_role": "Evaluator", "model_name": "programmatic"}},
        "turns": turns,
        **(extra or {}),
    }
    (folder / "interactions.json").write_text(json.dumps(interactions))
    (folder / "instance.json").write_text(json.dumps({"game_id": game_id, "target_word": "house"}))
    (folder / "completed.json").write_text(json.dumps({"timestamp": "2025-01-01T00:00:00"}))
    if scores is not None:
        (folder / "scores.json").write_text(json.dumps(scores))
    return folder


def outcome_from_scores_file(path: Path) -> str:
    scores = json.loads(path.read_text())["episode scores"]
    return next(name for key, name in (("Aborted", "aborted"), ("Success", "success"), ("Lose", "lose"))
                if scores.get(key) == 1)


def test_every_sample_episode_is_read_with_the_outcome_its_scores_file_gives(shared_sample):
    episodes = list(iter_episodes(shared_sample))
    expected = {path.parent: outcome_from_scores_file(path)
                for path in shared_sample.glob("*/*/*/episode_*/scores.json")}
    assert {episode.path: episode.outcome for episode in episodes} == expected
    assert Counter(expected.values()) == {"success": 7, "lose": 23, "aborted": 8}  # the MANIFEST's totals


def test_aborted_episode_with_nan_scores_is_aborted(shared_sample):
    folder = shared_sample / LLAMA / "imagegame" / "0_compact_grids" / "episode_19"
    episode = next(e for e in iter_episodes(shared_sample / LLAMA / "imagegame") if e.path == folder)
    assert episode.outcome == "aborted"


def test_old_records_without_instance_file_use_the_episode_folder_as_game_id(shared_sample):
    episode = next(iter(iter_episodes(shared_sample / LLAMA / "referencegame")))
    assert (episode.game, episode.experiment, episode.episode) == ("referencegame", "0_letter_grids", "episode_0")
    assert episode.game_id == "episode_0"
    assert episode.game_id_source == "episode folder"
    assert episode.model == LLAMA


def test_player_underscore_keys_are_named_as_the_events_name_them(shared_sample):
    episode = next(iter(iter_episodes(shared_sample / META_LLAMA / "referencegame")))
    players = episode.llm_players()
    assert [player.name for player in players] == ["Player 1", "Player 2"]
    assert {player.model_name for player in players} == {"Meta-Llama-3.1-8B-Instruct"}
    assert all(episode.llm_turns(player.name) for player in players)


def test_programmatic_partners_are_not_llm_players(shared_sample):
    wordle = next(iter(iter_episodes(shared_sample / LLAMA / "wordle")))
    privateshared = next(iter(iter_episodes(shared_sample / LLAMA / "privateshared")))
    assert [(p.name, p.game_role, p.model_name) for p in wordle.llm_players()] == [
        ("Player 1", "Word Guesser", "Llama-3.3-70B-Instruct")]
    assert [(p.name, p.game_role) for p in privateshared.llm_players()] == [("Player 1", "Answerer")]


def test_dialogue_alternates_from_the_user_and_turn_contexts_are_its_prefixes(shared_sample):
    for episode in iter_episodes(shared_sample):
        for player in episode.llm_players():
            dialogue = episode.dialogue(player.name)
            turns = episode.llm_turns(player.name)
            replies = sum(1 for round_events in episode.interactions["turns"] for e in round_events
                          if e["from"] == player.name and e["action"]["type"] == "get message")
            assert [m["role"] for m in dialogue] == ["user", "assistant"] * (len(dialogue) // 2) + \
                ["user"] * (len(dialogue) % 2)
            assert len(turns) == replies
            for turn in turns:
                assert turn.context == dialogue[: 2 * turn.index + 1]
                assert turn.response == dialogue[2 * turn.index + 1]["content"]


def test_clemcore_episode_reads_meta_instance_and_scores(tmp_path):
    scores = {"turn scores": {}, "episode scores": {"Aborted": 0, "Lose": 1, "Success": 0}}
    write_clemcore_episode(tmp_path / "tiny--programmatic" / "wordle" / "high_frequency" / "instance_00000",
                           turns=[[event("GM", "Player 1", "send message", "go"),
                                   event("Player 1", "GM", "get message", "guess: house")]], scores=scores)
    (episode,) = iter_episodes(tmp_path)
    assert (episode.model, episode.game, episode.experiment, episode.episode) == (
        "tiny--programmatic", "wordle", "high_frequency", "instance_00000")
    assert (episode.game_id, episode.game_id_source) == (7, "interactions meta")
    assert episode.instance == {"game_id": 7, "target_word": "house"}
    assert episode.outcome == "lose"
    assert [p.name for p in episode.llm_players()] == ["Player 1"]
    assert episode.model_dir == (tmp_path / "tiny--programmatic").resolve()


def test_initial_prompt_and_first_context_merge_with_a_blank_line(tmp_path):
    turns = [[event("GM", "Player 1", "send message", "You play wordle."),
              event("GM", "Player 1", "send message", "Your first guess?"),
              event("GM", "GM", "metadata", "target = house"),
              event("Player 1", "GM", "get message", "guess: house")]]
    write_clemcore_episode(tmp_path / "m" / "wordle" / "e" / "instance_00000", turns=turns)
    (episode,) = iter_episodes(tmp_path)
    assert episode.dialogue("Player 1") == [
        {"role": "user", "content": "You play wordle.\n\nYour first guess?"},
        {"role": "assistant", "content": "guess: house"}]


def test_a_forgotten_context_is_seen_by_one_reply_only(tmp_path):
    turns = [[event("GM", "Player 1", "send message", "rules", "context"),
              event("Player 1", "GM", "get message", "ok", "response")],
             [event("GM", "Player 1", "send message", "probe: sure?", "forget"),
              event("Player 1", "GM", "get message", "yes", "forget")],
             [event("GM", "Player 1", "send message", "next", "context"),
              event("Player 1", "GM", "get message", "guess: house", "response")]]
    write_clemcore_episode(tmp_path / "m" / "wordle" / "e" / "instance_00000", turns=turns)
    (episode,) = iter_episodes(tmp_path)
    first, probe, last = episode.llm_turns("Player 1")
    assert probe.context[-1] == {"role": "user", "content": "probe: sure?"}
    assert (probe.index, probe.round) == (1, 1)
    assert [m["content"] for m in last.context] == ["rules", "ok", "next"]


def test_outcome_comes_from_scores_only_and_never_calls_a_contradiction_a_win(tmp_path):
    folders = {  # name: (scores.json episode scores or None, flags in interactions.json)
        "unscored_but_flagged_a_win": (None, {"Success": True, "Aborted": False, "Lose": False}),
        "won": ({"Success": 1, "Lose": 0, "Aborted": 0, "Main Score": 100}, {}),
        "lost": ({"Success": 0, "Lose": 1, "Aborted": 0, "Main Score": 0}, {}),
        "aborted": ({"Success": 1, "Lose": 0, "Aborted": 1, "Main Score": float("nan")}, {}),
        "both_flags": ({"Success": 1, "Lose": 1, "Aborted": 0, "Main Score": 0}, {}),  # 59 real clean_up episodes
        "no_flag": ({"Success": 0, "Lose": 0, "Aborted": 0, "Main Score": 37.5}, {}),  # TextArena's ta_* games
    }
    for index, (name, (scores, keys)) in enumerate(folders.items()):
        write_clemcore_episode(tmp_path / "m" / "wordle" / name / "instance_00000", turns=[], game_id=index,
                               extra=keys, scores=None if scores is None else {"episode scores": scores})
    episodes = {episode.path.parent.name: episode for episode in iter_episodes(tmp_path)}
    assert {name: e.outcome for name, e in episodes.items()} == {
        "unscored_but_flagged_a_win": None, "won": "success", "lost": "lose", "aborted": "aborted",
        "both_flags": None, "no_flag": None}
    assert episodes["unscored_but_flagged_a_win"].outcome_problem == "unscored"
    assert episodes["both_flags"].outcome_problem == "Success and Lose both set"
    assert episodes["no_flag"].outcome_problem == "no outcome flag"
    assert episodes["no_flag"].main_score == 37.5 and episodes["aborted"].main_score is None


def test_unreadable_episodes_are_skipped_once_each_with_path_and_reason(tmp_path, shared_sample):
    experiment = tmp_path / LLAMA / "referencegame" / "0_letter_grids"
    shutil.copytree(shared_sample / LLAMA / "referencegame" / "0_letter_grids", experiment)
    (experiment / "episode_4" / "interactions.json").write_text('{"players": {}, "turns": [[')
    (experiment / "episode_5" / "scores.json").write_text("[1, 2]")
    unfinished = experiment / "instance_00009"
    unfinished.mkdir()
    (unfinished / "instance.json").write_text("{}")
    staging = experiment / ".episode_6.staging-1"
    shutil.copytree(experiment / "episode_0", staging)
    skipped = []
    episodes = list(iter_episodes(tmp_path, on_skip=lambda path, reason: skipped.append((path, reason))))
    assert sorted(episode.episode for episode in episodes) == ["episode_0", "episode_11", "episode_15",
                                                               "episode_7"]
    reasons = dict(skipped)
    assert len(skipped) == 3
    assert "interactions.json cannot be read" in reasons[experiment / "episode_4"]
    assert "scores.json holds a list" in reasons[experiment / "episode_5"]
    assert "did not finish" in reasons[unfinished]


def test_episode_that_ended_in_error_is_read_without_outcome(tmp_path):
    folder = tmp_path / "m" / "wordle" / "e" / "instance_00003"
    folder.mkdir(parents=True)
    (folder / "instance.json").write_text(json.dumps({"game_id": 3}))
    (folder / "error.json").write_text(json.dumps({"error": "RuntimeError", "message": "backend died"}))
    (episode,) = iter_episodes(tmp_path)
    assert episode.interactions is None and episode.error["error"] == "RuntimeError"
    assert (episode.game_id, episode.outcome, episode.llm_players()) == (3, None, [])


def test_scanning_a_root_and_its_model_folder_counts_each_episode_once(shared_sample):
    scan = scan_results([shared_sample, shared_sample / META_LLAMA])
    assert len(scan.episodes) == 38 and scan.skipped == []
    assert {e.model for e in iter_episodes(shared_sample / META_LLAMA)} == {META_LLAMA}
