"""Reference game for two players: pick out one of three 5x5 grids by a referring expression, in one round.

Written for playprm from the published clembench rules (own code, own prompts).

Protocol: the describer sees the target grid first and then the two distractors (as in clembench's
referencegame), and replies ``EXPRESSION: <text>``; the guesser sees the grids in the order stored in the instance (``guesser_grids``) and
the expression, and replies ``ANSWER: first|second|third`` (``1``/``2``/``3`` count too, and words around the
one label, as in "the second grid", are ignored; naming two labels is ambiguous).

- A reply without exactly one line of its tag, or an answer that names no grid, breaks the format: the episode
  is aborted (ParseError), as in clembench.
- The game is won when the answer names the target in the guesser's order, lost otherwise.

Scores: ``Main Score`` 100 on success, 0 when lost, NaN when aborted; per round ``Success`` (0/1, when the
guesser answered) and ``Expression Words``.
"""

from __future__ import annotations

import re

from clemcore.backends import Model
from clemcore.clemgame import GameBenchmark, ParseError, Player
from clemcore.clemgame.metrics import BENCH_SCORE, METRIC_SUCCESS

from playprm.games.builtin.base import OutcomeScorer, PromptedGameMaster, gm_notes
from playprm.games.builtin.protocol import clean_word, parse_tagged

LABELS = ("first", "second", "third")
_ANSWER_WORDS = {
    **{label: label for label in LABELS},
    "1": "first",
    "2": "second",
    "3": "third",
    "1st": "first",
    "2nd": "second",
    "3rd": "third",
}
_ROWS_MARKER = "rows, top to bottom:"


def grid_rows(grid: str) -> list[str]:
    """The rows of a grid as stored in an instance (cells separated by spaces, rows by newlines)."""
    return [row.strip() for row in grid.strip().splitlines()]


class ReferenceDescriber(Player):
    """The describer. Its programmatic move (model ``mock``) spells out the target's rows."""

    def __init__(self, model: Model, target_grid: str):
        super().__init__(model, game_role="Describer")
        self._target_grid = target_grid

    def _custom_response(self, context: dict) -> str:
        return f"EXPRESSION: the grid whose {_ROWS_MARKER} {' / '.join(grid_rows(self._target_grid))}"


class ReferenceGuesser(Player):
    """The guesser. Its programmatic move (model ``mock``) answers with the grid whose rows the expression
    spells out, and ``first`` when no grid matches."""

    def __init__(self, model: Model, grids: list[str]):
        super().__init__(model, game_role="Guesser")
        self._grids = grids

    def _custom_response(self, context: dict) -> str:
        match = re.search(re.escape(_ROWS_MARKER) + r"(.*)", context["content"])
        rows = [row.strip() for row in match.group(1).split("/")] if match else []
        answer = next(
            (label for label, grid in zip(LABELS, self._grids, strict=True) if grid_rows(grid) == rows),
            LABELS[0],
        )
        return f"ANSWER: {answer}"


class ReferenceGame(PromptedGameMaster):
    """One round: expression, then answer."""

    def _on_setup(self, **game_instance):
        self.describer_grids: list[str] = game_instance["describer_grids"]
        self.guesser_grids: list[str] = game_instance["guesser_grids"]
        self.describer_target: str = game_instance["describer_target"]
        self.guesser_target: str = game_instance["guesser_target"]
        self.answer: str | None = None
        target_grid = self.describer_grids[LABELS.index(self.describer_target)]
        self.describer = ReferenceDescriber(self.player_models[0], target_grid)
        self.guesser = ReferenceGuesser(self.player_models[1], self.guesser_grids)
        self.add_player(
            self.describer,
            initial_context=self.template("describer_prompt", **self._describer_fields()),
        )
        self.add_player(
            self.guesser,
            initial_prompt=self.template("guesser_prompt", **self._grid_fields(self.guesser_grids)),
        )

    def _describer_fields(self) -> dict[str, str]:
        """The target first, then the distractors in the instance's describer order (clembench's layout)."""
        target = LABELS.index(self.describer_target)
        distractors = [grid for i, grid in enumerate(self.describer_grids) if i != target]
        return {"target_grid": self.describer_grids[target], "distractor_1_grid": distractors[0],
                "distractor_2_grid": distractors[1]}

    @staticmethod
    def _grid_fields(grids: list[str]) -> dict[str, str]:
        return {f"{label}_grid": grid for label, grid in zip(LABELS, grids, strict=True)}

    def _parse_response(self, player: Player, response: str) -> str:
        if player is self.describer:
            return parse_tagged(response, "EXPRESSION")
        value = parse_tagged(response, "ANSWER")
        named = {_ANSWER_WORDS[w] for w in map(clean_word, value.split()) if w in _ANSWER_WORDS}
        if len(named) != 1:
            raise ParseError(
                f"the ANSWER: line must name one of first, second or third, not {value!r}",
                response,
                key="not a grid",
            )
        return named.pop()

    def _advance_game(self, player: Player, parsed_response: str):
        if player is self.describer:
            self.log_to_self("expression", {"expression": parsed_response})
            self.set_context_for(self.guesser, self.template("expression", expression=parsed_response))
            return
        self.answer = parsed_response
        correct = parsed_response == self.guesser_target
        self.log_to_self(
            "answer", {"answer": parsed_response, "target": self.guesser_target, "correct": correct}
        )
        if correct:
            self.state.succeed()
        else:
            self.state.failed()

    def episode_facts(self) -> dict:
        return {"guesser_target": self.guesser_target, "answer": self.answer}


class ReferenceGameScorer(OutcomeScorer):
    """Per round: expression length and answer correctness; per episode: Main Score 100, 0 or NaN."""

    def compute_round_score(self, round_idx, round_events: list[dict]) -> None:
        for note in gm_notes(round_events, "expression"):
            self.log_round_score(round_idx, "Expression Words", len(note["expression"].split()))
        for note in gm_notes(round_events, "answer"):
            self.log_round_score(round_idx, "Success", int(note["correct"]))

    def episode_scores(self, interactions: dict) -> dict[str, float]:
        return {BENCH_SCORE: 100 if interactions[METRIC_SUCCESS] else 0}


class ReferenceGameBenchmark(GameBenchmark):
    """Entry point clemcore loads from this file."""

    def create_game_master(self, experiment: dict, player_models: list[Model]) -> ReferenceGame:
        return ReferenceGame(self.game_spec, experiment, player_models)

    def create_game_scorer(self, experiment: dict, game_instance: dict) -> ReferenceGameScorer:
        return ReferenceGameScorer(self.game_name, experiment, game_instance)
