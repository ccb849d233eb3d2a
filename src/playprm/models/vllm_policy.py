"""vLLM backend: the offline ``LLM`` engine with prefix caching, ``SamplingParams(n=...)`` and LoRA adapters.

Prefix caching plays the role of the transformers backend's shared prefill: the n samples of a context, and
contexts that share a game's instructions, reuse the cached KV blocks. On Qwen3.5 only the full-attention
layers (1 in 4) have KV blocks; the gated delta-net layers keep one recurrent state per sequence, which vLLM
caches per block boundary only where its hybrid (mamba-style) prefix caching is enabled for the model — see
docs/inference.md.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from playprm import chat
from playprm.errors import UsageError
from playprm.models import replies
from playprm.models.base import Candidate, PolicySpec, refuse_prefixes


def require_vllm():
    try:
        import vllm
    except ImportError:
        raise UsageError("the vllm backend needs vLLM: pip install 'playprm[gpu]' on a CUDA machine, "
                         "or use the transformers backend") from None
    return vllm


def vllm_adapter(spec: PolicySpec) -> str:
    """The adapter folder vLLM should load: a text-layout adapter (what train-sft writes) on a multimodal
    checkpoint is copied with the hub layout's key names, the only ones vLLM's Qwen3.5 maps (see adapters)."""
    from playprm.models import adapters

    folder = Path(spec.peft_model)
    if not (adapters.is_multimodal_checkpoint(spec.model_id) and (folder / adapters.ADAPTER_WEIGHTS).is_file()
            and adapters.keys_layout(adapters.adapter_keys(folder)) == "text"):
        return str(spec.peft_model)
    return str(adapters.hub_layout_copy(folder, tempfile.mkdtemp(prefix="playprm-lora-")))


class VLLMPolicy:
    def __init__(self, spec: PolicySpec, *, gpu_memory_utilization: float = 0.85, max_model_len: int | None = None):
        vllm = require_vllm()
        self.spec = spec
        kwargs = dict(model=spec.model_id, enable_prefix_caching=True, tensor_parallel_size=spec.tensor_parallel_size,
                      gpu_memory_utilization=gpu_memory_utilization, trust_remote_code=spec.trust_remote_code)
        if max_model_len:
            kwargs["max_model_len"] = max_model_len
        if spec.load_in_4bit:
            kwargs["quantization"] = "bitsandbytes"
        if spec.peft_model:
            kwargs.update(enable_lora=True, max_lora_rank=64)
        self.llm = vllm.LLM(**kwargs)
        self.tokenizer = self.llm.get_tokenizer()
        self.reply_rule = replies.reply_rule(spec, self.tokenizer)
        self.lora = None
        if spec.peft_model:
            from vllm.lora.request import LoRARequest

            self.lora = LoRARequest("policy", 1, vllm_adapter(spec))

    def generate(self, contexts: list[list[dict]], *, n: int = 1, temperature: float = 0.0,
                 max_tokens: int = 256, seed: int | None = None,
                 prefixes: list[str] | None = None) -> list[list[Candidate]]:
        refuse_prefixes(prefixes, "vLLM")
        from vllm import SamplingParams

        prompts = [{"prompt_token_ids": chat.prompt_ids(self.tokenizer, c, self.spec.chat_template_kwargs)}
                   for c in contexts]
        params = SamplingParams(n=n, temperature=temperature, max_tokens=max_tokens, seed=seed, logprobs=0)
        outputs = self.llm.generate(prompts, params, lora_request=self.lora, use_tqdm=False)
        results = []
        for prompt, output in zip(prompts, outputs):
            # prefix caching: the prompt tokens vLLM did not find in its cache (older vLLMs do not say)
            cached = getattr(output, "num_cached_tokens", None)
            prefill = None if cached is None else len(prompt["prompt_token_ids"]) - cached
            group = []
            for o in output.outputs:
                # decoded from the ids (end-of-sequence token included) as clemcore's huggingface_local decodes
                raw = self.tokenizer.decode(list(o.token_ids), skip_special_tokens=False)
                group.append(Candidate(text=self.reply_rule(raw), num_tokens=len(o.token_ids),
                                       logprob=float(o.cumulative_logprob or 0.0), raw=raw,
                                       finished=o.finish_reason == "stop", prefill_tokens=prefill))
            results.append(group)
        return results
