"""What a run tells its user and teammates: a non-zero exit when every episode errored, and results files
readable as the umask allows (not mkstemp's private 0600)."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from playprm.cli import main


def broken_wordle(root: Path) -> Path:
    """A games dir whose wordle has lost its first prompt, so every episode of it errors (stage ``setup``); a
    game whose code does not load stops the command instead (test_external_suites.py)."""
    from playprm.games.registry import builtin_games_dir

    games = root / "games"
    shutil.copytree(builtin_games_dir() / "wordle", games / "wordle")
    (games / "wordle" / "resources" / "initial_prompt.template").unlink()
    return games


def test_a_run_in_which_every_episode_errored_exits_non_zero_and_says_so(tmp_path, capsys):
    code = main(["eval", "--policy-model", "scripted:random-valid", "--game", "wordle", "--limit", "1",
                 "--games-dir", str(broken_wordle(tmp_path)), "--results-dir", str(tmp_path / "r")])
    out = capsys.readouterr().out
    assert code == 1
    assert "0 played, 2 errored" in out and "every episode errored" in out


@pytest.fixture(params=[0o022, 0o027, 0o002])
def umask(request):
    previous = os.umask(request.param)
    yield request.param
    os.umask(previous)


def test_results_files_follow_the_umask(tmp_path, umask):
    results = tmp_path / "r"
    assert main(["eval", "--policy-model", "scripted:random-valid", "--game", "wordle", "--limit", "1",
                 "--results-dir", str(results)]) == 0
    assert main(["report", "--results-dir", str(results), "--resamples", "10", "--out", str(tmp_path / "o")]) == 0
    modes = {str(p.relative_to(tmp_path)): stat.S_IMODE(p.stat().st_mode) for p in tmp_path.rglob("*") if p.is_file()}
    assert {"o/results.csv", "o/clemscore.png"} <= set(modes)
    assert any(name.endswith("scores.json") for name in modes)
    assert set(modes.values()) == {0o666 & ~umask}
