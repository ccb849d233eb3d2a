"""Write the built-in wordle's word lists: the allowed guesses (``english-words``) and the small list
(``wordfreq``), both committed.

The lists are committed (``src/playprm/games/builtin/wordle/resources/valid_words.txt`` and ``small_words.txt``)
so that games start fast and every checkout plays with the same words; rerun this script only to change how the
lists are made (it needs ``pip install english-words wordfreq``; neither is needed to play):

    python scripts/make_wordlists.py

Allowed: every five-letter, all-lowercase, ASCII word of the ``web2`` and ``gcide`` lists (lowercase-only
keeps proper nouns out of ``web2``), plus the plural ``<word>s`` of each four-letter ``web2`` word that does
not end in s, x, z, sh or ch, because both lists hold only base forms and players guess plurals ("stars") all
the time.

Small list (``"vocabulary": "small"`` instances, for a model trained from scratch, which cannot hold 14,430 words):
the ``SMALL_SIZE`` most frequent five-letter words of wordfreq's English list that are lowercase ``web2`` words or
their plurals (the rule above without ``gcide``, whose lowercased entries include names).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from english_words import get_english_words_set

RESOURCES = Path(__file__).resolve().parents[1] / "src/playprm/games/builtin/wordle/resources"
OUT = RESOURCES / "valid_words.txt"
SMALL_OUT = RESOURCES / "small_words.txt"
SMALL_SIZE = 300


def _plain_lowercase(words: set[str], length: int) -> set[str]:
    return {w for w in words if len(w) == length and w.isascii() and w.isalpha() and w.islower()}


def allowed_guesses() -> list[str]:
    """The sorted list of allowed five-letter guesses (see the module docstring for the rule)."""
    web2 = get_english_words_set(["web2"], lower=False, alpha=True)
    gcide = get_english_words_set(["gcide"], lower=True, alpha=True)
    words = _plain_lowercase(web2, 5) | _plain_lowercase(gcide, 5)
    plurals = {w + "s" for w in _plain_lowercase(web2, 4) if not w.endswith(("s", "x", "z", "sh", "ch"))}
    return sorted(words | plurals)


def small_words() -> list[str]:
    """The small list, most frequent first (see the module docstring for the rule)."""
    from wordfreq import iter_wordlist

    web2 = _plain_lowercase(get_english_words_set(["web2"], lower=False, alpha=True), 5)
    plurals = {w + "s" for w in _plain_lowercase(get_english_words_set(["web2"], lower=False, alpha=True), 4)
               if not w.endswith(("s", "x", "z", "sh", "ch"))}
    words = []
    for word in iter_wordlist("en", wordlist="best"):
        if word in web2 or word in plurals:
            words.append(word)
            if len(words) == SMALL_SIZE:
                return words
    raise RuntimeError(f"wordfreq's list holds fewer than {SMALL_SIZE} such words")


def _write(path: Path, words: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write("\n".join(words) + "\n")
    os.replace(tmp, path)
    print(f"wrote {len(words)} words to {path}")


def main() -> None:
    _write(OUT, allowed_guesses())
    _write(SMALL_OUT, small_words())


if __name__ == "__main__":
    main()
