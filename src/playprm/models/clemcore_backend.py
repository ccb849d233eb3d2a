"""A clemcore backend named ``playprm``: lets clemcore's own ``clem run`` play games with a playprm policy.

clemcore finds backends as ``<name>_api.py`` files in the working directory; ``playprm register`` writes a
two-line ``playprm_api.py`` there that imports ``PlayprmBackend`` from here (the repository root has one).
A registry entry then reads, e.g.::

    {"model_name": "tiny", "backend": "playprm", "huggingface_id": "tiny/policy",
     "model_config": {"engine": "hf", "chat_template_kwargs": {"enable_thinking": false}}}
"""

from __future__ import annotations

from clemcore.backends import Backend
from clemcore.backends.model_registry import BatchGenerativeModel, ModelSpec


def policy_spec(model_spec: ModelSpec):
    """The playprm ``PolicySpec`` of a clemcore registry entry (nothing loads)."""
    from playprm.models.registry import spec_from_entry

    entry = {k: v for k, v in model_spec.to_dict().items() if k != "lookup_source"}
    entry["backend"] = "playprm"
    return spec_from_entry(entry, getattr(model_spec, "lookup_source", "clemcore"))


class PlayprmModel(BatchGenerativeModel):
    """clemcore Model over a playprm Policy; batches with ``clem run -b N``."""

    def __init__(self, model_spec: ModelSpec):
        super().__init__(model_spec)
        from playprm.models import load_policy

        self.policy = load_policy(policy_spec(model_spec))

    def generate_batch_response(self, batch_messages):
        temperature = float(self.get_gen_arg("temperature") or 0.0)
        max_tokens = int(self.get_gen_arg("max_tokens") or 256)
        outputs = self.policy.generate(batch_messages, n=1, temperature=temperature, max_tokens=max_tokens, seed=0)
        results = []
        for messages, candidates in zip(batch_messages, outputs):
            text = candidates[0].text  # post-processed as the clemcore backend it mirrors (models.replies)
            raw = text if candidates[0].raw is None else candidates[0].raw
            response_object = {"response": raw, "generated_tokens": candidates[0].num_tokens}
            results.append((messages, response_object, text))
        return results

    def generate_response(self, messages):
        return self.generate_batch_response([messages])[0]


class PlayprmBackend(Backend):
    def get_model_for(self, model_spec: ModelSpec) -> PlayprmModel:
        """clem run's entry into playprm: its CPU threads decided, as a playprm run decides them, then the model."""
        from playprm.transformers_runtime import choose_cpu_threads

        choose_cpu_threads(policy_spec(model_spec).model_id)
        return PlayprmModel(model_spec)
