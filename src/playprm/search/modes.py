"""Every decoding mode, declared once: ``eval``'s choices and help, config validation, the results folder tag,
the fingerprint and ``evaluation`` all read this table.

A per-turn mode's strategy module (``greedy`` too, which also plays every unguided turn) has ``choose(contexts,
policy, scorer, settings, *, rejected) -> list[Choice]`` (``rejected``: per context, the replies the game already
refused that player in the episode, never to be played while another candidate exists); a per-episode mode's has
``search(roots, policy, scorer, settings, *, is_guided, mode) -> finished episodes``. ``evaluation.episode_player``
puts both behind the one callable the runner takes.
Strategy modules are imported when a run asks for them, so reading the table (``--help``, validation) loads
no game code.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class DecodingMode:
    name: str
    module: str  # the strategy, a module of playprm.search
    per_episode: bool  # False: one call per policy turn (choose); True: whole episodes (search)
    guided: bool  # candidates are ranked by a scorer (the PRM)
    env_lookahead: bool  # steps the game with actions it does not finally play: reported apart from honest modes
    beam: bool  # reads --beam-width and --num-beam-iterations
    tag: str  # results folder tag, formatted with the config's fields ("" for none)
    summary: str  # one line for ``eval --help``
    backends: tuple[str, ...] | None = None  # policy backends that can run it (None: every one)
    needs: str = ""  # what those backends offer that the others lack, for the error message

    @property
    def reads_aggregate(self) -> bool:
        """Whether ``--aggregate`` (turn scores combined along a trajectory) changes its result."""
        return self.per_episode

    @property
    def unread_settings(self) -> tuple[str, ...]:
        """The run settings (``playprm_run.json`` keys) this mode never reads, so reports leave them blank."""
        return ((() if self.beam else ("beam_width", "num_beam_iterations"))
                + (() if self.reads_aggregate else ("aggregate",)))

    def strategy(self):
        """The strategy module (imported now)."""
        return importlib.import_module(f"playprm.search.{self.module}")


MODES: dict[str, DecodingMode] = {mode.name: mode for mode in (
    DecodingMode("greedy", "greedy", per_episode=False, guided=False, env_lookahead=False, beam=False, tag="",
                 summary="one reply per turn (temperature 0 unless --temperature)"),
    DecodingMode("best-of-n", "best_of_n", per_episode=False, guided=True, env_lookahead=False, beam=False,
                 tag="bon{n_candidates}", summary="N candidates per guided turn, the best-scored one played"),
    DecodingMode("beam-search", "beam_search", per_episode=True, guided=True, env_lookahead=True, beam=True,
                 tag="beam{beam_width}x{n_candidates}-{aggregate}",
                 summary="B game trajectories kept by aggregated PRM score (looks ahead in the game)"),
    DecodingMode("dvts", "dvts", per_episode=True, guided=True, env_lookahead=True, beam=True,
                 tag="dvts{n_candidates}w{beam_width}-{aggregate}",
                 summary="N / B independent subtrees of width B (looks ahead in the game)"),
    DecodingMode("lf-beam", "lookahead_free_beam", per_episode=False, guided=True, env_lookahead=False, beam=True,
                 tag="lfbeam{beam_width}x{n_candidates}", backends=("hf",),
                 needs="continuing a partial reply (prefixes)",
                 summary="a beam over each reply's chunks, ranked before the game answers (transformers only)"),
)}


def mode_help() -> str:
    """``eval --mode``'s help: every mode with its one line."""
    return "; ".join(f"{mode.name}: {mode.summary}" for mode in MODES.values())
