"""Datasets from results dirs: SFT (winning dialogues per player, ``sft``), PRM (turn labels and preference
pairs, ``prm``), Playpen's records (``playpen``), all split by game instance (``split``)."""
