"""Finding games (built-in pack, clembench checkouts, game_registry.json: ``registry``), their instances and
splits, and the built-in games themselves (``builtin``)."""
