"""The programmatic expert of the built-in games: the teacher that stands in for "the base model's winning
rollouts", and the best-of-n scorer that ranks candidates by agreement with it.

The model card trains on a strong base model's winning episodes; at small scale on a CPU no such model exists,
so ``programmatic:expert`` plays the built-in games by their rules, from the context alone (what a policy sees):

- wordle: the first allowed word consistent with all feedback so far (the game's own ``mock``
  strategy); with the small word list (``rules.SMALL_LIST_NOTE``), the consistent word that leaves the fewest
  possible targets on average (``rules.expected_left``, ties to the more frequent word), after its work
  (``wordle_work``);
- referencegame: the describer names one row that only the target grid has at that place ("the third row is
  X X ▢ ▢ X"); the guesser first lists that row of each of its grids with whether it is the one named, one line
  each ("second: X X ▢ ▢ X same"), then answers with the grid that has it (the game reads only the ``ANSWER:``
  line). Showing the work keeps every step local: a 4-layer model trained from scratch learned to copy a row
  and compare two within a few hundred steps, but not to match a row against three grids in the one token of
  a bare answer (measured while building the small preset: chance after 1,000 steps);
- mastermind: the consistent code that leaves the fewest possible codes on average (``mastermind_best``), as a
  bare ``[2 1 4 5]``; its noisy moves are other consistent codes, and as a scorer it ranks a candidate by what the
  context shows (``mastermind_value``: out of format, a repeat, against the feedback, fitting it, codes left);
- guessthenumber: the lower middle of the numbers the hints leave (bisection), as ``[50]``; its noisy moves are
  other numbers inside the hints, and as a scorer ``number_value`` (the same scheme as mastermind's);
- taboo: the describer gives the target's length and letters (one more per clue), the guesser names the first
  card word that fits.

It is deliberately imperfect: each move is, with probability ``epsilon``, a random *valid* move instead
(``programmatic:expert`` uses ``DEFAULT_EPSILON``; ``programmatic:expert-eps0.2`` sets it). At the default it wins
about two thirds of the reference games (measured on 120 held-out instances; the noise-free expert wins all), so
positive-only filtering has failures to remove and a PRM trained on its play sees both outcomes. In wordle a
noisy move is another word that fits the feedback, worded as the expert's: the teacher wins about three quarters
of its games either way (within six guesses, late: its first guess is always ``aalii``), failures coming from the
guess limit. Results of this policy are teacher data, and their folders are named ``programmatic-expert-...``
(its name and ``-eps<E>`` are parsed in ``models.programmatic``, where the model registry reads them).
"""

from __future__ import annotations

import hashlib
import random
import re
from functools import lru_cache

from playprm.models.base import Candidate, refuse_prefixes
from playprm.models.programmatic import PREFIX, parse_selector, spec_for
from playprm.search.scorers import ScoreStats


def _grids(text: str, labels=("First grid", "Second grid", "Third grid")) -> list[list[str]]:
    """The three grids of a reference-game prompt, each as its five row strings: the guesser's in its order,
    the describer's (``DESCRIBER_LABELS``) target first."""
    grids = []
    for label in labels:
        match = re.search(re.escape(label) + r":\n((?:[X▢ ]+\n?){5})", text)
        grids.append([row.strip() for row in match.group(1).strip().split("\n")] if match else [])
    return grids


DESCRIBER_LABELS = ("Target grid", "Distractor grid 1", "Distractor grid 2")
ROW_WORDS = ("first", "second", "third", "fourth", "fifth")
_ROW_EXPRESSION = re.compile(r"the (first|second|third|fourth|fifth) row is ((?:[X▢] ?){5})")


def row_expression(grid: list[str], row: int) -> str:
    return f"EXPRESSION: the {ROW_WORDS[row]} row is {grid[row]}"


def referencegame_describer(context: list[dict]) -> str:
    """Name one row of the target grid that neither other grid has at that place (the first such row)."""
    target, *others = _grids(context[0]["content"], DESCRIBER_LABELS)
    unique = [r for r in range(len(target)) if all(len(g) > r and g[r] != target[r] for g in others)]
    return row_expression(target, unique[0] if unique else 0)


GUESSER_LABELS = ("first", "second", "third")


