"""Games written into a test's folder for train-grpo: one a tiny random-weight model learns in a few steps, one
whose two players take several turns whatever they say, and one that rewrites its player's history.

``firstletter`` (the tiny GRPO recipe's example game, ``examples/games/firstletter``): one player, one turn. The
player is asked for a word; the episode is won (Main Score 100) when the reply starts with a letter from the first
half of the alphabet, else lost (0). A random tiny model wins about half its episodes, so every group has a spread
of rewards, and the first token decides the outcome.

``relay``: two players, three rounds; each round the first player speaks, then the second hears it and speaks; no
reply aborts the game (the built-in games abort on a random model's first reply). Always won; its Main Score is the
share of the six replies that start with a letter from the first half of the alphabet (a spread of rewards).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

FIRSTLETTER = Path(__file__).resolve().parents[1] / "examples" / "games" / "firstletter"


def write_firstletter(games_dir: Path, instances: int = 8) -> Path:
    """``games_dir/firstletter``: the example game of the tiny GRPO recipe (``examples/games/firstletter``) with
    ``instances`` instances; returns ``games_dir``."""
    folder = Path(games_dir) / "firstletter"
    shutil.copytree(FIRSTLETTER, folder, dirs_exist_ok=True)
    topics = ["cats", "rain", "music", "bread", "trees", "ships", "snow", "stars", "roads", "fish"]
    (folder / "in" / "instances.json").write_text(json.dumps({"experiments": [{"name": "words", "game_instances": [
        {"game_id": i, "topic": topics[i % len(topics)]} for i in range(instances)]}]}))
    return Path(games_dir)


RELAY = '''
from clemcore.clemgame import GameBenchmark, Player
from clemcore.clemgame.metrics import BENCH_SCORE

from playprm.games.builtin.base import OutcomeScorer, PromptedGameMaster

ROUNDS = 3


class Talker(Player):
    def __init__(self, model, role):
        super().__init__(model, game_role=role)

    def _custom_response(self, context):
        return "hello"


class Relay(PromptedGameMaster):
    def _on_setup(self, **game_instance):
        self.replies = 0
        self.first = Talker(self.player_models[0], "First")
        self.second = Talker(self.player_models[1], "Second")
        self.add_player(self.first, initial_context=self.template("first", topic=game_instance["topic"]))
        self.add_player(self.second, initial_prompt=self.template("second", topic=game_instance["topic"]))

    def _parse_response(self, player, response):
        return response.strip()

    def _advance_game(self, player, reply):
        self.replies += 1
        self.log_to_self("reply", {"early_letter": reply[:1].lower() in "abcdefghijklm" and reply[:1] != ""})
        if player is self.first:
            self.set_context_for(self.second, f"The first player said: {reply}. Your answer?")
        elif self.replies >= 2 * ROUNDS:
            self.state.succeed()
        else:
            self.set_context_for(self.first, f"The second player said: {reply}. Go on.")


class RelayScorer(OutcomeScorer):
    def compute_round_score(self, round_idx, round_events):
        pass

    def episode_scores(self, interactions):
        notes = [event["action"]["content"] for turn in interactions["turns"] for event in turn
                 if event["action"].get("type") == "reply"]
        return {BENCH_SCORE: 100 * sum(note["early_letter"] for note in notes) / len(notes)}


class RelayBenchmark(GameBenchmark):
    def create_game_master(self, experiment, player_models):
        return Relay(self.game_spec, experiment, player_models)

    def create_game_scorer(self, experiment, game_instance):
        return RelayScorer(self.game_name, experiment, game_instance)
'''


def write_relay(games_dir: Path, instances: int = 2) -> Path:
    """``games_dir/relay`` (two players, three rounds, never aborted); returns ``games_dir``."""
    folder = Path(games_dir) / "relay"
    (folder / "resources").mkdir(parents=True, exist_ok=True)
    (folder / "in").mkdir(exist_ok=True)
    (folder / "master.py").write_text(RELAY)
    (folder / "resources" / "first.template").write_text("Talk about $topic with the other player.")
    (folder / "resources" / "second.template").write_text("Answer the other player about $topic.")
    (folder / "clemgame.json").write_text(json.dumps({
        "game_name": "relay", "description": "two players talk for three rounds", "main_game": "relay",
        "players": 2, "image": "none", "languages": ["en"], "benchmark": [], "roles": ["First", "Second"],
        "instances": "instances"}))
    (folder / "in" / "instances.json").write_text(json.dumps({"experiments": [{"name": "talk", "game_instances": [
        {"game_id": i, "topic": topic} for i, topic in enumerate(["cats", "rain", "music", "bread"][:instances])]}]}))
    return Path(games_dir)


AMNESIA = RELAY.replace("""            self.set_context_for(self.first, f"The second player said: {reply}. Go on.")""",
                        """            self.first._messages.clear()  # the first player forgets the game so far
            self.set_context_for(self.first, f"The second player said: {reply}. Go on.")""")


def write_amnesia(games_dir: Path, instances: int = 1) -> Path:
    """``games_dir/amnesia``: relay, except that the first player's history is cleared before its second turn (a
    game that rewrites a player's history, which train-grpo's token rows cannot follow); returns ``games_dir``."""
    write_relay(games_dir, instances)
    folder = Path(games_dir) / "amnesia"
    (Path(games_dir) / "relay").rename(folder)
    (folder / "master.py").write_text(AMNESIA)
    spec = json.loads((folder / "clemgame.json").read_text())
    (folder / "clemgame.json").write_text(json.dumps({**spec, "game_name": "amnesia", "main_game": "amnesia"}))
    return Path(games_dir)
