"""Names from input files become folders: none may escape the results dir, none may collide."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from playprm.cli import main
from playprm.results.names import component_problem

TRAVERSAL = "../../../../../../../victim"


def wordle_copy(root: Path, edit) -> Path:
    """A games dir holding a copy of the built-in wordle whose instances.json was changed by ``edit(data)``."""
    from playprm.games.registry import builtin_games_dir

    games = root / "games"
    shutil.copytree(builtin_games_dir() / "wordle", games / "wordle")
    path = games / "wordle" / "in" / "instances.json"
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))
    return games


@pytest.fixture()
def victim(tmp_path) -> Path:
    """A folder beside the results dir, with a file in it, that a traversing name would replace."""
    folder = tmp_path / "victim"
    folder.mkdir()
    (folder / "precious.txt").write_text("keep me")
    return folder


def eval_argv(results: Path, *extra: str) -> list[str]:
    return ["eval", "--policy-model", "scripted:random-valid", "--game", "wordle", "--limit", "1",
            "--results-dir", str(results), *extra]


def one_instance(data, **change):
    experiment = data["experiments"][0]
    experiment["game_instances"] = [{**experiment["game_instances"][0], **change}]
    data["experiments"] = [experiment]


def test_a_traversing_game_id_is_refused_and_the_outside_folder_survives(tmp_path, victim, capsys):
    games = wordle_copy(tmp_path, lambda d: one_instance(d, game_id=TRAVERSAL))
    results = tmp_path / "a" / "b" / "c" / "results"
    code = main(eval_argv(results, "--games-dir", str(games)))
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert "game_id" in err and "instances.json" in err and "path separator" in err
    assert (victim / "precious.txt").read_text() == "keep me"
    assert sorted(p.name for p in victim.iterdir()) == ["precious.txt"]
    assert not results.exists()


def test_a_traversing_experiment_name_is_refused(tmp_path, victim, capsys):
    def edit(data):
        one_instance(data)
        data["experiments"][0]["name"] = "../../../victim"

    games = wordle_copy(tmp_path, edit)
    code = main(eval_argv(tmp_path / "results", "--games-dir", str(games)))
    err = capsys.readouterr().err.strip()
    assert code == 2 and "experiment name" in err
    assert sorted(p.name for p in victim.iterdir()) == ["precious.txt"]


def test_a_traversing_game_name_in_game_registry_json_is_refused(tmp_path, victim, capsys, monkeypatch):
    from playprm.games.registry import builtin_games_dir

    spec = json.loads((builtin_games_dir() / "wordle" / "clemgame.json").read_text())
    entry = {**spec, "game_name": "../../victim", "game_path": str(builtin_games_dir() / "wordle")}
    (tmp_path / "game_registry.json").write_text(json.dumps([entry]))
    monkeypatch.chdir(tmp_path)
    code = main(["eval", "--policy-model", "scripted:random-valid", "--game", "../../victim",
                 "--results-dir", str(tmp_path / "results")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "game_name in" in err and "game_registry.json" in err
    assert sorted(p.name for p in victim.iterdir()) == ["precious.txt"]


def test_a_traversing_model_name_in_model_registry_json_is_refused(tmp_path, victim, capsys, monkeypatch):
    (tmp_path / "model_registry.json").write_text(json.dumps([
        {"model_name": "../../victim", "backend": "huggingface_local", "huggingface_id": "Qwen/Qwen3-0.6B"}]))
    monkeypatch.chdir(tmp_path)
    code = main(["eval", "--policy-model", "../../victim", "--game", "wordle",
                 "--results-dir", str(tmp_path / "results")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "model_name in" in err and "model_registry.json" in err
    assert sorted(p.name for p in victim.iterdir()) == ["precious.txt"]


def test_duplicate_game_ids_are_refused_before_anything_is_played(tmp_path, capsys):
    def edit(data):
        experiment = data["experiments"][0]
        experiment["game_instances"] = [{**experiment["game_instances"][i], "game_id": 0} for i in range(3)]

    games = wordle_copy(tmp_path, edit)
    results = tmp_path / "results"
    code = main(eval_argv(results, "--games-dir", str(games)))
    err = capsys.readouterr().err.strip()
    assert code == 2 and "appears twice" in err and "game_id 0" in err
    assert not results.exists()


@given(st.text(max_size=40))
def test_a_name_that_passes_the_check_stays_one_folder_below_its_parent(name):
    problem = component_problem(name)
    root = Path("/results/pair/game")
    if problem is None:
        child = root / name
        assert child.parent == root and child.name == name
        assert Path(*Path(str(child)).parts).resolve().parent == root.resolve()
    else:
        assert isinstance(problem, str) and problem


@pytest.mark.parametrize("name", ["..", ".", "", " ", "a/b", "a\\b", "..%2f/x", ".staging", "a\x00b", "x" * 300])
def test_known_bad_names_are_refused(name):
    assert component_problem(name) is not None


@pytest.mark.parametrize("name", ["instance_00007", "high_frequency_words", "Qwen3.5-27B-sft-ep1--Qwen3.5-27B",
                                  "wörtle", "a..b", "x" * 150])
def test_ordinary_names_pass(name):
    assert component_problem(name) is None
