"""Wordle for one player: find a secret five-letter English word in six guesses with letter feedback.

Written for playprm from the published clembench rules (own code, own prompts).

Protocol, one round per guess (with the words refused on the way): a ``GUESS: <word>`` line, and an
``EXPLANATION: <text>`` line that is asked for but not required (a missing explanation never ends a game).

- A reply without exactly one ``GUESS:`` line, whose guess is not one word of letters a-z, or whose word is not
  five letters long breaks the format: the episode is aborted (ParseError), as in clembench.
- A five-letter word that is not in the word list is refused without costing a guess: the game master says so
  and asks the guesser again in the same round (RuleViolationError, handled in ``_on_game_error``), as
  clembench's wordle re-prompts an unknown word. One guess may be asked for again at most ``MAX_REPROMPTS``
  times (clembench's 5); the next unknown word in that round aborts the episode. Re-prompts never end a game
  by themselves, so an episode has at most ``max_guesses`` rounds.
- The game is won when a guess equals the target, lost when the guesses run out.
- An instance's ``"vocabulary"`` (default ``full``) names the word list that guesses are checked against and
  targets come from; ``small`` (300 words, ``rules.py``) is playprm's variant for models trained from scratch:
  the rules and feedback are clembench's, only the list is shorter and the first message says so.

Scores: ``Main Score`` is ``100 * (max_guesses + 1 - guesses used) / max_guesses`` on success (100 for a first
guess win, 16.7 for a win on the sixth), 0 when lost and NaN when aborted; ``Guesses Used`` counts the words from
the list, ``Invalid Guesses`` the refused ones. Per round: ``Valid Guess`` (1 when the round ended with a word
from the list, 0 when it ended the episode without one), ``Invalid Guesses`` (words refused in the round),
``Green Letters`` and ``Yellow Letters`` of the round's guess. An unknown word still counts as a parsed request
(clemcore's request counts), a broken format as a violated one, as clembench counts them.
"""

from __future__ import annotations

from clemcore.backends import Model
from clemcore.clemgame import GameBenchmark, GameError, ParseError, Player, RuleViolationError
from clemcore.clemgame.metrics import BENCH_SCORE, METRIC_SUCCESS

from playprm.games.builtin.base import OutcomeScorer, PromptedGameMaster, gm_notes
from playprm.games.builtin.protocol import clean_word, parse_tagged
from playprm.games.builtin.wordle import rules

MAX_REPROMPTS = 5  # unknown words one guess may be asked for again (clembench's max_retry_per_error)


class WordleGuesser(Player):
    """The guesser. Its programmatic move (model ``mock``) plays the first allowed word, in alphabetical
    order, that agrees with all the feedback it has been given."""

    def __init__(self, model: Model, vocabulary: str = "full"):
        super().__init__(model, game_role="Guesser")
        self.vocabulary = vocabulary
        self._candidates: list[str] | None = None  # filled on the first programmatic move: keeps forks cheap

    def _custom_response(self, context: dict) -> str:
        # filtering the survivors by the newest feedback only keeps each move cheap
        words = rules.valid_words(self.vocabulary)
        known = self._candidates if self._candidates is not None else words
        self._candidates = rules.consistent_words(rules.read_feedback(context["content"]), known)
        guess = self._candidates[0] if self._candidates else words[0]
        return f"GUESS: {guess}\nEXPLANATION: The first allowed word that fits all feedback so far."


