"""Policy backends behind one interface (``models.base.Policy``) and the registry that resolves them."""

from __future__ import annotations

from playprm.models.base import Candidate, Policy, PolicySpec


def load_policy(spec: PolicySpec) -> Policy:
    """Load the backend ``spec.backend`` names (transformers, vLLM or an OpenAI-compatible server)."""
    if spec.backend == "hf":
        from playprm.models.hf import HFPolicy

        return HFPolicy(spec)
    if spec.backend == "vllm":
        from playprm.models.vllm_policy import VLLMPolicy

        return VLLMPolicy(spec)
    if spec.backend == "openai":
        from playprm.models.openai_policy import OpenAIPolicy

        return OpenAIPolicy(spec)
    if spec.backend == "scripted":
        from playprm.models.scripted import RandomValidPolicy

        return RandomValidPolicy()
    raise ValueError(f"unknown backend {spec.backend!r}")


__all__ = ["Candidate", "Policy", "PolicySpec", "load_policy"]
