"""Policy and scorer names to objects: the one place that knows both the model backends (``models``) and the
players written for the built-in games (``games.builtin``).

A ``--policy-model`` name becomes a ``PolicySpec`` in ``models.registry.resolve_policy`` (``scripted:``,
``programmatic:``, a registry entry, a model folder, a .gguf file, a hub id) and a policy in ``load_policy``
here. A ``--scorer`` name is a row of ``SCORER_KINDS`` and a scorer (``search.scorers.Scorer``) in
``load_scorer``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from playprm import models
from playprm.games.builtin.expert import ExpertScorer
from playprm.models.base import Policy, PolicySpec
from playprm.search.scorers import LogprobScorer, Scorer


def _prm(prm_path: Path, load_in_4bit: bool) -> Scorer:
    from playprm.prm.scorer import PRMScorer

    return PRMScorer.from_path(prm_path, load_in_4bit=load_in_4bit)


# every --scorer: name -> the scorer made from (--prm-path, whether the policy loads in 4 bits). The trained PRM
# first, the eval default (4-bit with a 4-bit policy); then what ranks best-of-n candidates without a PRM: the
# policy's own mean token log-probability (the no-PRM baseline), and the programmatic expert's judgement of the
# player's context (an upper bound for the built-in games that sees no hidden game state)
SCORER_KINDS: dict[str, Callable[[Path | None, bool], Scorer]] = {
    "prm": _prm,
    "logprob": lambda prm_path, load_in_4bit: LogprobScorer(),
    "expert": lambda prm_path, load_in_4bit: ExpertScorer(),
}
SCORERS = tuple(SCORER_KINDS)  # the names, in the table's order (--scorer's choices)


def load_scorer(name: str, *, prm_path: Path | None, load_in_4bit: bool = False) -> Scorer:
    """The ``--scorer`` ``name`` (one of ``SCORERS``, validated by ``EvalConfig``), ready to score."""
    return SCORER_KINDS[name](prm_path, load_in_4bit)


def check_scripted_games(spec: PolicySpec, entries, *, flag: str = "--policy-model") -> None:
    """Refuse, before anything loads, a scripted player (``scripted:``, ``programmatic:``) of the built-in games
    for a game it has no moves for: it would answer every turn "I do not know this game."."""
    from playprm.errors import UsageError
    from playprm.games.registry import (
        builtin_games_dir,
        runs_another_versions_builtin_code,
        runs_builtin_code,
    )

    if spec.backend not in ("scripted", "programmatic"):
        return
    unknown = [entry for entry in entries if not runs_builtin_code(entry)]
    stale = [entry for entry in unknown if runs_another_versions_builtin_code(entry)]
    if stale:
        raise UsageError(f"{flag} {spec.model_id}: {', '.join(f'{e.name} ({e.path})' for e in stale)} holds a copy of "
                         "another playprm version's built-in game (its master.py differs from this version's); draw "
                         "its instances again with `playprm instances` (or delete that work directory), or play it "
                         "with a model")
    if unknown:
        builtin = ", ".join(sorted(p.name for p in builtin_games_dir().iterdir() if (p / "clemgame.json").is_file()))
        raise UsageError(f"{flag} {spec.model_id} has moves only for playprm's built-in games ({builtin}), not for "
                         f"{', '.join(f'{e.name} ({e.path})' for e in unknown)}; play those with a model, or leave "
                         "them out")


def load_policy(spec: PolicySpec) -> Policy:
    """The policy ``spec`` stands for: a scripted player of the built-in games (``scripted:random-valid``,
    ``programmatic:expert...``) or a model behind a backend (``models.load_policy``: transformers, vLLM, an
    OpenAI-compatible server)."""
    if spec.backend == "scripted":
        from playprm.games.builtin.scripted import RandomValidPolicy

        return RandomValidPolicy()
    if spec.backend == "programmatic":
        from playprm.games.builtin.expert import ExpertPolicy

        return ExpertPolicy(spec.model_id)
    return models.load_policy(spec)