class Wordle(PromptedGameMaster):
    """One round per guess; the game master answers each guess until it is solved or the guesses run out, and
    asks again within the round for a word that is not in its list."""

    def _on_setup(self, **game_instance):
        self.target_word: str = game_instance["target_word"].lower()
        self.max_guesses: int = int(game_instance["max_guesses"])
        self.vocabulary: str = rules.check_vocabulary(game_instance.get("vocabulary", "full"))
        self.guesses: list[dict] = []
        self.invalid_words: list[dict] = []
        self.reprompts = 0  # re-prompts in this round
        self.asking_again = False  # the last reply was refused: the guesser answers again in this round
        self.guesser = WordleGuesser(self.player_models[0], self.vocabulary)
        prompt = self.template("initial_prompt", max_guesses=self.max_guesses, max_reprompts=MAX_REPROMPTS,
                               word_rule=rules.WORD_RULES[self.vocabulary])
        self.add_player(self.guesser, initial_context=prompt)

    def _on_before_round(self):
        self.reprompts = 0

    def _parse_response(self, player: Player, response: str) -> str:
        guess = clean_word(parse_tagged(response, "GUESS"))
        if not (guess.isascii() and guess.isalpha()):
            raise ParseError(
                f"the GUESS: line must hold one word of letters a-z, not {guess!r}",
                response,
                key="not a word",
            )
        if len(guess) != rules.WORD_LENGTH:
            raise ParseError(
                f"the guess must have {rules.WORD_LENGTH} letters, not {len(guess)} ({guess!r})",
                response,
                key="wrong length",
            )
        return guess

    def _advance_game(self, player: Player, guess: str):
        self.asking_again = False
        if not rules.is_valid_word(guess, self.vocabulary):
            raise RuleViolationError(f"{guess!r} is not in the word list", guess, key="unknown word")
        pattern = rules.feedback(guess, self.target_word)
        note = {"attempt": len(self.guesses) + 1, "guess": guess, "feedback": pattern}
        left = self.settle_guess(note, pattern == rules.SOLVED, self.max_guesses)
        if left is None:
            return
        self.set_context_for(
            self.guesser,
            self.template("feedback", attempt=len(self.guesses), guess=guess,
                          feedback=rules.describe_feedback(guess, pattern), guesses_left=_guesses_left(left)),
        )

    def _on_game_error(self, error: GameError):
        note = {"attempt": len(self.guesses) + 1, "guess": error.response, "refusal": self.reprompts + 1}
        self.invalid_words.append(note)
        self.log_to_self("invalid word", note)
        if self.reprompts >= MAX_REPROMPTS:
            self.log_to_self("too many invalid words", f"{self.reprompts + 1} unknown words for one guess")
            self.state.abort()
            return
        self.reprompts += 1
        self.asking_again = True
        left = self.max_guesses - len(self.guesses)
        self.set_context_for(
            self.guesser,
            self.template("invalid_word", guess=error.response, guesses_left=_guesses_left(left)),
        )

    def _should_pass_turn(self) -> bool:
        return not self.asking_again

    def _start_next_round(self) -> bool:
        return not self.asking_again

    def episode_facts(self) -> dict:
        return {"target_word": self.target_word, "guesses": self.guesses, "invalid_words": self.invalid_words}


def _guesses_left(left: int) -> str:
    return f"You have {left} guess{'es' if left != 1 else ''} left."


class WordleScorer(OutcomeScorer):
    """Per round: whether it ended with a guess from the list, its refused words and its letter counts; per
    episode: the speed-weighted Main Score, the guesses used and the refused words."""

    episode_score_names = (BENCH_SCORE, "Guesses Used", "Invalid Guesses")

    def compute_round_score(self, round_idx, round_events: list[dict]) -> None:
        guesses = gm_notes(round_events, "guess")
        pattern = guesses[0]["feedback"] if guesses else ""
        self.log_round_score(round_idx, "Valid Guess", len(guesses))
        self.log_round_score(round_idx, "Invalid Guesses", len(gm_notes(round_events, "invalid word")))
        self.log_round_score(round_idx, "Green Letters", pattern.count(rules.GREEN))
        self.log_round_score(round_idx, "Yellow Letters", pattern.count(rules.YELLOW))

    def episode_scores(self, interactions: dict) -> dict[str, float]:
        guesses = interactions["guesses"]
        max_guesses = int(self.game_instance["max_guesses"])
        speed = 100 * (max_guesses + 1 - len(guesses)) / max_guesses
        return {
            BENCH_SCORE: speed if interactions[METRIC_SUCCESS] else 0,
            "Guesses Used": len(guesses),
            # an episode recorded before wordle re-prompted has no invalid_words: its refused guesses are the
            # guesses noted invalid (they cost a guess then), so its results still rescore
            "Invalid Guesses": len(interactions.get("invalid_words",
                                                    [g for g in guesses if g.get("valid") is False])),
        }


class WordleBenchmark(GameBenchmark):
    """Entry point clemcore loads from this file."""

    def create_game_master(self, experiment: dict, player_models: list[Model]) -> Wordle:
        return Wordle(self.game_spec, experiment, player_models)

    def create_game_scorer(self, experiment: dict, game_instance: dict) -> WordleScorer:
        return WordleScorer(self.game_name, experiment, game_instance)
