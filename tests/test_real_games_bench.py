"""benchmarks/real_games.py without running a model: the skip line without a checkout, exit 2 on a game without the
instances file, the trimmed copy of a game (the checkout untouched), and the score comparison of two result folders."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def real_games():
    spec = importlib.util.spec_from_file_location("real_games", REPO_ROOT / "benchmarks" / "real_games.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _game(root: Path, name: str, experiments: dict[str, int]) -> Path:
    (root / name / "in").mkdir(parents=True)
    data = {"experiments": [{"name": e, "game_instances": [{"game_id": i} for i in range(n)]}
                            for e, n in experiments.items()]}
    (root / name / "in" / "instances.json").write_text(json.dumps(data))
    (root / name / "clemgame.json").write_text(json.dumps({"game_name": name}))
    return root / name


def test_without_a_checkout_it_says_skipped_and_exits_0(real_games, tmp_path, capsys):
    assert real_games.main([str(tmp_path / "absent"), str(tmp_path / "out.json"), "--model", str(tmp_path)]) == 0
    assert capsys.readouterr().out.startswith("skipped: no clembench checkout at")
    assert not (tmp_path / "out.json").exists()


def test_a_game_without_the_instances_file_exits_2_naming_it(real_games, tmp_path, capsys):
    _game(tmp_path / "bench", "g1", {"a": 3})
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    code = real_games.main([str(tmp_path / "bench"), str(tmp_path / "out.json"), "--model", str(model),
                            "--games", "g1", "g2"])
    assert code == 2
    err = capsys.readouterr().err
    assert "no in/instances.json in g2 under" in err and "g1" not in err


def test_the_trimmed_copy_keeps_the_first_instances_of_each_experiment_and_leaves_the_checkout(real_games, tmp_path):
    source = _game(tmp_path / "bench", "g1", {"a": 3, "b": 1})
    before = (source / "in" / "instances.json").read_text()
    name = real_games.trimmed_suite(tmp_path / "bench", ["g1"], "instances", 2, tmp_path / "copy")
    trimmed = json.loads((tmp_path / "copy" / "g1" / "in" / f"{name}.json").read_text())
    assert [[i["game_id"] for i in e["game_instances"]] for e in trimmed["experiments"]] == [[0, 1], [0]]
    assert sorted(p.name for p in (source / "in").iterdir()) == ["instances.json"]
    assert (source / "in" / "instances.json").read_text() == before


def test_scores_compare_per_episode_with_nan_equal_to_nan(real_games, tmp_path):
    from playprm.bench.episodes import episode_scores

    def write(root: Path, key: str, scores: dict):
        folder = root / "model" / key
        folder.mkdir(parents=True)
        (folder / "scores.json").write_text(json.dumps({"episode scores": scores}))

    for root in (tmp_path / "ours", tmp_path / "clem"):
        write(root, "g/a/instance_00000", {"Main Score": float("nan"), "Aborted": 1})
    write(tmp_path / "ours", "g/a/instance_00001", {"Main Score": 100.0})
    write(tmp_path / "clem", "g/a/instance_00001", {"Main Score": 0.0})
    write(tmp_path / "clem", "g/b/instance_00000", {"Main Score": 0.0})
    check = real_games.compare_scores(episode_scores(tmp_path / "ours"), episode_scores(tmp_path / "clem"))
    assert check == {"playprm_episodes": 2, "clem_episodes": 3, "both": 2, "same_scores": 1,
                     "different": ["g/a/instance_00001"]}