def _named_rows(context: list[dict]) -> tuple[list[str], str] | None:
    """The row the expression names in each of the guesser's grids, and the expression's cells; None when the
    expression names no row."""
    match = _ROW_EXPRESSION.search(context[-1]["content"])
    if not match:
        return None
    row = ROW_WORDS.index(match.group(1))
    return [g[row] if len(g) > row else "" for g in _grids(context[0]["content"])], match.group(2).strip()


def guesser_reply(rows: list[str], cells: str, label: str) -> str:
    """The guesser's work (the named row of each of its grids and whether it is the expression's ``cells``, one
    line each), then its ``ANSWER:`` line; the game reads only the ANSWER line."""
    work = "".join(f"{lb}: {row} {'same' if row == cells else 'other'}\n" for lb, row in zip(GUESSER_LABELS, rows))
    return work + f"ANSWER: {label}"


def referencegame_guesser(context: list[dict]) -> str:
    """The first grid whose named row is the one the expression spells out, after listing that row of each grid
    (``first`` when the expression names no row)."""
    named = _named_rows(context)
    if named is None:
        return "ANSWER: first"
    rows, cells = named
    return guesser_reply(rows, cells, next((lb for lb, r in zip(GUESSER_LABELS, rows) if r == cells), "first"))


@lru_cache(maxsize=65536)
def wordle_best(options: tuple[str, ...]) -> str:
    """The word of ``options`` (the possible targets) that leaves the fewest of them on average; the earlier
    (more frequent) word on a tie."""
    from playprm.games.builtin.wordle.rules import expected_left

    return min(options, key=lambda word: expected_left(word, list(options)))


def wordle_reply(word: str) -> str:
    return f"GUESS: {word}\nEXPLANATION: A word that fits all feedback so far."


def wordle_work(word: str, history: list[tuple[str, str]]) -> str:
    """The small-list expert's reply: first its work, then its guess. The work is what the feedback so far
    says, letter by letter (``known``: the green letter of each position or ``_``; ``has``: letters in the word
    whose place is open; ``not``: letters not in it), and the guess spelt out; the game reads only the ``GUESS:``
    line. Each piece is local for a small model: this turn's summary is the last one updated by the newest
    feedback, and each letter of the guess is checked against the summary (without the work, a 4-layer model
    trained from scratch played consistent words on its second guess and almost never on its third, with a
    tokenizer that reads feedback letter by letter or not: BENCHMARKS.md, the wordle game)."""
    from playprm.games.builtin.wordle.rules import GREEN, RED

    known = ["_"] * len(word)
    present, absent = [], []
    for guess, pattern in history:
        for i, (letter, mark) in enumerate(zip(guess, pattern)):
            if mark == GREEN:
                known[i] = letter
            if mark != RED and letter not in present:
                present.append(letter)
    for guess, pattern in history:  # red and never green or yellow elsewhere: not in the word
        absent += [c for c, m in zip(guess, pattern) if m == RED and c not in present and c not in absent]
    has = [c for c in present if c not in known]
    work = (f"known {' '.join(known)} , has {' '.join(has) or '-'} , not {' '.join(sorted(absent)) or '-'} . "
            f"guess {' '.join(word)}")
    return f"EXPLANATION: {work}\nGUESS: {word}"


def wordle_guess(context: list[dict]) -> str:
    """The first allowed word consistent with all feedback so far; with the small list, the consistent word
    that leaves the fewest targets, after its work (``wordle_work``)."""
    return wordle_replies(context, best=True)[0]


def wordle_replies(context: list[dict], *, best: bool) -> list[str]:
    """The expert's reply (``best``) or the replies of every word that fits (a noisy step's options), worded
    as the expert words them for the game's list."""
    from playprm.games.builtin.wordle.rules import wordle_history, wordle_moves, wordle_vocabulary

    moves = wordle_moves(context)
    if wordle_vocabulary(context) != "small":
        return [wordle_reply(moves[0])] if best else [wordle_reply(w) for w in moves]
    history = wordle_history(context)
    return [wordle_work(w, history) for w in ([wordle_best(moves)] if best else moves)]


def wordle_value(context: list[dict], reply: str) -> float:
    """What the expert knows of a wordle reply, from the context alone: 0 for a reply that is no word of the
    game's list (or not in the format), 1 plus for a listed word that contradicts the feedback, 2 plus for one
    consistent with all of it; plus 1 − (targets it is expected to leave) / (targets possible now), so that among
    equally consistent words the more informative one scores higher. In [0, 3)."""
    from clemcore.clemgame import ParseError

    from playprm.games.builtin.protocol import clean_word, parse_tagged
    from playprm.games.builtin.wordle import rules

    try:  # the game master's own parse of the GUESS line
        word = clean_word(parse_tagged(reply, "GUESS"))
    except ParseError:
        return 0.0
    if not rules.is_valid_word(word, rules.wordle_vocabulary(context)):
        return 0.0
    options = rules.wordle_moves(context)
    left = rules.expected_left(word, list(options))
    return (2.0 if word in options else 1.0) + 1.0 - left / len(options)


