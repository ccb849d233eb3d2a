"""Taboo (two players): see master.py for the rules."""
