"""`playprm merge`: shard results dirs joined into one, duplicates skipped, conflicts refused."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from test_report import episode_scores, synthetic_results, write_episode

from playprm.cli import main
from playprm.errors import UsageError
from playprm.report.clemscore import compute_table
from playprm.results.merge import merge_shards

MODEL = "policy-t0.0--policy-t0.0"


def split_into_shards(union: Path, shards: list[Path]) -> None:
    """Copy every episode folder of ``union`` into one shard, round robin, like a SLURM array split."""
    episode_dirs = sorted({scores.parent for scores in union.rglob("scores.json")})
    for k, episode_dir in enumerate(episode_dirs):
        shutil.copytree(episode_dir, shards[k % len(shards)] / episode_dir.relative_to(union))


def test_merge_of_two_shards_equals_the_report_of_the_union(tmp_path):
    union = synthetic_results(tmp_path / "union")
    shards = [tmp_path / "shard0", tmp_path / "shard1"]
    split_into_shards(union, shards)
    summary = merge_shards(shards, tmp_path / "merged")
    assert summary.episodes == len(list(union.rglob("scores.json")))
    merged = compute_table([tmp_path / "merged"], static_games={"wordle"}, n_resamples=100)
    pd.testing.assert_frame_equal(merged, compute_table([union], static_games={"wordle"}, n_resamples=100))
    pd.testing.assert_frame_equal(merged, compute_table(shards, static_games={"wordle"}, n_resamples=100))


def test_merge_skips_identical_duplicate_episodes_with_a_count(tmp_path):
    for shard in ("a", "b"):
        write_episode(tmp_path / shard, MODEL, "wordle", "e", "instance_00000", episode_scores(False, 40.0))
    write_episode(tmp_path / "b", MODEL, "wordle", "e", "instance_00001", episode_scores(True, None))
    summary = merge_shards([tmp_path / "a", tmp_path / "b"], tmp_path / "out")
    assert summary.episodes == 2
    assert summary.duplicate_episodes == 1
    assert sorted(p.name for p in (tmp_path / "out" / MODEL / "wordle" / "e").iterdir()) == [
        "instance_00000", "instance_00001",
    ]


def test_merge_refuses_conflicting_episodes_before_writing(tmp_path):
    write_episode(tmp_path / "a", MODEL, "wordle", "e", "instance_00000", episode_scores(False, 40.0))
    write_episode(tmp_path / "a", MODEL, "wordle", "e", "instance_00001", episode_scores(False, 10.0))
    write_episode(tmp_path / "b", MODEL, "wordle", "e", "instance_00000", episode_scores(False, 70.0))
    with pytest.raises(UsageError, match="instance_00000 differs between shards"):
        merge_shards([tmp_path / "a", tmp_path / "b"], tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_merge_refuses_shards_of_different_decoding_modes(tmp_path):
    for shard, mode in (("a", "greedy"), ("b", "best-of-n")):
        write_episode(tmp_path / shard, MODEL, "wordle", "e", f"instance_{shard}", episode_scores(False, 1.0))
        (tmp_path / shard / MODEL / "playprm_run.json").write_text(json.dumps({"mode": mode}))
    with pytest.raises(UsageError, match="different decoding modes"):
        merge_shards([tmp_path / "a", tmp_path / "b"], tmp_path / "out")


def test_merge_keeps_the_first_copy_of_differing_run_metadata(tmp_path):
    for shard, started in (("a", "10:00"), ("b", "11:00")):
        write_episode(tmp_path / shard, MODEL, "wordle", "e", f"instance_{shard}", episode_scores(False, 1.0))
        (tmp_path / shard / MODEL / "run.json").write_text(json.dumps({"started": started}))
    summary = merge_shards([tmp_path / "a", tmp_path / "b"], tmp_path / "out")
    assert json.loads((tmp_path / "out" / MODEL / "run.json").read_text()) == {"started": "10:00"}
    assert summary.differing_metadata == [Path(MODEL) / "run.json"]


def test_merge_leaves_stale_shard_reports_behind(tmp_path):
    write_episode(tmp_path / "a", MODEL, "wordle", "e", "instance_00000", episode_scores(False, 1.0))
    (tmp_path / "a" / "results.csv").write_text("stale")
    merge_shards([tmp_path / "a"], tmp_path / "out")
    assert not (tmp_path / "out" / "results.csv").exists()


def test_merge_rerun_into_the_same_out_copies_nothing_new(tmp_path):
    union = synthetic_results(tmp_path / "union", episodes=2)
    shards = [tmp_path / "shard0", tmp_path / "shard1"]
    split_into_shards(union, shards)
    first = merge_shards(shards, tmp_path / "out")
    again = merge_shards(shards, tmp_path / "out")
    assert first.files_copied > 0
    assert again.files_copied == 0 and again.already_present == first.files_copied


def test_merge_command_prints_a_summary(tmp_path, capsys):
    write_episode(tmp_path / "a", MODEL, "wordle", "e", "instance_00000", episode_scores(False, 1.0))
    write_episode(tmp_path / "b", MODEL, "wordle", "e", "instance_00000", episode_scores(False, 1.0))
    assert main(["merge", "--results-dir", str(tmp_path / "a"), str(tmp_path / "b"),
                 "--out", str(tmp_path / "out")]) == 0
    assert "1 episode(s)" in capsys.readouterr().out


@pytest.mark.parametrize("case", ["missing shard", "out inside shard", "no episodes"])
def test_merge_bad_input_is_one_clear_line(tmp_path, capsys, case):
    shard = tmp_path / "a"
    out = tmp_path / "out"
    if case != "missing shard":
        shard.mkdir()
    if case == "out inside shard":
        write_episode(shard, MODEL, "wordle", "e", "instance_00000", episode_scores(False, 1.0))
        out = shard / "merged"
    assert main(["merge", "--results-dir", str(shard), "--out", str(out)]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("playprm merge: error: ") and "\n" not in error
    assert not out.exists()
