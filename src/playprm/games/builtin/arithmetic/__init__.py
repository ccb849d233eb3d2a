"""Arithmetic (one player, one question): a static task, see master.py."""
