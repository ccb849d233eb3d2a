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
from external_games import draws, write_game

from playprm.models.base import Candidate, PolicySpec
from playprm.play.config import EvalConfig
from playprm.play.wiring import run_eval


class Says:
    """A policy that always says ``text`` (as clem run's mock player of the draw games says ``draw``)."""

    def __init__(self, text: str = "draw"):
        self.spec = PolicySpec(name="says", backend="scripted", model_id="says")
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