MASTERMIND_MARK = "You are playing Mastermind."  # the game's first message (mastermind/resources/initial_prompt)


@lru_cache(maxsize=65536)
def mastermind_best(options: tuple) -> tuple[int, ...]:
    """The code of ``options`` that leaves the fewest of them on average (the first on a tie)."""
    from playprm.games.builtin.mastermind.rules import expected_left

    return min(options, key=lambda code: expected_left(code, list(options)))


def mastermind_replies(context: list[dict], *, best: bool) -> list[str]:
    """The expert's reply (``best``: the consistent code that leaves the fewest codes) or every consistent code's
    reply (a noisy step's options)."""
    from playprm.games.builtin.mastermind.rules import format_code, mastermind_moves

    moves = mastermind_moves(context)
    return [format_code(mastermind_best(moves))] if best else [format_code(code) for code in moves]


def guess_value(move, invalid: bool, earlier: list, options: tuple, expected_left) -> float:
    """The expert's score of a guessing game's move, from the context alone: 0 for an invalid move, 0.5 for a repeat
    of an ``earlier`` guess (a lost turn), 1 plus for a move outside ``options`` (against the feedback), 2 plus for
    one of them; plus 1 - (options it is expected to leave) / (options now), so that among equally consistent moves
    the more informative scores higher. In [0, 3)."""
    if invalid:
        return 0.0
    if move in earlier:
        return 0.5
    left = expected_left(move, list(options))
    return (2.0 if move in options else 1.0) + 1.0 - left / len(options)


def mastermind_value(context: list[dict], reply: str) -> float:
    """``guess_value`` of a mastermind reply (the game master's own parse and checks; codes left)."""
    from playprm.games.builtin.mastermind import rules
    from playprm.games.builtin.protocol import strip_reasoning

    guess = rules.last_guess(strip_reasoning(reply))
    invalid = rules.invalid_reason(guess) is not None
    return guess_value(None if invalid else tuple(guess), invalid, [g for g, _ in rules.mastermind_history(context)],
                       rules.mastermind_moves(context), rules.expected_left)


NUMBER_MARK = "You are playing Guess The Number."  # guessthenumber's first message


def number_replies(context: list[dict], *, best: bool) -> list[str]:
    """guessthenumber: the expert's bisection of the numbers the hints leave (``best``: the lower middle one), or
    every number that fits the hints (a noisy step's options)."""
    from playprm.games.builtin.guessthenumber import rules

    left = rules.options(tuple(rules.history_of(context)))
    return [f"[{left[(len(left) - 1) // 2]}]"] if best else [f"[{n}]" for n in left]


def number_value(context: list[dict], reply: str) -> float:
    """``guess_value`` of a guessthenumber reply (numbers left)."""
    from playprm.games.builtin.guessthenumber import rules
    from playprm.games.builtin.protocol import strip_reasoning

    guess = rules.last_guess(strip_reasoning(reply))
    history = rules.history_of(context)
    return guess_value(guess, rules.invalid_reason(guess) is not None, [g for g, _ in history],
                       rules.options(tuple(history)), rules.expected_left)


def taboo_describer(context: list[dict]) -> str:
    target = re.search(r"The secret word is: (\w+)", context[0]["content"]).group(1).lower()
    clues = sum(1 for m in context if m["role"] == "assistant") + 1
    hints = [f"It has {len(target)} letters and starts with '{target[0]}'.", f"It ends with '{target[-1]}'.",
             f"Its second letter is '{target[1]}'."]
    return "CLUE: " + " ".join(hints[:clues])


