"""``playprm prm-data``: a labelled record per LLM turn (outcome, Monte-Carlo) and sibling preference pairs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from playprm.cli import main

LLAMA = "Llama-3.3-70B-Instruct-t0.0--Llama-3.3-70B-Instruct-t0.0"


def read_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def records_of(out: Path) -> list[dict]:
    return read_lines(out / "train.jsonl") + read_lines(out / "validation.jsonl")


def llm_replies(results: Path) -> int:
    """'get message' events of non-programmatic players in scored episodes, read straight from the files."""
    count = 0
    for scores_file in results.rglob("scores.json"):
        interactions = json.loads((scores_file.parent / "interactions.json").read_text())
        llm = {name.replace("_", " ") for name, player in interactions["players"].items()
               if name != "GM" and "programmatic" not in json.dumps(player).lower()}
        count += sum(e["from"] in llm and e["action"]["type"] == "get message"
                     for round_events in interactions["turns"] for e in round_events)
    return count


def test_one_outcome_record_per_llm_turn(shared_sample, tmp_path):
    assert main(["prm-data", "--results-dir", str(shared_sample), "--labels", "outcome", "--out", str(tmp_path)]) == 0
    records = records_of(tmp_path)
    assert len(records) == llm_replies(shared_sample) == 159
    for record in records:
        assert record["label"] == (1.0 if record["meta"]["outcome"] == "success" else 0.0)
        assert (record["label_kind"], record["n_rollouts"]) == ("outcome", 1)
        assert record["messages"][-1]["role"] == "user" and isinstance(record["response"], str)
    assert not (tmp_path / "pairs.jsonl").exists()


def test_lose_and_abort_labels_are_configurable_and_no_instance_crosses_the_split(shared_sample, tmp_path):
    assert main(["prm-data", "--results-dir", str(shared_sample), "--labels", "outcome", "--out", str(tmp_path),
                 "--lose-label", "0.25", "--abort-label", "0.5", "--val-fraction", "0.3", "--seed", "1"]) == 0
    train, validation = read_lines(tmp_path / "train.jsonl"), read_lines(tmp_path / "validation.jsonl")
    labels = {(r["meta"]["outcome"], r["label"]) for r in train + validation}
    assert labels == {("success", 1.0), ("lose", 0.25), ("aborted", 0.5)}

    def instances(records):
        return {(r["meta"]["game"], r["meta"]["experiment"], str(r["meta"]["game_id"])) for r in records}

    assert train and validation and not instances(train) & instances(validation)


def node(turn_id, parent_id, response, *, leaf=None, outcome=None, context="state", player="Player 1"):
    return {"turn_id": turn_id, "parent_id": parent_id, "game": "wordle", "experiment": "high", "game_id": 0,
            "sample": 0, "player": player, "game_role": "Guesser", "turn": 0 if parent_id is None else 1,
            "context": [{"role": "user", "content": context}], "response": response,
            "leaf_episode": leaf, "outcome": outcome}


def write_tree(model_dir: Path, extra_lines: tuple[str, ...] = ()) -> None:
    """root r branches into a and b; a ends in a success, a lose and a leaf of unknown outcome; b ends in
    two successes and an abort and has one unfinished branch u."""
    leaf = "wordle/high/episode_00000_s00_l{:03d}".format
    nodes = [
        node("r", None, "guess: crane", context="start"),
        node("a", "r", "guess: house", context="after crane"),
        node("b", "r", "guess: mouse", context="after crane"),
        node("a1", "a", "guess: horse", leaf=leaf(0), outcome="success", context="after house"),
        node("a2", "a", "guess: hoist", leaf=leaf(1), outcome="lose", context="after house"),
        node("n", "a", "guess: hover", leaf=leaf(2), outcome=None, context="after house"),
        node("b1", "b", "guess: moose", leaf=leaf(3), outcome="success", context="after mouse"),
        node("b2", "b", "guess: mousy", leaf=leaf(4), outcome="success", context="after mouse"),
        node("b3", "b", "guess: mound", leaf=leaf(5), outcome="aborted", context="after mouse"),
        node("u", "b", "guess: mourn", context="after mouse"),
    ]
    model_dir.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(n) for n in nodes] + list(extra_lines)
    (model_dir / "turns.jsonl").write_text("\n".join(lines) + "\n")


def test_mc_label_is_the_share_of_successful_leaves_below_each_turn(tmp_path, capsys):
    write_tree(tmp_path / "results" / "tiny--programmatic", extra_lines=('{"turn_id": "half-writ',))
    out = tmp_path / "out"
    assert main(["prm-data", "--results-dir", str(tmp_path / "results"), "--labels", "mc", "--out", str(out)]) == 0
    labels = {r["meta"]["turn_id"]: (r["label"], r["n_rollouts"]) for r in records_of(out)}
    assert labels == {"r": (3 / 5, 5), "a": (1 / 2, 2), "b": (2 / 3, 3), "a1": (1.0, 1), "a2": (0.0, 1),
                      "b1": (1.0, 1), "b2": (1.0, 1), "b3": (0.0, 1)}
    assert {r["label_kind"] for r in records_of(out)} == {"mc"}
    assert "turns.jsonl:11: not valid JSON" in capsys.readouterr().err
    card = (out / "README.md").read_text()
    assert "Nodes without a finished leaf below (no mc label): 2" in card  # u, and n (outcome unknown)
    assert "Leaves with no known outcome (not counted): 1" in card


def test_siblings_with_different_mc_labels_become_preference_pairs(tmp_path):
    write_tree(tmp_path / "results" / "tiny--programmatic")
    out = tmp_path / "out"
    assert main(["prm-data", "--results-dir", str(tmp_path / "results"), "--labels", "mc", "--out", str(out)]) == 0
    pairs = {(p["meta"]["chosen_turn_id"], p["meta"]["rejected_turn_id"]): p for p in read_lines(out / "pairs.jsonl")}
    assert set(pairs) == {("b", "a"), ("a1", "a2"), ("b1", "b3"), ("b2", "b3")}
    pair = pairs["b", "a"]
    assert (pair["chosen"], pair["rejected"]) == ("guess: mouse", "guess: house")
    assert (pair["chosen_label"], pair["rejected_label"]) == pytest.approx((2 / 3, 1 / 2))
    assert pair["messages"] == [{"role": "user", "content": "after crane"}]
    assert pair["meta"]["split"] in ("train", "validation")


def test_leaf_without_outcome_takes_the_outcome_of_its_scored_episode(tmp_path):
    model_dir = tmp_path / "results" / "tiny--programmatic"
    write_tree(model_dir)
    leaf = model_dir / "wordle" / "high" / "episode_00000_s00_l002"
    leaf.mkdir(parents=True)
    interactions = {"meta": {"game_name": "wordle", "experiment_name": "high", "game_id": 0},
                    "players": {"GM": {"game_role": "Game Master", "model_name": "programmatic"},
                                "Player 1": {"game_role": "Guesser", "model_name": "tiny-policy"}},
                    "turns": []}
    (leaf / "interactions.json").write_text(json.dumps(interactions))
    (leaf / "scores.json").write_text(json.dumps({"episode scores": {"Aborted": 0, "Lose": 0, "Success": 1}}))
    out = tmp_path / "out"
    assert main(["prm-data", "--results-dir", str(model_dir), "--labels", "mc", "--out", str(out)]) == 0
    records = {r["meta"]["turn_id"]: r for r in records_of(out)}
    assert (records["a"]["label"], records["a"]["n_rollouts"]) == (2 / 3, 3)
    assert (records["n"]["label"], records["n"]["meta"]["outcome"]) == (1.0, "success")
    assert records["r"]["meta"]["model"] == "tiny-policy"  # looked up in the model folder's episodes


def test_labels_both_writes_outcome_and_mc_records(shared_sample, tmp_path):
    results = tmp_path / "results"
    shutil.copytree(shared_sample / LLAMA / "referencegame", results / LLAMA / "referencegame")
    write_tree(results / LLAMA)
    out = tmp_path / "out"
    assert main(["prm-data", "--results-dir", str(results), "--labels", "both", "--out", str(out)]) == 0
    kinds = [r["label_kind"] for r in records_of(out)]
    assert kinds.count("outcome") == llm_replies(results) and kinds.count("mc") == 8
    assert len(read_lines(out / "pairs.jsonl")) == 4


def test_mc_labels_without_a_rollout_tree_are_a_usage_error(shared_sample, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["prm-data", "--results-dir", str(shared_sample), "--labels", "mc", "--out", str(out)]) == 2
    error = capsys.readouterr().err
    assert "no turns.jsonl" in error and "--branch-factor" in error
    assert main(["prm-data", "--results-dir", str(shared_sample), "--labels", "outcome", "--out", str(out),
                 "--lose-label", "2"]) == 2
    assert not out.exists()


def test_advantage_label_is_the_mc_value_minus_the_mean_of_the_replies_to_the_same_context(tmp_path):
    write_tree(tmp_path / "results" / "tiny--programmatic")
    out = tmp_path / "out"
    assert main(["prm-data", "--results-dir", str(tmp_path / "results"), "--labels", "advantage", "--out",
                 str(out)]) == 0
    records = {r["meta"]["turn_id"]: r for r in records_of(out)}
    # a (1/2) and b (2/3) answer "after crane": its value is 7/12; a1/a2 answer "after house" (1/2); b1, b2, b3
    # "after mouse" (2/3); the root r has no sibling, so no estimate and no record
    advantage = {"a": -1 / 12, "b": 1 / 12, "a1": 0.5, "a2": -0.5, "b1": 1 / 3, "b2": 1 / 3, "b3": -2 / 3}
    assert set(records) == set(advantage)
    for turn_id, value in advantage.items():
        assert records[turn_id]["advantage"] == pytest.approx(value)
        assert records[turn_id]["label"] == pytest.approx((1 + value) / 2)  # in [0, 1]: 0.5 = the average sibling
        assert records[turn_id]["label_kind"] == "advantage"
    assert records["b"]["value"] == pytest.approx(2 / 3)
    assert len(read_lines(out / "pairs.jsonl")) == 4  # the mc pairs
    assert "give no record: 1" in (out / "README.md").read_text()
