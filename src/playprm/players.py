"""Policy and scorer names to objects: the one place that knows both the model backends (``models``) and the
players written for the built-in games (``games.builtin``).

A ``--policy-model`` name becomes a ``PolicySpec`` in ``models.registry.resolve_policy`` (``scripted:``,
``programmatic:``, a registry entry, a model folder, a .gguf file, a hub id) and a policy in ``load_policy``
here; a ``--scorer`` name other than ``prm`` (the trained PRM, loaded from ``--prm-path``) names a class of
``SCORER_CLASSES``.
"""

from __future__ import annotations

from playprm import models
from playprm.games.builtin.expert import ExpertScorer
from playprm.models.base import Policy, PolicySpec
from playprm.search.scorers import LogprobScorer

# --scorer name -> what ranks best-of-n candidates without a PRM: the policy's own mean token log-probability
# (the no-PRM baseline); the programmatic expert's judgement of the player's context (an upper bound that sees
# no hidden game state)
SCORER_CLASSES = {"logprob": LogprobScorer, "expert": ExpertScorer}
SCORERS = ("prm", *SCORER_CLASSES)  # every --scorer: the trained PRM (--prm-path) first, the eval default


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
