"""firstletter: a one-turn game for smoke runs of train-grpo on a random-weight model (recipes/tiny/grpo.yaml).

The player is asked for a word about a topic; the episode is won (Main Score 100) when the reply starts with a
letter from the first half of the alphabet, else lost (0). A random tiny model wins about half its episodes, so
every GRPO group has a spread of rewards (the built-in games abort a random model's every reply: every reward 0,
nothing to learn), and the reply's first token decides the outcome.
"""

from clemcore.clemgame import GameBenchmark, Player
from clemcore.clemgame.metrics import BENCH_SCORE, METRIC_SUCCESS

from playprm.games.builtin.base import OutcomeScorer, PromptedGameMaster

WINNING = "abcdefghijklm"


class Speaker(Player):
    def __init__(self, model):
        super().__init__(model, game_role="Speaker")

    def _custom_response(self, context):
        return "apple"


class FirstLetter(PromptedGameMaster):
    def _on_setup(self, **game_instance):
        self.speaker = Speaker(self.player_models[0])
        self.add_player(self.speaker, initial_context=self.template("question", topic=game_instance["topic"]))

    def _parse_response(self, player, response):
        return response.strip()

    def _advance_game(self, player, reply):
        if reply[:1].lower() in WINNING and reply[:1]:
            self.state.succeed()
        else:
            self.state.failed()


class FirstLetterScorer(OutcomeScorer):
    def compute_round_score(self, round_idx, round_events):
        pass

    def episode_scores(self, interactions):
        return {BENCH_SCORE: 100 if interactions[METRIC_SUCCESS] else 0}


class FirstLetterBenchmark(GameBenchmark):
    def create_game_master(self, experiment, player_models):
        return FirstLetter(self.game_spec, experiment, player_models)

    def create_game_scorer(self, experiment, game_instance):
        return FirstLetterScorer(self.game_name, experiment, game_instance)
