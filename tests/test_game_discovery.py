"""Finding games and instances: precedence of sources, user errors, and clemcore's own CLI on the games."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from playprm.cli import main
from playprm.errors import UsageError
from playprm.games.registry import (
    builtin_games_dir,
    discover_games,
    is_static,
    load_instances,
    resolve_games,
    write_game_registry,
)

REPO_ROOT = Path(__file__).resolve().parents[1]
CLEM = Path(sys.executable).parent / "clem"  # clemcore's CLI from the same environment as the tests
BUILTIN = {"wordle", "taboo", "referencegame", "arithmetic", "mastermind", "guessthenumber"}


def clem(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(CLEM), *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def listed_games(output: str) -> set[str]:
    return {line[:-1] for line in output.splitlines() if line.endswith(":") and " " not in line}


def make_fake_game(folder: Path, name: str, players: int = 1) -> Path:
    folder.mkdir(parents=True)
    spec = {
        "game_name": name,
        "description": "a fake game",
        "main_game": name,
        "players": players,
        "benchmark": ["fake"],
    }
    (folder / "clemgame.json").write_text(json.dumps(spec))
    (folder / "master.py").write_text("# a fake game\n")
    return folder


def test_builtin_games_are_found_with_their_specs(tmp_path):
    games = discover_games(cwd=tmp_path)
    assert set(games) == BUILTIN
    assert {name: g.players for name, g in games.items()} == {"wordle": 1, "taboo": 2, "referencegame": 2,
                                                              "arithmetic": 1, "mastermind": 1, "guessthenumber": 1}
    assert all(g.source == "built-in" and g.path.parent == builtin_games_dir() for g in games.values())
    # the dialogue games are interactive; only the one-question task is static, tagged as clembench tags its own
    assert {name for name, g in games.items() if g.static} == {"arithmetic"}
    assert "static_1.0" in games["arithmetic"].benchmarks


def test_a_static_game_carries_a_static_version_tag():
    assert is_static(["static_1.0", "standard_1.0"]) and is_static(["static_2"])
    assert not is_static(["static"]) and not is_static(["2.0", "playprm-1.0"]) and not is_static([])


def test_games_dir_game_shadows_builtin_of_the_same_name(tmp_path):
    fake = make_fake_game(tmp_path / "clembench" / "wordle", "wordle")
    make_fake_game(tmp_path / "clembench" / "imagegame", "imagegame", players=2)
    games = discover_games(tmp_path / "clembench", cwd=tmp_path)
    assert games["wordle"].source == "games-dir" and games["wordle"].path == fake.resolve()
    assert games["imagegame"].players == 2 and games["taboo"].source == "built-in"


def test_game_registry_json_entries_override_builtin_and_games_dir_overrides_them(tmp_path):
    own = make_fake_game(tmp_path / "mine" / "taboo", "taboo", players=2)
    registry = [
        {"game_name": "taboo", "game_path": "mine/taboo", "players": 2},
        {"benchmark_path": str(builtin_games_dir())},
    ]
    (tmp_path / "game_registry.json").write_text(json.dumps(registry))
    games = discover_games(cwd=tmp_path)
    assert games["taboo"].source == "game_registry.json" and games["taboo"].path == own.resolve()
    assert games["wordle"].source == "built-in"  # the same folder listed again is not a shadow
    shadow = make_fake_game(tmp_path / "clembench" / "taboo", "taboo", players=2)
    assert discover_games(tmp_path / "clembench", cwd=tmp_path)["taboo"].path == shadow.resolve()


@pytest.mark.parametrize(
    "content", ["{not json", '{"benchmark_path": "x"}', '[{"game_name": "x"}]', '[{"game_path": "x"}]']
)
def test_corrupt_game_registry_json_is_a_usage_error(tmp_path, content):
    (tmp_path / "game_registry.json").write_text(content)
    with pytest.raises(UsageError, match="game_registry.json"):
        discover_games(cwd=tmp_path)


def test_missing_or_empty_games_dir_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="not a directory"):
        discover_games(tmp_path / "missing", cwd=tmp_path)
    (tmp_path / "file").write_text("")
    with pytest.raises(UsageError, match="not a directory"):
        discover_games(tmp_path / "file", cwd=tmp_path)
    (tmp_path / "empty").mkdir()
    with pytest.raises(UsageError, match="no clemgame.json"):
        discover_games(tmp_path / "empty", cwd=tmp_path)


def test_unknown_game_lists_the_available_ones(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError) as error:
        resolve_games(["wordle", "chess"], all_games=False)
    assert str(error.value) == (
        "unknown game 'chess'; available: arithmetic, guessthenumber, mastermind, referencegame, taboo, wordle "
        "(add --games-dir DIR for clembench games)"
    )


def test_resolve_games_by_name_or_all(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert [g.name for g in resolve_games(["taboo", "wordle", "taboo"], all_games=False)] == [
        "taboo",
        "wordle",
    ]
    assert [g.name for g in resolve_games(None, all_games=True)] == ["arithmetic", "guessthenumber", "mastermind",
                                                                      "referencegame", "taboo", "wordle"]
    with pytest.raises(UsageError, match="not both"):
        resolve_games(["taboo"], all_games=True)
    with pytest.raises(UsageError, match="no game given"):
        resolve_games([], all_games=False)


def test_load_instances_keeps_file_order_and_limits_each_experiment(tmp_path):
    wordle = discover_games(cwd=tmp_path)["wordle"]
    pairs = load_instances(wordle, limit=3)
    assert [e["name"] for e, _ in pairs] == ["high_frequency_words"] * 3 + ["medium_frequency_words"] * 3
    assert all("game_instances" not in e for e, _ in pairs)
    assert [i["game_id"] for _, i in pairs] == [0, 1, 2, 10, 11, 12]
    only = load_instances(wordle, experiments=["medium_frequency_words"])
    assert len(only) == 10 and {e["name"] for e, _ in only} == {"medium_frequency_words"}
    with pytest.raises(UsageError, match="unknown experiment"):
        load_instances(wordle, experiments=["nope"])
    with pytest.raises(UsageError, match="at least 1"):
        load_instances(wordle, limit=0)


@pytest.mark.parametrize(
    "content",
    [
        None,
        "",
        "[1, 2]",
        '{"experiments": []}',
        '{"experiments": [{"name": "a", "game_instances": []}]}',
        '{"experiments": [{"name": "a", "game_instances": [{"x": 1}]}]}',
        '{"experiments": [{"game_instances": [{"game_id": 1}]}]}',
    ],
)
def test_missing_empty_or_ill_shaped_instances_file_is_a_usage_error_naming_it(tmp_path, content):
    make_fake_game(tmp_path / "games" / "fake", "fake")
    if content is not None:
        (tmp_path / "games" / "fake" / "in").mkdir()
        (tmp_path / "games" / "fake" / "in" / "instances.json").write_text(content)
    fake = discover_games(tmp_path / "games", cwd=tmp_path)["fake"]
    with pytest.raises(UsageError, match="instances.json"):
        load_instances(fake)


def test_validating_instances_does_not_import_torch():
    code = (
        "import sys; from playprm.games.registry import discover_games, load_instances; "
        "games = discover_games(); [load_instances(g) for g in games.values()]; "
        "assert 'torch' not in sys.modules, 'torch imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO_ROOT, timeout=120)


def test_write_game_registry_keeps_entries_and_adds_builtin_once(tmp_path):
    (tmp_path / "game_registry.json").write_text(json.dumps([{"benchmark_path": "clembench"}]))
    path = write_game_registry(tmp_path)
    write_game_registry(tmp_path)
    assert json.loads(path.read_text()) == [
        {"benchmark_path": "clembench"},
        {"benchmark_path": str(builtin_games_dir())},
    ]
    assert [p.name for p in tmp_path.iterdir()] == ["game_registry.json"]  # no temp file left behind
    (tmp_path / "game_registry.json").write_text("{")
    with pytest.raises(UsageError, match="not valid JSON"):
        write_game_registry(tmp_path)


def test_playprm_games_prints_a_table_and_registers(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["games", "--register"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].split() == ["name", "players", "source", "benchmarks", "path"]
    assert lines[1].split()[:4] == ["arithmetic", "1", "built-in", "static_1.0,playprm-1.0"]
    assert lines[2].split()[:4] == ["guessthenumber", "1", "built-in", "playprm-1.0"]
    assert lines[3].split()[:4] == ["mastermind", "1", "built-in", "playprm-1.0"]
    assert lines[4].split()[:4] == ["referencegame", "2", "built-in", "playprm-1.0"]
    assert f"wrote {tmp_path / 'game_registry.json'}" in out
    assert main(["games", "--games-dir", str(tmp_path / "missing")]) == 2
    assert "--games-dir" in capsys.readouterr().err


def test_clem_list_games_sees_builtin_games_from_repo_root_and_registered_workspace(tmp_path):
    from_root = clem("list", "games", cwd=REPO_ROOT)
    assert from_root.returncode == 0, from_root.stderr
    assert BUILTIN <= listed_games(from_root.stdout)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    write_game_registry(workspace)  # without it clem finds no game here: none below it, no CLEMBENCH_HOME
    registered = clem("list", "games", cwd=workspace)
    assert BUILTIN <= listed_games(registered.stdout), registered.stdout + registered.stderr


def test_clem_run_and_score_wordle_with_mock_model(tmp_path):
    results = tmp_path / "results"
    run = clem("run", "-g", "wordle", "-m", "mock", "-r", str(results), cwd=REPO_ROOT)
    assert run.returncode == 0, run.stderr[-2000:]
    score = clem("score", "-r", str(results), cwd=REPO_ROOT)
    assert score.returncode == 0, score.stderr[-2000:]
    episodes = sorted(results.glob("mock/wordle/*/instance_*/"))
    assert len(episodes) == 20
    outcomes = []
    for episode in episodes:
        assert (episode / "completed.json").is_file()
        scores = json.loads((episode / "scores.json").read_text())["episode scores"]
        outcomes.append((scores["Aborted"], scores["Success"], scores["Lose"]))
        assert 0 <= scores["Main Score"] <= 100
    assert {o for o in outcomes} <= {(0, 1, 0), (0, 0, 1)} and (0, 1, 0) in outcomes
