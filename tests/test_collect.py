"""playprm collect: K distinct sampled episodes per instance, branched rollout trees, and mc labels from them."""

from __future__ import annotations

import json

from playprm.cli import main
from playprm.games.builtin.scripted import RandomValidPolicy
from playprm.play.collect import CollectSettings, run_collect


def read_turns(run_dir):
    return [json.loads(line) for line in (run_dir / "turns.jsonl").read_text().splitlines()]


def test_four_samples_per_instance_are_four_distinct_episodes(card_models, tmp_path):
    settings = CollectSettings(samples_per_instance=4, temperature=1.0, max_tokens=12)
    run_dir, summary = run_collect(str(card_models["policy"]), ["wordle", "referencegame"], False, None, 1,
                                   tmp_path, settings, progress=False)
    folders = sorted(p.parent for p in run_dir.rglob("interactions.json"))
    assert len(folders) == 2 * 2 * 4  # 2 games x 2 experiments x 1 instance x 4 samples
    by_instance = {}
    for folder in folders:
        interactions = json.loads((folder / "interactions.json").read_text())
        replies = tuple(e["action"]["content"] for rnd in interactions["turns"] for e in rnd
                        if e["action"]["type"] == "get message")
        key = (folder.parts[-3], folder.parts[-2], json.loads((folder / "instance.json").read_text())["game_id"])
        by_instance.setdefault(key, set()).add(replies)
        assert (folder / "scores.json").is_file() and folder.name.startswith("episode_")
    assert all(len(v) == 4 for v in by_instance.values())


def test_branched_collect_writes_a_consistent_tree_that_prm_data_labels(tmp_path):
    settings = CollectSettings(samples_per_instance=2, temperature=1.0, max_tokens=32, branch_factor=2,
                               branch_depth=2)
    run_dir, summary = run_collect("scripted:random-valid", ["wordle"], False, None, 1, tmp_path / "r", settings,
                                   policy=RandomValidPolicy(), progress=False)
    turns = read_turns(run_dir)
    ids = {t["turn_id"] for t in turns}
    assert len(ids) == len(turns)
    assert all(t["parent_id"] is None or t["parent_id"] in ids for t in turns)
    leaves = [t for t in turns if t["leaf_episode"]]
    folders = sorted(p.parent for p in run_dir.rglob("interactions.json"))
    assert len(leaves) == len(folders) == 2 * 2 * 4  # 2 experiments x 2 samples x 2x2 branches
    for leaf in leaves:
        assert (run_dir / leaf["leaf_episode"] / "scores.json").is_file()
        assert leaf["outcome"] in ("success", "lose", "aborted")
    children = {}
    for t in turns:
        children.setdefault(t["parent_id"], []).append(t)
    assert any(len(v) == 2 for k, v in children.items() if k is not None)  # branched states

    # rerunning resumes: every tree is done, nothing is replayed
    again, summary2 = run_collect("scripted:random-valid", ["wordle"], False, None, 1, tmp_path / "r", settings,
                                  policy=RandomValidPolicy(), progress=False)
    assert summary2.skipped == summary2.planned and read_turns(again) == turns

    assert main(["prm-data", "--results-dir", str(tmp_path / "r"), "--labels", "mc", "--out",
                 str(tmp_path / "prm")]) == 0
    records = [json.loads(line) for name in ("train.jsonl", "validation.jsonl")
               for line in (tmp_path / "prm" / name).read_text().splitlines()]
    assert len(records) == len(turns)
    assert all(r["label_kind"] == "mc" and 0 <= r["label"] <= 1 and r["n_rollouts"] >= 1 for r in records)


def test_a_prover_plays_the_turns_after_the_branch_point_and_prm_data_names_it_an_oracle(tmp_path):
    settings = CollectSettings(samples_per_instance=2, temperature=1.0, max_tokens=32, branch_factor=2,
                               branch_depth=1, prover="programmatic:expert")
    run_dir, _ = run_collect("scripted:random-valid", ["wordle"], False, None, 1, tmp_path / "r", settings,
                             policy=RandomValidPolicy(), progress=False)
    turns = read_turns(run_dir)
    first, later = [t for t in turns if t["parent_id"] is None], [t for t in turns if t["parent_id"] is not None]
    assert len(first) == 2 * 2 * 2 and later  # 2 experiments x 2 samples x 2 branches of the first guess
    assert all("prover" not in t for t in first)  # the policy's replies, the ones labelled
    assert all(t["prover"] == "programmatic:expert" for t in later)  # the expert continues every branch
    assert main(["prm-data", "--results-dir", str(tmp_path / "r"), "--labels", "mc", "--out",
                 str(tmp_path / "prm")]) == 0
    records = [json.loads(line) for name in ("train.jsonl", "validation.jsonl")
               for line in (tmp_path / "prm" / name).read_text().splitlines()]
    assert sorted(r["meta"]["turn_id"] for r in records) == sorted(t["turn_id"] for t in first)
    card = (tmp_path / "prm" / "README.md").read_text()
    assert "`programmatic:expert`" in card and "The prover is an oracle" in card


def test_a_prover_without_branching_is_a_usage_error(capsys):
    assert main(["collect", "--policy-model", "scripted:random-valid", "--game", "wordle", "--prover",
                 "programmatic:expert"]) == 2
    assert "--prover plays the turns after a branch point" in capsys.readouterr().err


def test_a_branch_whose_game_cannot_be_copied_is_written_as_failed_leaves_not_a_crash(tmp_path, monkeypatch):
    """A game state that cannot be deep-copied fails the branch (``Episode.fork``'s failed twin): each of its
    leaves is written as an errored episode and counted, and the rest of the run goes on."""
    from playprm import episode as episode_module

    def no_copy(*args, **kwargs):
        raise TypeError("cannot pickle '_thread.lock' object")

    monkeypatch.setattr(episode_module, "deepcopy", no_copy)
    settings = CollectSettings(samples_per_instance=1, temperature=1.0, max_tokens=32, branch_factor=2,
                               branch_depth=1)
    run_dir, summary = run_collect("scripted:random-valid", ["wordle"], False, None, 1, tmp_path / "r", settings,
                                   policy=RandomValidPolicy(), progress=False)
    folders = sorted(p.parent for p in run_dir.rglob("instance.json"))
    assert len(folders) == 2 * 2  # 2 experiments x 1 sample x 2 branches, each a failed leaf
    assert sum(summary.errored.values()) == 4 and not sum(summary.played.values())
    errors = [json.loads(p.read_text()) for p in run_dir.rglob("error.json")]
    assert len(errors) == 4 and all(e["stage"] == "fork" and "cannot pickle" in e["message"] for e in errors)
