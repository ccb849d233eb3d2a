"""Taboo for two players: a describer clues a target word without its taboo words; a guesser has three tries.

Written for playprm from the published clembench rules (own code, own prompts).

Protocol, one round per try: the describer replies ``CLUE: <text>``, then the guesser replies
``GUESS: <one word>``.

- A reply without exactly one line of its tag, or a guess that is not a single word, breaks the format: the
  episode is aborted (ParseError), as in clembench.
- A clue that uses the target or a taboo word, or an obvious form of one, is a rule violation that also aborts
  the episode (RuleViolationError, handled in ``_on_game_error``), as clembench's taboo does. A clue word
  counts as a form of a forbidden word when (case-insensitive, Snowball stems): the stems are equal; or the
  clue word's stem starts with the forbidden word's stem of at least four letters ("swimmer" for "swimming");
  or the clue word is a prefix of at least four letters of the forbidden word ("tooth" for "toothbrush"); or,
  for forbidden words shorter than four letters, it is the word plus a common ending ("hotter" for "hot").
- The game is won when a guess equals the target (case-insensitive), lost after ``max_turns`` wrong guesses.

Scores: ``Main Score`` is ``100 / turns used`` on success, 0 when lost and NaN when aborted; per round
``Clue Words`` (length of the clue) and ``Correct Guess`` (0/1, for rounds where the guesser answered).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from clemcore.backends import Model
from clemcore.clemgame import GameBenchmark, GameError, ParseError, Player, RuleViolationError
from clemcore.clemgame.metrics import BENCH_SCORE, METRIC_SUCCESS
from nltk.stem.snowball import SnowballStemmer

from playprm.games.builtin.base import OutcomeScorer, PromptedGameMaster, gm_notes
from playprm.games.builtin.protocol import clean_word, parse_tagged

_STEMMER = SnowballStemmer("english")
_SHORT_WORD_ENDINGS = ("s", "es", "er", "ers", "est", "ed", "ing", "y", "ly")
_CARDS_FILE = Path(__file__).resolve().parent / "resources" / "cards.json"


def forbidden_form(clue_word: str, forbidden: str) -> bool:
    """Whether ``clue_word`` is ``forbidden`` or an obvious form of it (the rule in the module docstring)."""
    word, banned = clue_word.lower(), forbidden.lower()
    word_stem, banned_stem = _STEMMER.stem(word), _STEMMER.stem(banned)
    if word == banned or word_stem == banned_stem:
        return True
    if len(banned_stem) >= 4 and word_stem.startswith(banned_stem):
        return True
    if len(word) >= 4 and banned.startswith(word):
        return True
    if len(banned) < 4:
        doubled = banned + banned[-1]
        return any(word in (banned + end, doubled + end) for end in _SHORT_WORD_ENDINGS)
    return False


def clue_violations(clue: str, forbidden_words: list[str]) -> list[str]:
    """The words of ``clue`` that break the taboo rule against any of ``forbidden_words``, in clue order."""
    return [
        w for w in re.findall(r"[a-z]+", clue.lower()) if any(forbidden_form(w, f) for f in forbidden_words)
    ]


class TabooDescriber(Player):
    """The describer. Its programmatic move (model ``mock``) spells out the target's length and, round by
    round, its first, last and second letter."""

    def __init__(self, model: Model, target_word: str):
        super().__init__(model, game_role="Describer")
        self._target = target_word
        self._clues_given = 0

    def _custom_response(self, context: dict) -> str:
        self._clues_given += 1
        t = self._target
        hints = [
            f"It has {len(t)} letters and starts with '{t[0]}'.",
            f"It ends with '{t[-1]}'.",
            f"Its second letter is '{t[1]}'.",
        ]
        return "CLUE: " + " ".join(hints[: self._clues_given])


class TabooGuesser(Player):
    """The guesser. Its programmatic move (model ``mock``) names the first word of the card table that fits
    the letter hints of the programmatic describer and was not guessed before."""

    def __init__(self, model: Model, vocabulary: list[str]):
        super().__init__(model, game_role="Guesser")
        self._vocabulary = vocabulary
        self._guessed: list[str] = []

    def _custom_response(self, context: dict) -> str:
        text = context["content"]
        checks = []
        if m := re.search(r"has (\d+) letters", text):
            checks.append(lambda w, n=int(m.group(1)): len(w) == n)
        for pattern, position in (
            (r"starts with '(\w)'", 0),
            (r"ends with '(\w)'", -1),
            (r"second letter is '(\w)'", 1),
        ):
            if m := re.search(pattern, text):
                checks.append(lambda w, c=m.group(1), i=position: w[i] == c)
        fitting = [
            w for w in self._vocabulary if w not in self._guessed and all(check(w) for check in checks)
        ]
        guess = fitting[0] if fitting else "word"
        self._guessed.append(guess)
        return f"GUESS: {guess}"


def card_vocabulary() -> list[str]:
    """All target words of the card table, sorted (the programmatic guesser's vocabulary)."""
    cards = json.loads(_CARDS_FILE.read_text(encoding="utf-8"))
    return sorted(
        {card["target"] for key, group in cards.items() if not key.startswith("_") for card in group}
    )


class Taboo(PromptedGameMaster):
    """Rounds of clue then guess; the describer hears each wrong guess and gives a new clue."""

    def _on_setup(self, **game_instance):
        self.target_word: str = game_instance["target_word"].lower()
        self.taboo_words: list[str] = [w.lower() for w in game_instance["taboo_words"]]
        self.max_turns: int = int(game_instance["max_turns"])
        self.guesses: list[str] = []
        self.describer = TabooDescriber(self.player_models[0], self.target_word)
        self.guesser = TabooGuesser(self.player_models[1], card_vocabulary())
        self.add_player(
            self.describer,
            initial_context=self.template(
                "describer_prompt",
                target_word=self.target_word,
                taboo_words=", ".join(self.taboo_words),
                max_turns=self.max_turns,
            ),
        )
        self.add_player(
            self.guesser, initial_prompt=self.template("guesser_prompt", max_turns=self.max_turns)
        )

    def _guesses_left(self) -> str:
        left = self.max_turns - len(self.guesses)
        return f"{left} guess{'es' if left != 1 else ''}"

    def _parse_response(self, player: Player, response: str) -> str:
        if player is self.describer:
            return parse_tagged(response, "CLUE")
        guess = clean_word(parse_tagged(response, "GUESS"))
        if not guess.replace("-", "").isalpha():
            raise ParseError(
                f"the GUESS: line must hold a single word, not {guess!r}", response, key="not a word"
            )
        return guess

    def _advance_game(self, player: Player, parsed_response: str):
        if player is self.describer:
            violations = clue_violations(parsed_response, [self.target_word, *self.taboo_words])
            self.log_to_self("clue", {"clue": parsed_response, "violations": violations})
            if violations:
                raise RuleViolationError(
                    f"the clue uses forbidden words: {', '.join(violations)}",
                    parsed_response,
                    key="taboo word",
                )
            self.set_context_for(
                self.guesser, self.template("clue", clue=parsed_response, guesses_left=self._guesses_left())
            )
            return
        self.guesses.append(parsed_response)
        correct = parsed_response == self.target_word
        self.log_to_self("guess", {"guess": parsed_response, "correct": correct})
        if correct:
            self.state.succeed()
        elif len(self.guesses) >= self.max_turns:
            self.state.failed()
        else:
            self.set_context_for(
                self.describer,
                self.template("wrong_guess", guess=parsed_response, guesses_left=self._guesses_left()),
            )

    def _on_game_error(self, error: GameError):
        self.log_to_self("invalid clue", error.reason)
        self.state.abort()

    def episode_facts(self) -> dict:
        return {"target_word": self.target_word, "guesses": self.guesses}


class TabooScorer(OutcomeScorer):
    """Per round: clue length and guess correctness; per episode: Main Score = 100 / turns on success."""

    episode_score_names = (BENCH_SCORE, "Turns Used")

    def compute_round_score(self, round_idx, round_events: list[dict]) -> None:
        for note in gm_notes(round_events, "clue"):
            self.log_round_score(round_idx, "Clue Words", len(note["clue"].split()))
        for note in gm_notes(round_events, "guess"):
            self.log_round_score(round_idx, "Correct Guess", int(note["correct"]))

    def episode_scores(self, interactions: dict) -> dict[str, float]:
        turns = len(interactions["guesses"])
        return {BENCH_SCORE: 100 / turns if interactions[METRIC_SUCCESS] else 0, "Turns Used": turns}


class TabooBenchmark(GameBenchmark):
    """Entry point clemcore loads from this file."""

    def create_game_master(self, experiment: dict, player_models: list[Model]) -> Taboo:
        return Taboo(self.game_spec, experiment, player_models)

    def create_game_scorer(self, experiment: dict, game_instance: dict) -> TabooScorer:
        return TabooScorer(self.game_name, experiment, game_instance)
