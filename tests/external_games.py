"""Small external games that tests write into a folder, as a clembench checkout holds them: nobody on playprm
wrote them and playprm's code never imports them.

``draw`` games are built on clemcore's base ``GameMaster`` (``setup / step / get_players / get_context_for``,
no rounds): the player says anything, the game draws a number from Python's global ``random`` (seeded at
setup from the instance) and one from numpy's, and logs both; after ``turns`` draws it ends in success. An
instance with ``raise_at`` raises in that step, as a game with a bug does. ``mock`` (clem run's programmatic
player) answers ``draw``.
"""

from __future__ import annotations

import json
from pathlib import Path

DRAW_MASTER = '''
import random

import numpy
from clemcore.clemgame import GameBenchmark, GameMaster, GameScorer, Player
from clemcore.clemgame.metrics import BENCH_SCORE, METRIC_ABORTED, METRIC_LOSE, METRIC_SUCCESS


class Drawer(Player):
    def _custom_response(self, context):
        return "draw"


class DrawMaster(GameMaster):
    def setup(self, seed, turns, raise_at=None, **kwargs):
        random.seed(seed)
        numpy.random.seed(seed)
        self.turns, self.raise_at, self.turn = turns, raise_at, 0
        self.player = Drawer(self.player_models[0], name="Player 1", game_role="Drawer")
        self._current_player = self.player
        self.context = {"role": "user", "content": "Say draw."}

    def before_game(self):
        pass

    def get_players(self):
        return [self.player]

    def get_context_for(self, player):
        return self.context

    def step(self, response):
        self.log_player_to_gm(response, self.player)
        self.count_request()
        self.turn += 1
        if self.turn == self.raise_at:
            raise RuntimeError(f"{self.game_spec.game_name} broke on purpose in turn {self.turn}")
        draws = [random.randint(1, 10**6), int(numpy.random.randint(1, 10**6))]
        self.log_to_self("draw", draws)
        self.context = {"role": "user", "content": f"You drew {draws}. Say draw."}
        if self.turn < self.turns:
            return False, {}
        self.state.succeed()
        for key, value in ((METRIC_SUCCESS, 1), (METRIC_LOSE, 0), (METRIC_ABORTED, 0)):
            self.log_key(key, value)
        self.log_game_end()
        return True, {}


class DrawScorer(GameScorer):
    def compute_round_score(self, round_idx, round_events):
        pass

    def compute_episode_scores(self, interactions):
        self.log_episode_score(BENCH_SCORE, 100.0 * interactions[METRIC_SUCCESS])


class DrawGame(GameBenchmark):
    def create_game_master(self, experiment, player_models):
        return DrawMaster(self.game_spec, experiment, player_models)

    def create_game_scorer(self, experiment, game_instance):
        return DrawScorer(self.game_spec.game_name, experiment, game_instance)
'''


def write_game(root: Path, name: str, instances: dict[str, dict[str, list[dict]]], *, master: str = DRAW_MASTER,
               benchmark: list[str] | None = None) -> Path:
    """Write game ``name`` into ``root/name``: its clemgame.json, master.py and one instances file per key of
    ``instances`` (``{file name: {experiment: [instance, ...]}}``, ``game_id`` numbered from 0)."""
    folder = root / name
    (folder / "in").mkdir(parents=True)
    spec = {"game_name": name, "description": f"{name}, a test game", "main_game": name, "players": 1,
            "image": "none", "languages": ["en"], "benchmark": benchmark or ["test-1.0"], "roles": ["Drawer"]}
    (folder / "clemgame.json").write_text(json.dumps(spec))
    (folder / "master.py").write_text(master)
    for file_name, experiments in instances.items():
        data = {"experiments": [{"name": experiment, "game_instances": [{"game_id": i, **row}
                                                                          for i, row in enumerate(rows)]}
                                for experiment, rows in experiments.items()]}
        (folder / "in" / f"{file_name}.json").write_text(json.dumps(data))
    return folder


def draws(episode: Path) -> list:
    """The numbers a draw game's episode drew, in order (from its interactions.json)."""
    turns = json.loads((episode / "interactions.json").read_text())["turns"]
    return [e["action"]["content"] for events in turns for e in events if e["action"]["type"] == "draw"]
