"""Policy backends behind one interface (``models.base.Policy``) and the registry that resolves them; the
scripted players of the built-in games load beside them in ``playprm.play.players``."""

from __future__ import annotations

from playprm.errors import one_line_errors
from playprm.models.base import Candidate, Policy, PolicySpec


def load_policy(spec: PolicySpec) -> Policy:
    """Load the backend ``spec.backend`` names (transformers, vLLM or an OpenAI-compatible server).

    A model that fails to load (a corrupt or incomplete folder, an unknown architecture, too little memory)
    is a one-line ``UsageError`` naming the model and the cause; ``-v`` logs the traceback.
    """
    with one_line_errors(f"cannot load model {spec.model_id!r} ({spec.backend} backend)"):
        return _load(spec)


def _load(spec: PolicySpec) -> Policy:
    if spec.backend == "hf":
        from playprm.models.hf import HFPolicy

        return HFPolicy(spec)
    if spec.backend == "vllm":
        from playprm.models.vllm_policy import VLLMPolicy

        return VLLMPolicy(spec)
    if spec.backend == "openai":
        from playprm.models.openai_policy import OpenAIPolicy

        return OpenAIPolicy(spec)
    raise ValueError(f"unknown backend {spec.backend!r} (the built-in games' players load in playprm.play.players)")


__all__ = ["Candidate", "Policy", "PolicySpec", "load_policy"]
