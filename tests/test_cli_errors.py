"""Bad input: a non-zero exit, one line that says what is wrong and how to fix it, no traceback, nothing written."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from playprm.cli import main


def run_cli(argv, capsys):
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.err.strip()


@pytest.fixture()
def broken_games(tmp_path):
    """A games dir holding a copy of wordle with a corrupt instances.json."""
    from playprm.games.registry import builtin_games_dir

    games = tmp_path / "games"
    shutil.copytree(builtin_games_dir() / "wordle", games / "wordle")
    (games / "wordle" / "in" / "instances.json").write_text('{"experiments": [')
    return games


@pytest.mark.parametrize("extra, message", [
    (["--game", "chess"], "unknown game 'chess'"),
    (["--game-all", "--limit", "0"], "--limit 0 must be at least 1"),
    (["--game-all", "--mode", "beam-search"], "needs a PRM"),
    (["--game-all", "--mode", "best-of-n", "--prm-path", "{prm}", "--n-candidates", "0"], "--n-candidates 0"),
    (["--game-all", "--mode", "beam-search", "--prm-path", "{prm}", "--n-candidates", "2", "--beam-width", "3"],
     "larger than --n-candidates"),
    (["--game-all", "--temperature", "-1"], "negative"),
    (["--game-all", "--shard", "3/2"], "0 <= i < n"),
    (["--game-all", "--mode", "best-of-n", "--prm-path", "/no/such/prm"], "is not a directory"),
    ([], "--game NAME"),
    (["--game-all", "--switch-margin", "0.1"], "--mode best-of-n --selection anchored"),
    (["--game-all", "--mode", "best-of-n", "--prm-path", "{prm}", "--switch-margin", "0.1"], "--selection anchored"),
    (["--game-all", "--mode", "best-of-n", "--prm-path", "{prm}", "--selection", "anchored", "--switch-margin", "-1"],
     "must be >= 0"),
    (["--game-all", "--mode", "best-of-n", "--prm-path", "{prm}", "--selection", "anchored", "--n-candidates", "1"],
     "--n-candidates >= 2"),
    (["--game-all", "--mode", "best-of-n", "--prm-path", "{prm}", "--selection", "anchored"], "switch_margin.json"),
    (["--game-all", "--mode", "best-of-n", "--scorer", "logprob", "--selection", "anchored", "--switch-margin",
      "auto"], "measured on the PRM"),
    (["--game-all", "--mode", "beam-search", "--prm-path", "{prm}", "--selection", "weighted"], "--mode best-of-n"),
])
def test_eval_rejects_bad_input_before_loading(card_models, tmp_path, capsys, extra, message):
    results = tmp_path / "results"
    argv = ["eval", "--policy-model", str(card_models["policy"]), "--results-dir", str(results)]
    argv += [a.replace("{prm}", str(card_models["prm"])) for a in extra]
    code, err = run_cli(argv, capsys)
    assert code == 2
    assert message in err and len(err.splitlines()) == 1 and "Traceback" not in err
    assert not results.exists()


@pytest.mark.parametrize("policy_model", ["scripted:random-valid", "served"])
def test_lf_beam_on_a_backend_without_prefixes_fails_in_validation(card_models, tmp_path, monkeypatch, capsys,
                                                                    policy_model):
    # an OpenAI-compatible entry that no server answers: the run must stop before anything is contacted
    (tmp_path / "model_registry.json").write_text(json.dumps([{
        "model_name": "served", "backend": "openai_compatible", "huggingface_id": "served-model",
        "model_config": {"base_url": "http://127.0.0.1:9/v1"}}]))
    monkeypatch.chdir(tmp_path)
    code, err = run_cli(["eval", "--policy-model", policy_model, "--mode", "lf-beam", "--prm-path",
                         str(card_models["prm"]), "--n-candidates", "2", "--beam-width", "1", "--game-all",
                         "--results-dir", str(tmp_path / "r")], capsys)
    assert code == 2 and "--mode lf-beam needs" in err and "hf" in err
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "r").exists()


def test_missing_model_directory(tmp_path, capsys):
    code, err = run_cli(["eval", "--policy-model", str(tmp_path / "T" / "policy"), "--game-all",
                         "--results-dir", str(tmp_path / "r")], capsys)
    assert code == 2 and "no such model directory" in err and not (tmp_path / "r").exists()


def test_malformed_instances_file(card_models, broken_games, tmp_path, capsys):
    code, err = run_cli(["eval", "--policy-model", str(card_models["policy"]), "--game", "wordle",
                         "--games-dir", str(broken_games), "--results-dir", str(tmp_path / "r")], capsys)
    assert code == 2 and "instances.json" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "r").exists()


def test_errors_come_from_the_real_command_line_without_traceback(tmp_path):
    result = subprocess.run([sys.executable, "-m", "playprm", "eval", "--policy-model", "nope", "--game", "chess",
                             "--results-dir", str(tmp_path / "r")], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def test_collect_rejects_bad_input(card_models, tmp_path, capsys):
    for extra, message in [(["--samples-per-instance", "0"], "at least 1"),
                           (["--branch-factor", "0"], "at least 1"),
                           (["--temperature", "0"], "> 0")]:
        code, err = run_cli(["collect", "--policy-model", str(card_models["policy"]), "--game-all",
                             "--results-dir", str(tmp_path / "r"), *extra], capsys)
        assert code == 2 and message in err
    assert not (tmp_path / "r").exists()


def test_a_game_copy_from_another_playprm_version_says_how_to_write_it_again(tmp_path, capsys):
    # split folders copy the built-in games' code, which imports playprm's modules by name (one was renamed)
    from playprm.games.registry import builtin_games_dir

    games = tmp_path / "games"
    shutil.copytree(builtin_games_dir() / "referencegame", games / "referencegame")
    master = games / "referencegame" / "master.py"
    master.write_text(master.read_text().replace("playprm.games.builtin.base", "playprm.games.builtin.episode"))
    results = tmp_path / "r"
    code, err = run_cli(["eval", "--policy-model", "nobody/no-such-model", "--game", "referencegame", "--games-dir",
                         str(games), "--limit", "1", "--results-dir", str(results)], capsys)
    assert code == 2 and "write its folder again with `playprm instances`" in err  # before anything is written
    assert not results.exists()


def test_broken_game_is_recorded_and_the_other_games_finish(card_models, tmp_path, capsys):
    from playprm.games.registry import builtin_games_dir

    games = tmp_path / "games"
    shutil.copytree(builtin_games_dir() / "referencegame", games / "referencegame")
    (games / "referencegame" / "master.py").write_text("raise ImportError('written for another clemcore')\n")
    results = tmp_path / "r"
    code = main(["eval", "--policy-model", str(card_models["policy"]), "--game-all", "--games-dir", str(games),
                 "--limit", "1", "--max-tokens", "4", "--results-dir", str(results), "--skip-broken-games"])
    assert code == 0
    out = capsys.readouterr().out
    run_dir = next(p for p in results.iterdir() if p.is_dir())  # beside clembench.log
    errors = sorted(run_dir.rglob("error.json"))
    assert errors and all(p.parts[-4] == "referencegame" for p in errors)
    error = json.loads(errors[0].read_text())
    assert error["stage"] == "load" and error["message"] == "written for another clemcore"
    assert "NoneType: None" not in error["traceback"]  # the game's own traceback
    assert list(run_dir.glob("wordle/*/*/scores.json")) and list(run_dir.glob("taboo/*/*/scores.json"))
    assert "errored" in out
