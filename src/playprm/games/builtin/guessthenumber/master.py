"""Guess the number for one player: find a secret number from 1 to 100 with higher/lower hints.

TextArena's GuessTheNumber-v0 in its hardcore range (1 to 100) as a clemcore game, written for playprm (own code
and wording): the guess is the last number of a reply in square brackets (``[50]``), answered with whether the
secret number is higher or lower. What differs (docs/games.md): ten guesses, not twenty, so that a guesser who
ignores the hints runs out (it wins about one game in ten) while one who keeps inside them rarely does (87 % of a
random consistent guesser's games, every game of bisection within seven); the score counts speed as clembench's
wordle does (``100 * (max_guesses + 1 - guesses) / max_guesses`` on a win, 0 on a loss, NaN when aborted); a
reply without a bracketed number from 1 to 100 aborts the episode; a repeated guess costs a guess.

Scores: ``Main Score``, ``Guesses Used``, ``Repeated Guesses``; per round ``Fits Hints`` (1 when the round's guess
lies inside every earlier hint).
"""

from __future__ import annotations

from clemcore.backends import Model
from clemcore.clemgame import GameBenchmark, ParseError, Player

from playprm.games.builtin.base import GuessingScorer, PromptedGameMaster, gm_notes
from playprm.games.builtin.guessthenumber import rules


class NumberGuesser(Player):
    """The guesser. Its programmatic move (model ``mock``) bisects the numbers the hints leave."""

    def __init__(self, model: Model):
        super().__init__(model, game_role="Guesser")
        self._history: list = []

    def _custom_response(self, context: dict) -> str:
        self._history += rules.read_feedback(context["content"])
        left = rules.options(tuple(self._history))
        return f"[{left[(len(left) - 1) // 2]}]"


class GuessTheNumber(PromptedGameMaster):
    """One round per guess, until the number is found or the guesses run out."""

    def _on_setup(self, **game_instance):
        self.number: int = int(game_instance["number"])
        self.max_guesses: int = int(game_instance["max_guesses"])
        self.guesses: list[dict] = []
        self.guesser = NumberGuesser(self.player_models[0])
        self.add_player(self.guesser, initial_context=self.template(
            "initial_prompt", lowest=rules.LOWEST, highest=rules.HIGHEST, max_guesses=self.max_guesses))

    def _parse_response(self, player: Player, response: str) -> int:
        from playprm.games.builtin.protocol import strip_reasoning

        guess = rules.last_guess(strip_reasoning(response))
        reason = rules.invalid_reason(guess)
        if reason:
            raise ParseError(reason, response, key="invalid move")
        return guess

    def _advance_game(self, player: Player, guess: int):
        history = tuple((g["guess"], g["hint"]) for g in self.guesses if g["hint"])
        direction = rules.hint(guess, self.number)
        note = {"attempt": len(self.guesses) + 1, "guess": guess, "hint": direction,
                "repeat": any(g["guess"] == guess for g in self.guesses),
                "fits": all(rules.hint(g, guess) == h for g, h in history)}
        left = self.settle_guess(note, direction is None, self.max_guesses)
        if left is None:
            return
        self.set_context_for(self.guesser, self.template(
            "feedback", guess=guess, direction=direction,
            guesses_left=f"You have {left} guess{'es' if left != 1 else ''} left."))

    def episode_facts(self) -> dict:
        return {"number": self.number, "guesses": self.guesses}


class GuessTheNumberScorer(GuessingScorer):
    """Per round whether the guess fit the hints before it; per episode the speed-weighted Main Score, the guesses
    used and the repeated ones."""

    def compute_round_score(self, round_idx, round_events: list[dict]) -> None:
        guesses = gm_notes(round_events, "guess")
        if guesses:
            self.log_round_score(round_idx, "Fits Hints", int(guesses[0]["fits"]))


class GuessTheNumberBenchmark(GameBenchmark):
    """Entry point clemcore loads from this file."""

    def create_game_master(self, experiment: dict, player_models: list[Model]) -> GuessTheNumber:
        return GuessTheNumber(self.game_spec, experiment, player_models)

    def create_game_scorer(self, experiment: dict, game_instance: dict) -> GuessTheNumberScorer:
        return GuessTheNumberScorer(self.game_name, experiment, game_instance)
