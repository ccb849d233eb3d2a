"""Wordle (one player): see master.py for the rules and rules.py for the feedback function."""
