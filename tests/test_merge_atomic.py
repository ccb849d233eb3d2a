"""A killed merge loses nothing: episodes are merged whole (staging folder, one rename), an episode missing a
file is unfinished (merge replaces it, eval replays it), and a rerun completes the job."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest
from test_report import episode_scores, write_episode
from test_run_lock import dead_pid

from playprm.cli import main
from playprm.report.clemscore import compute_table
from playprm.results import merge as shards_module
from playprm.results.merge import merge_shards

MODEL = "policy-t0.0--policy-t0.0"
FILES_PER_EPISODE = 4


class Killed(BaseException):
    """Stands for SIGKILL at a chosen point (a BaseException, like KeyboardInterrupt, escapes every handler)."""


def two_shards(tmp_path: Path) -> list[Path]:
    """Four episodes of four files each, round robin over two shards."""
    shards = [tmp_path / "s0", tmp_path / "s1"]
    for k in range(4):
        write_episode(shards[k % 2], MODEL, "wordle", "e", f"instance_{k:05d}", episode_scores(False, 25.0 * k),
                      instance={"game_id": k}, interactions={"turns": [k]}, completed={"k": k})
    return shards


def tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` with its bytes, hidden (staging) folders included."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def visible_episodes(out: Path) -> dict[str, set[str]]:
    return {folder.name: {p.name for p in folder.iterdir()}
            for folder in sorted((out / MODEL / "wordle" / "e").iterdir()) if not folder.name.startswith(".")}


def report(root: Path) -> pd.DataFrame:
    return compute_table([root], static_games=set(), n_resamples=50)


def test_a_merge_killed_between_two_files_leaves_episodes_whole_or_absent(tmp_path, monkeypatch):
    shards = two_shards(tmp_path)
    clean = tmp_path / "clean"
    merge_shards(shards, clean)
    copied: list[Path] = []

    def kill_at_the_sixth_file(path: Path) -> None:
        copied.append(path)
        if len(copied) == FILES_PER_EPISODE + 2:  # the second file of the second episode
            raise Killed

    monkeypatch.setattr(shards_module, "after_file_copied", kill_at_the_sixth_file)
    out = tmp_path / "out"
    with pytest.raises(Killed):
        merge_shards(shards, out)
    episodes = visible_episodes(out)
    assert len(episodes) == 1  # the first episode is there with all its files, the second not at all
    assert all(len(files) == FILES_PER_EPISODE for files in episodes.values())

    monkeypatch.undo()
    summary = merge_shards(shards, out)
    assert summary.already_present == FILES_PER_EPISODE  # the first episode, complete; the others copied now
    assert tree(out) == tree(clean)
    pd.testing.assert_frame_equal(report(out), report(clean))


def test_an_episode_half_copied_by_an_older_merge_is_replaced(tmp_path):
    shards = two_shards(tmp_path)
    out = tmp_path / "out"
    merge_shards(shards, out)
    expected = tree(out)
    # what a file-by-file merge killed at the wrong moment left: completed.json but no scores.json
    (out / MODEL / "wordle" / "e" / "instance_00002" / "scores.json").unlink()
    assert report(out).at[MODEL, "wordle, episodes"] == 3
    summary = merge_shards(shards, out)
    assert summary.unfinished_replaced == 1
    assert "1 unfinished episode(s)" in summary.line(out)
    assert tree(out) == expected


def test_a_staging_folder_of_a_killed_merge_is_removed_and_a_live_one_kept(tmp_path):
    shards = two_shards(tmp_path)
    out = tmp_path / "out"
    merge_shards(shards, out)
    experiment = out / MODEL / "wordle" / "e"
    dead = experiment / f".instance_00009.staging-{dead_pid()}"  # its process has exited
    live = experiment / f".instance_00008.staging-{os.getppid()}"  # a running process
    for folder in (dead, live):
        folder.mkdir()
        (folder / "scores.json").write_text("{}")
    merge_shards(shards, out)
    assert not dead.exists() and live.is_dir()


def test_eval_resume_replays_an_episode_that_lacks_a_file(tmp_path, capsys):
    argv = ["eval", "--policy-model", "scripted:random-valid", "--game", "wordle", "--limit", "1",
            "--results-dir", str(tmp_path / "r")]
    assert main(argv) == 0
    (scores,) = sorted((tmp_path / "r").glob("*/wordle/high_frequency_words/*/scores.json"))
    scores.unlink()
    capsys.readouterr()
    assert main(argv) == 0
    assert "2 episodes planned, 1 already done" in capsys.readouterr().out
    assert scores.is_file()
