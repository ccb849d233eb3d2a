"""Write the built-in wordle's list of allowed guesses from the ``english-words`` package.

The list is committed (``src/playprm/games/builtin/wordle/resources/valid_words.txt``) so that games start
fast and every checkout plays with the same words; rerun this script only to change how the list is made:

    python scripts/make_wordlists.py

Allowed: every five-letter, all-lowercase, ASCII word of the ``web2`` and ``gcide`` lists (lowercase-only
keeps proper nouns out of ``web2``), plus the plural ``<word>s`` of each four-letter ``web2`` word that does
not end in s, x, z, sh or ch, because both lists hold only base forms and players guess plurals ("stars") all
the time.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from english_words import get_english_words_set

OUT = Path(__file__).resolve().parents[1] / "src/playprm/games/builtin/wordle/resources/valid_words.txt"


def _plain_lowercase(words: set[str], length: int) -> set[str]:
    return {w for w in words if len(w) == length and w.isascii() and w.isalpha() and w.islower()}


def allowed_guesses() -> list[str]:
    """The sorted list of allowed five-letter guesses (see the module docstring for the rule)."""
    web2 = get_english_words_set(["web2"], lower=False, alpha=True)
    gcide = get_english_words_set(["gcide"], lower=True, alpha=True)
    words = _plain_lowercase(web2, 5) | _plain_lowercase(gcide, 5)
    plurals = {w + "s" for w in _plain_lowercase(web2, 4) if not w.endswith(("s", "x", "z", "sh", "ch"))}
    return sorted(words | plurals)


def main() -> None:
    words = allowed_guesses()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=OUT.parent, prefix=".valid_words.", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write("\n".join(words) + "\n")
    os.replace(tmp, OUT)
    print(f"wrote {len(words)} words to {OUT}")


if __name__ == "__main__":
    main()
