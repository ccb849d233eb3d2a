"""Arithmetic, a static task for one player: one question, one reply, scored by exact match.

Written for playprm as a small offline stand-in for clembench's static tasks (``static/``: bbh, mmlu_pro, ...),
so that statscore exists without a clembench checkout. Like them it is tagged ``static_1.0`` in clemgame.json
and asks one question per episode.

Protocol: the solver is asked for ``a + b`` or ``a * b`` and replies with the number only. The reply, with
surrounding whitespace removed, must equal the answer's digits exactly (``81``, not ``81.`` or ``The answer is
81``). There is no reply format to break, so an episode is never aborted: it is won or lost.

Scores: ``Main Score`` 100 for an exact match, 0 otherwise; per round ``Exact Match`` (0/1).
"""

from __future__ import annotations

from clemcore.backends import Model
from clemcore.clemgame import GameBenchmark, Player
from clemcore.clemgame.metrics import BENCH_SCORE, METRIC_SUCCESS

from playprm.games.builtin.base import OutcomeScorer, PromptedGameMaster, gm_notes


class Solver(Player):
    """The solver. Its programmatic move (model ``mock``) gives the right answer."""

    def __init__(self, model: Model, answer: str):
        super().__init__(model, game_role="Solver")
        self._answer = answer

    def _custom_response(self, context: dict) -> str:
        return self._answer


class Arithmetic(PromptedGameMaster):
    """One round: the question, the reply, the verdict."""

    def _on_setup(self, **game_instance):
        self.answer: str = str(game_instance["answer"])
        self.reply: str | None = None
        self.solver = Solver(self.player_models[0], self.answer)
        self.add_player(self.solver, initial_context=self.template(
            "question", left=game_instance["left"], operator=game_instance["operator"],
            right=game_instance["right"]))

    def _parse_response(self, player: Player, response: str) -> str:
        return response.strip()

    def _advance_game(self, player: Player, reply: str):
        self.reply = reply
        correct = reply == self.answer
        self.log_to_self("answer", {"reply": reply, "answer": self.answer, "correct": correct})
        if correct:
            self.state.succeed()
        else:
            self.state.failed()

    def episode_facts(self) -> dict:
        return {"answer": self.answer, "reply": self.reply}


class ArithmeticScorer(OutcomeScorer):
    """Per round: exact match (0/1); per episode: Main Score 100 or 0."""

    def compute_round_score(self, round_idx, round_events: list[dict]) -> None:
        for note in gm_notes(round_events, "answer"):
            self.log_round_score(round_idx, "Exact Match", int(note["correct"]))

    def episode_scores(self, interactions: dict) -> dict[str, float]:
        return {BENCH_SCORE: 100 if interactions[METRIC_SUCCESS] else 0}


class ArithmeticBenchmark(GameBenchmark):
    """Entry point clemcore loads from this file."""

    def create_game_master(self, experiment: dict, player_models: list[Model]) -> Arithmetic:
        return Arithmetic(self.game_spec, experiment, player_models)

    def create_game_scorer(self, experiment: dict, game_instance: dict) -> ArithmeticScorer:
        return ArithmeticScorer(self.game_name, experiment, game_instance)
