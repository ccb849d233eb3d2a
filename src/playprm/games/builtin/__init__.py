"""The built-in game pack: wordle, taboo and referencegame, written for playprm from clembench's rules.

One folder per game, laid out as clemcore expects (``clemgame.json``, ``master.py``, ``instancegenerator.py``,
``in/instances.json``, ``resources/``), so both ``playprm`` and clemcore's own ``clem`` CLI can run them.
"""