def taboo_guesser(context: list[dict]) -> str:
    from playprm.games.builtin.scripted import _taboo_words

    text = "\n".join(m["content"] for m in context if m["role"] == "user")
    guessed = [m["content"].split(":", 1)[-1].strip().lower() for m in context if m["role"] == "assistant"]
    checks = []
    if m := re.search(r"has (\d+) letters", text):
        checks.append(lambda w, n=int(m.group(1)): len(w) == n)
    for pattern, position in ((r"starts with '(\w)'", 0), (r"ends with '(\w)'", -1),
                              (r"second letter is '(\w)'", 1)):
        if m := re.search(pattern, text):
            checks.append(lambda w, c=m.group(1), i=position: w[i] == c)
    fitting = [w for w in _taboo_words() if w not in guessed and all(check(w) for check in checks)]
    return f"GUESS: {fitting[0] if fitting else 'word'}"


def expert_move(context: list[dict]) -> str:
    """The expert's reply to ``context`` (a policy's view: the player's messages so far)."""
    from playprm.games.builtin.scripted import valid_moves

    first = context[0]["content"]
    if "Let's play Wordle" in first:
        return wordle_guess(context)
    if MASTERMIND_MARK in first:
        return mastermind_replies(context, best=True)[0]
    if NUMBER_MARK in first:
        return number_replies(context, best=True)[0]
    if "reference game" in first:
        return referencegame_guesser(context) if "Tell which of your grids" in first \
            else referencegame_describer(context)
    if "Let's play Taboo" in first:
        return taboo_describer(context) if "The secret word is" in first else taboo_guesser(context)
    return valid_moves(context)[0]


def noisy_moves(context: list[dict]) -> list[str]:
    """Valid moves that are not the expert's: what a noisy step draws from."""
    from playprm.games.builtin.scripted import valid_moves

    first = context[0]["content"]
    if "reference game" in first and "Tell which of your grids" not in first:
        # a describer's slip: another row of the target grid (it may occur in another grid too)
        target = _grids(first, DESCRIBER_LABELS)[0]
        return [row_expression(target, r) for r in range(len(target))]
    if "reference game" in first and (named := _named_rows(context)):
        # a guesser's slip: the same work, then any answer
        return [guesser_reply(*named, label) for label in GUESSER_LABELS]
    if "Let's play Wordle" in first:  # another word that fits the feedback, worded as the expert's
        return wordle_replies(context, best=False)
    if MASTERMIND_MARK in first:  # another code that fits the feedback
        return mastermind_replies(context, best=False)
    if NUMBER_MARK in first:  # another number inside the hints
        return number_replies(context, best=False)
    return valid_moves(context)


class ExpertPolicy:
    """The ε-noisy expert behind the ``Policy`` interface. Deterministic for a given seed, batch and context
    (the row index enters the draw, so equal contexts in one batch, e.g. K samples of an instance, differ)."""

    def __init__(self, selector: str = PREFIX):
        self.spec = spec_for(selector)
        self.epsilon = parse_selector(selector)

    def generate(self, contexts, *, n=1, temperature=0.0, max_tokens=256, seed=None, prefixes=None):
        refuse_prefixes(prefixes, "programmatic")
        out = []
        for row, context in enumerate(contexts):
            digest = hashlib.sha256(repr((seed, row, context)).encode("utf-8", "surrogatepass")).digest()
            rng = random.Random(digest)
            expert = expert_move(context)
            options = [m for m in noisy_moves(context) if m != expert]
            moves = [rng.choice(options) if options and rng.random() < self.epsilon else expert for _ in range(n)]
            out.append([Candidate(text=m, num_tokens=len(m.split()), logprob=0.0) for m in moves])
        return out


class ExpertScorer:
    """``--scorer expert``: 1 for the candidate that is the expert's move for the player's context, else 0; in
    wordle, where many moves are good, each candidate's ``wordle_value`` (consistency with the feedback, then the
    targets it leaves). It sees only what the player sees, never the game's hidden state, so it is an honest
    upper bound for the built-in games rather than a look at the game's answers."""

    def __init__(self):
        self.stats = ScoreStats()

    def score_candidates(self, contexts, candidates: list[list[Candidate]]) -> list[list[float]]:
        self.stats.calls += 1
        scores = []
        for context, group in zip(contexts, candidates):
            if "Let's play Wordle" in context[0]["content"]:
                scores.append([wordle_value(context, c.text) for c in group])
                continue
            if MASTERMIND_MARK in context[0]["content"]:
                scores.append([mastermind_value(context, c.text) for c in group])
                continue
            if NUMBER_MARK in context[0]["content"]:
                scores.append([number_value(context, c.text) for c in group])
                continue
            expert = " ".join(expert_move(context).split()).lower()
            scores.append([1.0 if " ".join(c.text.split()).lower() == expert else 0.0 for c in group])
        return scores
