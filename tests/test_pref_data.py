"""``playprm pref-data``: preference pairs in TRL's conversational format, two replies to one context each, split by
instance, from rollout trees (Monte-Carlo values) or from a best-of-N run's scored candidates (the expert named an
oracle); bad inputs are one line and write nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from playprm.cli import main


def read_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def node(turn_id, parent_id, response, context, game_id, *, leaf=None, outcome=None):
    return {"turn_id": turn_id, "parent_id": parent_id, "game": "referencegame", "experiment": "random_grids",
            "game_id": game_id, "sample": 0, "player": "Player 1", "game_role": "Describer",
            "turn": 0 if parent_id is None else 1, "context": [{"role": "user", "content": context}],
            "response": response, "leaf_episode": leaf, "outcome": outcome}


def write_trees(model_dir: Path, instances: int = 6) -> None:
    """Per instance: a root context with four replies valued 1 (a, c), 0.5 (d: one won and one lost reply below it)
    and 0 (b); d's two replies (valued 1 and 0) answer a second context."""
    lines = []
    for i in range(instances):
        leaf = f"referencegame/random_grids/instance_{i:05d}_l{{}}".format
        start = f"describe grid {i}"
        lines += [node(f"{i}r", None, "opening", "before", i),
                  node(f"{i}a", f"{i}r", "EXPRESSION: the cross", start, i, leaf=leaf(0), outcome="success"),
                  node(f"{i}c", f"{i}r", "EXPRESSION: the X shape", start, i, leaf=leaf(1), outcome="success"),
                  node(f"{i}b", f"{i}r", "EXPRESSION: the grid", start, i, leaf=leaf(2), outcome="lose"),
                  node(f"{i}d", f"{i}r", "EXPRESSION: hmm", start, i),
                  node(f"{i}d1", f"{i}d", "EXPRESSION: the cross again", f"retry {i}", i, leaf=leaf(3),
                       outcome="success"),
                  node(f"{i}d2", f"{i}d", "EXPRESSION: a grid", f"retry {i}", i, leaf=leaf(4), outcome="lose")]
    model_dir.mkdir(parents=True, exist_ok=True)
    (model_dir / "turns.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))


def pref_data(results: Path, out: Path, *extra: str) -> int:
    return main(["pref-data", "--results-dir", str(results), "--out", str(out), *extra])


def test_mc_pairs_are_trl_preference_records_of_sibling_replies(tmp_path):
    from datasets import load_dataset
    from trl.data_utils import is_conversational

    write_trees(tmp_path / "runs" / "model")
    assert pref_data(tmp_path / "runs", tmp_path / "pairs", "--min-gap", "0") == 0
    records = read_lines(tmp_path / "pairs" / "train.jsonl") + read_lines(tmp_path / "pairs" / "validation.jsonl")
    # per instance: a > b, a > d, c > b, c > d, d > b at the first context (a = c makes no pair), d1 > d2 at the second
    assert len(records) == 6 * 6
    nodes = {line["turn_id"]: line for line in read_lines(tmp_path / "runs" / "model" / "turns.jsonl")}
    for record in records:
        chosen, rejected = nodes[record["meta"]["chosen_turn_id"]], nodes[record["meta"]["rejected_turn_id"]]
        assert record["chosen"][0]["content"] == chosen["response"]
        assert record["rejected"][0]["content"] == rejected["response"]
        # siblings: one parent, the same context; never replies of two contexts
        assert chosen["parent_id"] == rejected["parent_id"] and record["prompt"] == chosen["context"] == rejected["context"]
        assert record["chosen_value"] > record["rejected_value"] and record["source"] == "mc"
    loaded = load_dataset(str(tmp_path / "pairs"))  # the card's front matter names the split files
    assert set(loaded) == {"train", "validation"}
    example = loaded["train"][0]
    assert is_conversational(example)
    assert example["chosen"][0]["role"] == example["rejected"][0]["role"] == "assistant"
    assert example["prompt"][-1]["role"] == "user"


def test_min_gap_keeps_only_pairs_whose_values_differ_enough(tmp_path):
    write_trees(tmp_path / "runs" / "model")
    assert pref_data(tmp_path / "runs", tmp_path / "pairs", "--min-gap", "0.75") == 0
    records = read_lines(tmp_path / "pairs" / "train.jsonl") + read_lines(tmp_path / "pairs" / "validation.jsonl")
    assert len(records) == 6 * 3  # a > b, c > b and d1 > d2: the pairs with d (0.5) differ by 0.5 only
    assert all(r["chosen_value"] - r["rejected_value"] >= 0.75 for r in records)
    assert "Left out: 18 pairs whose values differ by less than 0.75" in (tmp_path / "pairs" / "README.md").read_text()


def test_no_instance_is_in_both_splits(tmp_path):
    write_trees(tmp_path / "runs" / "model", instances=20)
    assert pref_data(tmp_path / "runs", tmp_path / "pairs", "--val-fraction", "0.3") == 0
    train, validation = (read_lines(tmp_path / "pairs" / f"{split}.jsonl") for split in ("train", "validation"))
    ids = [{r["meta"]["game_id"] for r in records} for records in (train, validation)]
    assert train and validation and not ids[0] & ids[1]


@pytest.mark.parametrize("case, expected", [
    ("gap", "no preference pairs in"),
    ("no-tree", "--source mc needs a rollout tree"),
    ("negative-gap", "--min-gap must be >= 0"),
])
def test_no_pairs_and_bad_inputs_are_one_line_errors_that_write_nothing(case, expected, tmp_path, capsys):
    write_trees(tmp_path / "runs" / "model")
    if case == "no-tree":
        (tmp_path / "runs" / "model" / "turns.jsonl").unlink()
    gap = {"gap": "1.5", "negative-gap": "-1"}.get(case, "0.5")
    assert pref_data(tmp_path / "runs", tmp_path / "pairs", "--min-gap", gap) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("playprm pref-data: error: ") and expected in error and "\n" not in error
    assert not (tmp_path / "pairs").exists()


def test_candidates_of_an_expert_ranked_run_are_pairs_named_oracle_data(tmp_path):
    runs = tmp_path / "runs"
    assert main(["eval", "--policy-model", "scripted:random-valid", "--mode", "best-of-n", "--n-candidates", "4",
                 "--scorer", "expert", "--game", "referencegame", "--limit", "3", "--results-dir", str(runs)]) == 0
    assert pref_data(runs, tmp_path / "pairs", "--source", "candidates", "--val-fraction", "0") == 0
    records = read_lines(tmp_path / "pairs" / "train.jsonl")
    assert records
    logged = {}
    for path in runs.rglob("candidates.jsonl"):
        for line in read_lines(path):
            logged.setdefault(line["player"], []).append({c["text"]: c["score"] for c in line["candidates"]})
    for record in records:
        assert record["meta"]["scorer"] == "expert" and record["meta"]["oracle"] is True
        chosen, rejected = record["chosen"][0]["content"], record["rejected"][0]["content"]
        # both replies are candidates of one logged turn of that player, the better-scored one chosen
        assert any(scores.get(chosen) == record["chosen_value"] > scores.get(rejected, 2) == record["rejected_value"]
                   for scores in logged[record["meta"]["player"]])
    assert "an oracle" in (tmp_path / "pairs" / "README.md").read_text()
