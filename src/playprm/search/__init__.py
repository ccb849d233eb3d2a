"""Decoding strategies, one module each (``greedy``, ``best_of_n``, ``beam_search``, ``dvts``,
``lookahead_free_beam``), declared once in ``modes``; ``tree`` holds what the tree searches share. They know
nothing about games: they take contexts (or episodes to fork), a policy and a scorer."""
