"""Kept for ``models.programmatic``'s imports until it imports ``playprm.games.builtin.scripted``, where the scripted
players now live beside the games they play."""

from playprm.games.builtin.scripted import (  # noqa: F401
    RandomValidPolicy,
    _taboo_words,
    valid_moves,
    wordle_history,
)
