"""Mastermind for one player: find a secret code of four different digits from 1 to 6 with peg feedback.

TextArena's Mastermind-v0 (the ``textarena`` package) as a clemcore game, written for playprm (own code): its
code (4 digits from 1 to 6, no repeats), its reply format (the code in square brackets, ``[2 1 4 5]``; the last
bracketed list of a reply counts), its feedback line (``Submitted [1 2 3 4]. Feedback: 0 black peg(s), 3 white
peg(s).``) and its invalid moves (no bracketed list, a wrong number of digits, a digit out of range or given twice).
Two things differ, for a game in which search has something to choose (docs/games.md):

- **Six guesses, not twenty.** A guesser that keeps to all feedback so far never needed more than six in 400
  simulated games (97 % within five; a random consistent code each turn), while one that ignores the feedback
  wins about one game in sixty. Twenty turns let any guesser win.
- **Speed counts, as in clembench's wordle.** ``Main Score`` is ``100 * (max_guesses + 1 - guesses) / max_guesses``
  on a win (100 for a first-guess win, 16.7 on the sixth), 0 on a loss, NaN when aborted; TextArena gives a loss
  partial credit (the last guess's pegs) and counts no speed.

An invalid move aborts the episode (ParseError), as clembench treats a broken format; TextArena also ends the
game on it. A repeated guess is no invalid move here: it costs a guess and gets its pegs again (TextArena refuses it).

Scores: ``Main Score`` as above; ``Guesses Used``; ``Repeated Guesses``. Per round: ``Black Pegs``, ``White Pegs``
and ``Fits Feedback`` (1 when the round's guess agrees with every earlier answer).
"""

from __future__ import annotations

from clemcore.backends import Model
from clemcore.clemgame import GameBenchmark, ParseError, Player

from playprm.games.builtin.base import GuessingScorer, PromptedGameMaster, gm_notes
from playprm.games.builtin.mastermind import rules


class MastermindGuesser(Player):
    """The guesser. Its programmatic move (model ``mock``) plays the first code that agrees with all feedback."""

    def __init__(self, model: Model):
        super().__init__(model, game_role="Guesser")
        self._history: list = []

    def _custom_response(self, context: dict) -> str:
        self._history += rules.read_feedback(context["content"])
        options = rules.consistent_codes(self._history)
        return rules.format_code(options[0] if options else rules.all_codes()[0])


class Mastermind(PromptedGameMaster):
    """One round per guess, until the code is found or the guesses run out."""

    def _on_setup(self, **game_instance):
        self.code: tuple[int, ...] = tuple(game_instance["code"])
        self.max_guesses: int = int(game_instance["max_guesses"])
        self.guesses: list[dict] = []
        self.guesser = MastermindGuesser(self.player_models[0])
        prompt = self.template("initial_prompt", code_length=len(self.code), digits=rules.DIGITS,
                               max_guesses=self.max_guesses)
        self.add_player(self.guesser, initial_context=prompt)

    def _parse_response(self, player: Player, response: str) -> tuple[int, ...]:
        from playprm.games.builtin.protocol import strip_reasoning

        guess = rules.last_guess(strip_reasoning(response))
        reason = rules.invalid_reason(guess, len(self.code))
        if reason:
            raise ParseError(reason, response, key="invalid move")
        return tuple(guess)

    def _advance_game(self, player: Player, guess: tuple[int, ...]):
        history = [(tuple(g["guess"]), tuple(g["pegs"])) for g in self.guesses]
        black, white = rules.pegs(guess, self.code)
        note = {"attempt": len(self.guesses) + 1, "guess": list(guess), "pegs": [black, white],
                "repeat": any(tuple(g["guess"]) == guess for g in self.guesses),
                "fits": bool(rules.consistent_codes(history, [guess]))}
        left = self.settle_guess(note, black == len(self.code), self.max_guesses)
        if left is None:
            return
        self.set_context_for(self.guesser, self.template(
            "feedback", guess=rules.format_code(guess), black=black, white=white,
            guesses_left=f"You have {left} guess{'es' if left != 1 else ''} left."))

    def episode_facts(self) -> dict:
        return {"code": list(self.code), "guesses": self.guesses}


class MastermindScorer(GuessingScorer):
    """Per round the guess's pegs and whether it fit the feedback before it; per episode the speed-weighted Main
    Score, the guesses used and the repeated ones."""

    def compute_round_score(self, round_idx, round_events: list[dict]) -> None:
        guesses = gm_notes(round_events, "guess")
        if not guesses:
            return
        self.log_round_score(round_idx, "Black Pegs", guesses[0]["pegs"][0])
        self.log_round_score(round_idx, "White Pegs", guesses[0]["pegs"][1])
        self.log_round_score(round_idx, "Fits Feedback", int(guesses[0]["fits"]))


class MastermindBenchmark(GameBenchmark):
    """Entry point clemcore loads from this file."""

    def create_game_master(self, experiment: dict, player_models: list[Model]) -> Mastermind:
        return Mastermind(self.game_spec, experiment, player_models)

    def create_game_scorer(self, experiment: dict, game_instance: dict) -> MastermindScorer:
        return MastermindScorer(self.game_name, experiment, game_instance)
