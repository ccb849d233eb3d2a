"""Wordle for one player: find a secret five-letter English word in six guesses with letter feedback.

Written for playprm from the published clembench rules (own code, own prompts).

Protocol, one reply per guess: a ``GUESS: <word>`` line, and an ``EXPLANATION: <text>`` line that is asked for
but not required (a missing explanation never ends a game).

- A reply without exactly one ``GUESS:`` line, or whose guess is not one word of letters a-z, breaks the
  format: the episode is aborted (ParseError), as in clembench.
- A well-formed guess that is not five letters long or not in the word list costs one of the guesses and gets
  no letter feedback (RuleViolationError, handled in ``_on_game_error``); there is no re-prompt, so an episode
  ends after at most ``max_guesses`` replies.
- The game is won when a guess equals the target, lost when the guesses run out.

Scores: ``Main Score`` is ``100 * (max_guesses + 1 - guesses used) / max_guesses`` on success (100 for a first
guess win, 16.7 for a win on the sixth), 0 when lost and NaN when aborted; per round the guess's ``Valid
Guess`` (0/1), ``Green Letters`` and ``Yellow Letters``.
"""

from __future__ import annotations

from clemcore.backends import Model
from clemcore.clemgame import GameBenchmark, GameError, ParseError, Player, RuleViolationError
from clemcore.clemgame.metrics import BENCH_SCORE, METRIC_SUCCESS

from playprm.games.builtin.base import OutcomeScorer, PromptedGameMaster, gm_notes
from playprm.games.builtin.protocol import clean_word, parse_tagged
from playprm.games.builtin.wordle import rules


class WordleGuesser(Player):
    """The guesser. Its programmatic move (model ``mock``) plays the first allowed word, in alphabetical
    order, that agrees with all the feedback it has been given."""

    def __init__(self, model: Model):
        super().__init__(model, game_role="Guesser")
        self._candidates: list[str] | None = None  # filled on the first programmatic move: keeps forks cheap

    def _custom_response(self, context: dict) -> str:
        # filtering the survivors by the newest feedback only keeps each move cheap
        known = self._candidates if self._candidates is not None else rules.valid_words()
        self._candidates = rules.consistent_words(rules.read_feedback(context["content"]), known)
        guess = self._candidates[0] if self._candidates else rules.valid_words()[0]
        return f"GUESS: {guess}\nEXPLANATION: The first allowed word that fits all feedback so far."


class Wordle(PromptedGameMaster):
    """One round per guess; the game master answers each guess until it is solved or the guesses run out."""

    def _on_setup(self, **game_instance):
        self.target_word: str = game_instance["target_word"].lower()
        self.max_guesses: int = int(game_instance["max_guesses"])
        self.guesses: list[dict] = []
        self.guesser = WordleGuesser(self.player_models[0])
        self.add_player(
            self.guesser, initial_context=self.template("initial_prompt", max_guesses=self.max_guesses)
        )

    def _parse_response(self, player: Player, response: str) -> str:
        guess = clean_word(parse_tagged(response, "GUESS"))
        if not (guess.isascii() and guess.isalpha()):
            raise ParseError(
                f"the GUESS: line must hold one word of letters a-z, not {guess!r}",
                response,
                key="not a word",
            )
        return guess

    def _advance_game(self, player: Player, guess: str):
        if len(guess) != rules.WORD_LENGTH or not rules.is_valid_word(guess):
            raise RuleViolationError(
                f"{guess!r} is not an allowed five-letter word", guess, key="invalid word"
            )
        pattern = rules.feedback(guess, self.target_word)
        self._note_guess(guess, pattern)
        if pattern == rules.SOLVED:
            self.state.succeed()
        else:
            self._continue_or_lose("feedback", guess, feedback=rules.describe_feedback(guess, pattern))

    def _on_game_error(self, error: GameError):
        self._note_guess(error.response, None)
        self._continue_or_lose("invalid_guess", error.response)

    def _note_guess(self, guess: str, pattern: str | None):
        note = {
            "attempt": len(self.guesses) + 1,
            "guess": guess,
            "feedback": pattern,
            "valid": pattern is not None,
        }
        self.guesses.append(note)
        self.log_to_self("guess", note)

    def _continue_or_lose(self, template_name: str, guess: str, **values):
        """Lose when the guesses are used up, else answer the guess with the named prompt."""
        left = self.max_guesses - len(self.guesses)
        if left <= 0:
            self.state.failed()
            return
        guesses_left = f"You have {left} guess{'es' if left != 1 else ''} left."
        self.set_context_for(
            self.guesser,
            self.template(
                template_name, attempt=len(self.guesses), guess=guess, guesses_left=guesses_left, **values
            ),
        )

    def episode_facts(self) -> dict:
        return {"target_word": self.target_word, "guesses": self.guesses}


class WordleScorer(OutcomeScorer):
    """Per round: the guess's validity and letter counts; per episode: the speed-weighted Main Score."""

    episode_score_names = (BENCH_SCORE, "Guesses Used", "Invalid Guesses")

    def compute_round_score(self, round_idx, round_events: list[dict]) -> None:
        for note in gm_notes(round_events, "guess"):
            pattern = note["feedback"] or ""
            self.log_round_score(round_idx, "Valid Guess", int(note["valid"]))
            self.log_round_score(round_idx, "Green Letters", pattern.count(rules.GREEN))
            self.log_round_score(round_idx, "Yellow Letters", pattern.count(rules.YELLOW))

    def episode_scores(self, interactions: dict) -> dict[str, float]:
        guesses = interactions["guesses"]
        max_guesses = int(self.game_instance["max_guesses"])
        speed = 100 * (max_guesses + 1 - len(guesses)) / max_guesses
        return {
            BENCH_SCORE: speed if interactions[METRIC_SUCCESS] else 0,
            "Guesses Used": len(guesses),
            "Invalid Guesses": sum(1 for g in guesses if not g["valid"]),
        }


class WordleBenchmark(GameBenchmark):
    """Entry point clemcore loads from this file."""

    def create_game_master(self, experiment: dict, player_models: list[Model]) -> Wordle:
        return Wordle(self.game_spec, experiment, player_models)

    def create_game_scorer(self, experiment: dict, game_instance: dict) -> WordleScorer:
        return WordleScorer(self.game_name, experiment, game_instance)
