"""The built-in game pack: wordle, taboo and referencegame, written for playprm from clembench's rules, and
arithmetic, a one-question static task (tagged ``static_1.0``, as clembench's ``static/`` tasks are) so that
statscore exists offline.

One folder per game, laid out as clemcore expects (``clemgame.json``, ``master.py``, ``instancegenerator.py``,
``in/instances.json``, ``resources/``), so both ``playprm`` and clemcore's own ``clem`` CLI can run them.
"""
