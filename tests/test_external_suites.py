"""Game suites nobody on playprm wrote, played as clemcore's ``clem run`` plays them: games on the base
``GameMaster``, a game that raises mid-episode beside a healthy one, and games that draw from the process-wide
``random`` after setup, in a batch. The games are written by ``external_games``; ``clem run -m mock`` plays the
same folder once per module (about 6 s)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from external_games import DRAW_MASTER, draws, write_game

from playprm.cli import main
from playprm.commands import build_parser
from playprm.commands.eval import config_from_args
from playprm.models.base import Candidate, PolicySpec
from playprm.play.config import EvalConfig
from playprm.play.wiring import run_eval


class Says:
    """A policy that always says ``text`` (as clem run's mock player of the draw games says ``draw``)."""

    def __init__(self, text: str = "draw"):
        self.spec = PolicySpec(name="says", backend="test", model_id="says")
        self.text = text

    def generate(self, contexts, *, n=1, temperature=0.0, max_tokens=256, seed=None, prefixes=None):
        return [[Candidate(text=self.text, num_tokens=1, logprob=0.0) for _ in range(n)] for _ in contexts]


DRAWS = {"instances": {"small": [{"seed": 1, "turns": 3}, {"seed": 2, "turns": 3}],
                       "large": [{"seed": 3, "turns": 4}, {"seed": 1, "turns": 2}]}}


def clem(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """clemcore's own CLI, run in ``cwd`` (its game_registry.json there)."""
    binary = Path(sys.executable).with_name("clem")
    run = subprocess.run([str(binary), *args], cwd=cwd, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert run.returncode == 0, run.stderr[-2000:]
    return run


@pytest.fixture(scope="module")
def suite(tmp_path_factory) -> Path:
    """A workspace with draw games that clem sees (game_registry.json) and clem run's mock results of drawgame."""
    root = tmp_path_factory.mktemp("suite")
    write_game(root / "games", "drawgame", DRAWS)
    write_game(root / "games", "raisegame", {"instances": {"e": [{"seed": 5, "turns": 3, "raise_at": 2}]}})
    broken = write_game(root / "games", "brokengame", {"instances": {"e": [{"seed": 5, "turns": 1}]}},
                        master="import missing_solver_pkg  # noqa\n" + DRAW_MASTER)
    (broken / "requirements.txt").write_text("missing_solver_pkg\n")
    banner = "raise LookupError('\\n' + '*' * 70 + '\\n  Resource corpus not found.\\n  Download it.\\n' + '*' * 70)\n"
    write_game(root / "games", "bannergame", {"instances": {"e": [{"seed": 5, "turns": 1}]}}, master=banner)
    (root / "game_registry.json").write_text(json.dumps([{"benchmark_path": "games"}]))
    clem("run", "-g", "drawgame", "-m", "mock", "-r", "clem-results", cwd=root)
    clem("score", "-g", "drawgame", "-r", "clem-results", cwd=root)
    return root


def episodes(run_dir: Path) -> dict[str, Path]:
    """``game/experiment/instance_NNNNN`` -> episode folder of every episode that played to its end."""
    return {p.parent.relative_to(run_dir).as_posix(): p.parent for p in run_dir.rglob("interactions.json")}


def play(suite: Path, games: list[str], results: str, *, batch_size: int) -> tuple[Path, object]:
    cfg = EvalConfig(policy_model="says", games=games, games_dir=suite / "games", results_dir=suite / results,
                     batch_size=batch_size)
    return run_eval(cfg, policy=Says(), progress=False)


def test_games_are_named_as_clem_run_names_them():
    args = build_parser().parse_args(["eval", "--policy-model", "m", "-g", "a", "b", "--game", "c", "-e", "x"])
    assert args.games == ["a", "b", "c"] and args.experiment == "x"


def test_a_base_game_master_game_plays_to_its_scores_as_clem_run_plays_it(suite):
    run_dir, summary = play(suite, ["drawgame"], "alone", batch_size=1)
    ours = episodes(run_dir)
    theirs = episodes(suite / "clem-results" / "mock")
    assert sorted(ours) == sorted(theirs) and len(ours) == 4
    for key, episode in ours.items():
        assert draws(episode) == draws(theirs[key])
        scores = json.loads((episode / "scores.json").read_text())["episode scores"]
        assert scores == json.loads((theirs[key] / "scores.json").read_text())["episode scores"]
    assert summary.played["drawgame"] == 4 and summary.outcomes["success"] == 4


def test_batched_episodes_draw_what_each_draws_alone_and_under_clem_run(suite):
    # every episode seeds the global random at setup; a batch sets all four up before the first draw
    run_dir, _ = play(suite, ["drawgame"], "batched", batch_size=8)
    theirs = episodes(suite / "clem-results" / "mock")
    ours = episodes(run_dir)
    assert {key: draws(e) for key, e in ours.items()} == {key: draws(e) for key, e in theirs.items()}
    assert len({json.dumps(draws(e)) for e in ours.values()}) == 4  # the seeds differ, so do the draws


def test_a_game_that_raises_fails_only_its_own_episodes(suite):
    run_dir, summary = play(suite, ["raisegame", "drawgame"], "mixed", batch_size=8)
    assert sorted(episodes(run_dir)) == sorted(episodes(suite / "clem-results" / "mock"))
    [error_file] = run_dir.rglob("error.json")
    assert error_file.parent.relative_to(run_dir).as_posix() == "raisegame/e/instance_00000"
    error = json.loads(error_file.read_text())
    assert error["error"] == "RuntimeError" and error["message"] == "raisegame broke on purpose in turn 2"
    assert summary.played == {"drawgame": 4} and summary.errored == {"raisegame": 1}
    assert "  raisegame: 0 played, 1 errored" in summary.lines()


@pytest.mark.parametrize("game, says", [
    ("brokengame", ["it imports 'missing_solver_pkg', which is not installed at ", "brokengame/master.py:1",
                    "pip install -r "]),
    ("bannergame", ["LookupError: Resource corpus not found. Download it. at ", "bannergame/master.py:1"]),
])
def test_a_game_that_cannot_load_stops_the_command_before_any_model_in_one_line(suite, capsys, game, says):
    results = suite / "stopped"
    # a hub id that is not there: loading it would fail with another message, later
    code = main(["eval", "--policy-model", "nobody/no-such-model", "--games-dir", str(suite / "games"),
                 "--game", "drawgame", "--game", game, "--results-dir", str(results)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert f"game {game} cannot load: " in err and "--skip-broken-games" in err
    assert all(part in err for part in says), err
    assert not results.exists()


def test_skip_broken_games_plays_the_others_and_records_the_real_error(suite):
    cfg = EvalConfig(policy_model="says", games=["brokengame", "drawgame"], games_dir=suite / "games",
                     results_dir=suite / "skipped", skip_broken_games=True)
    run_dir, summary = run_eval(cfg, policy=Says(), progress=False)
    assert summary.played == {"drawgame": 4} and summary.errored == {"brokengame": 1}
    error = json.loads((run_dir / "brokengame" / "e" / "instance_00000" / "error.json").read_text())
    assert error["error"] == "ModuleNotFoundError" and error["message"] == "No module named 'missing_solver_pkg'"
    assert "import missing_solver_pkg" in error["traceback"] and "NoneType: None" not in error["traceback"]
    recorded = json.loads((run_dir / "playprm_run.json").read_text())
    assert "missing_solver_pkg" in json.dumps(recorded)


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Path:
    """A clembench-like checkout: three games with benchmark tags, two instances files each, two experiments."""
    root = tmp_path_factory.mktemp("checkout")
    for offset, (name, tags) in enumerate({"alpha": ["v1", "v2"], "beta": ["v2"], "gamma": ["v1"]}.items()):
        files = {"instances": {"small": [{"seed": offset, "turns": 1}], "large": [{"seed": 9, "turns": 2}]},
                 "hard": {"small": [{"seed": 10 + offset, "turns": 2}, {"seed": 20 + offset, "turns": 1}],
                          "large": [{"seed": 30, "turns": 3}]}}
        if name == "gamma":
            files["instances"]["solo"] = [{"seed": 40, "turns": 1}]
        write_game(root / "clembench", name, files, benchmark=tags)
    (root / "game_registry.json").write_text(json.dumps([{"benchmark_path": "clembench"}]))
    return root


def test_collect_skips_broken_games_as_eval_does_and_records_them(suite):
    from playprm.play.collect import CollectSettings, run_collect

    run_dir, summary = run_collect("says", ["brokengame", "drawgame"], False, suite / "games", 1,
                                   suite / "rollouts", CollectSettings(samples_per_instance=1), skip_broken_games=True,
                                   policy=Says(), progress=False)
    assert summary.played == {"drawgame": 2} and summary.errored == {"brokengame": 1}
    [error_file] = run_dir.rglob("error.json")
    assert json.loads(error_file.read_text())["message"] == "No module named 'missing_solver_pkg'"


def test_experiment_instances_and_spec_selectors_plan_the_episodes_clem_run_plays(checkout):
    selector = "{'benchmark': ['v2']}"
    clem("run", "-g", selector, "-m", "mock", "-e", "small", "-i", "hard", "-r", "clem-results", cwd=checkout)
    theirs = episodes(checkout / "clem-results" / "mock")
    args = build_parser().parse_args(["eval", "--policy-model", "says", "--games-dir", str(checkout / "clembench"),
                                      "-g", selector, "-e", "small", "-i", "hard", "--results-dir",
                                      str(checkout / "ours")])
    cfg = config_from_args(args)
    run_dir, _ = run_eval(cfg, policy=Says(), progress=False)
    ours = episodes(run_dir)
    assert sorted(ours) == sorted(theirs) == ["alpha/small/instance_00000", "alpha/small/instance_00001",
                                              "beta/small/instance_00000", "beta/small/instance_00001"]
    assert {key: draws(e) for key, e in ours.items()} == {key: draws(e) for key, e in theirs.items()}


def test_games_without_the_experiment_drop_out_as_clem_run_plays_none_of_theirs(checkout):
    from playprm.play.job import prepare_games

    entries, instances = prepare_games(["{'benchmark': ['v1']}"], False, checkout / "clembench", None,
                                       experiment="solo")
    assert [entry.name for entry in entries] == ["gamma"] and list(instances) == ["gamma"]
    assert [(e["name"], i["seed"]) for e, i in instances["gamma"]] == [("solo", 40)]


@pytest.mark.parametrize("flags, message", [
    (["-g", "alpha", "-e", "medium"], "--experiment medium: no selected game has it; their experiments: large, small"),
    (["-g", "alpha", "-e", "solo"], "--experiment solo: no selected game has it"),
    (["-g", "alpha", "-i", "easy"], "alpha: --instances easy: no "),
    (["-g", "{'benchmark': ['v9']}"], "game selector {'benchmark': ['v9']} selects no game"),
    (["-g", "{'benchmark': ['v2'"], "is not a GameSpec dict"),
])
def test_a_selection_that_plays_nothing_is_one_line_before_anything_loads(checkout, capsys, flags, message):
    code = main(["eval", "--policy-model", "nobody/no-such-model", "--games-dir", str(checkout / "clembench"),
                 *flags, "--results-dir", str(checkout / "none")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and message in err, err
    assert not (checkout / "none").exists()


@pytest.mark.parametrize("argv", [
    ["eval", "--policy-model", "programmatic:expert"],
    ["eval", "--policy-model", "scripted:random-valid"],
    ["collect", "--policy-model", "scripted:random-valid"],
    ["collect", "--policy-model", "nobody/no-such-model", "--branch-factor", "2", "--prover", "programmatic:expert"],
])
def test_scripted_players_refuse_a_game_they_have_no_moves_for_before_the_run(suite, capsys, argv):
    results = suite / "scripted"
    code = main([*argv, "--games-dir", str(suite / "games"), "--game", "drawgame", "--results-dir", str(results)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert "has moves only for playprm's built-in games" in err and "drawgame (" in err, err
    assert not results.exists()


def test_scripted_players_still_play_a_copy_of_a_built_in_game(tmp_path):
    import shutil

    from playprm.games.registry import builtin_games_dir

    shutil.copytree(builtin_games_dir() / "wordle", tmp_path / "games" / "wordle")
    cfg = EvalConfig(policy_model="scripted:random-valid", games=["wordle"], games_dir=tmp_path / "games", limit=1,
                     results_dir=tmp_path / "r")
    _, summary = run_eval(cfg, progress=False)
    assert summary.played == {"wordle": 2} and not summary.errored  # one instance of each experiment


def test_registered_games_dirs_are_what_clem_list_games_shows(suite, checkout, tmp_path, monkeypatch, capsys):
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    monkeypatch.chdir(workspace)
    assert main(["games", "--games-dir", str(checkout / "clembench"), "--register"]) == 0
    assert main(["register", "--dir", str(workspace), "--games-dir", str(suite / "games")]) == 0
    assert main(["register", "--dir", str(workspace), "--games-dir", str(suite / "games")]) == 0  # kept once
    listed = clem("list", "games", cwd=workspace).stdout
    for game in ("alpha", "beta", "gamma", "drawgame", "raisegame", "wordle", "taboo"):
        assert f"\n{game}:" in listed or listed.startswith(f"{game}:"), listed[-2000:]
    entries = json.loads((workspace / "game_registry.json").read_text())
    assert len(entries) == 3 and entries[0] == {"benchmark_path": str((suite / "games").resolve())}


def test_scripted_players_say_when_a_built_in_games_copy_comes_from_another_version(tmp_path, capsys):
    import shutil

    from playprm.games.registry import builtin_games_dir

    copy = tmp_path / "games" / "wordle"
    shutil.copytree(builtin_games_dir() / "wordle", copy)
    (copy / "master.py").write_text((copy / "master.py").read_text() + "\n# an older version\n")
    code = main(["eval", "--policy-model", "programmatic:expert", "--games-dir", str(tmp_path / "games"),
                     "--game", "wordle", "--results-dir", str(tmp_path / "r")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert "another playprm version's built-in game" in err and "playprm instances" in err, err
    assert not (tmp_path / "r").exists()
