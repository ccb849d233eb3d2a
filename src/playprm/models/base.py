"""The one thing every decoding mode asks of a policy: N candidate replies for each of a batch of chat contexts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol


@dataclass
class Candidate:
    """One sampled reply."""

    text: str
    num_tokens: int  # generated tokens, end-of-turn token included when it was produced
    logprob: float  # sum of the tokens' log-probabilities under the model (temperature 1)
    finished: bool = True  # False when generation stopped at max_tokens before the end-of-turn token
    raw: str | None = None  # the decoded reply before the backend's post-processing (models.replies); None: text
    prefill_tokens: int | None = None  # context tokens the model ran for this call (shared by the context's n
    # candidates; fewer than the context when an earlier turn's state was reused); None: the backend does not say
    cached_tokens: int | None = None  # context tokens the engine found in its prefix cache (vLLM counts whole
    # KV blocks, 128 tokens each on CPU); None: the backend keeps no such cache or does not say
    token_ids: list[int] | None = None  # the sampled token ids, stop token included (transformers backend; None:
    # the backend does not keep them). train-grpo trains on these, never on the text encoded again


@dataclass
class PolicySpec:
    """A resolved policy: where the weights come from and how to run them (see ``models.registry``)."""

    name: str  # used in results folder names
    backend: str  # "hf" | "vllm" | "openai"
    model_id: str  # local directory or hub id (or served model name for openai)
    peft_model: str | None = None
    load_in_4bit: bool = False
    chat_template_kwargs: dict = field(default_factory=dict)
    trust_remote_code: bool = False
    base_url: str | None = None  # openai-compatible servers
    api_key_env: str | None = None  # name of the environment variable that holds the key (never the key)
    tensor_parallel_size: int = 1
    dtype: str | None = None  # weights' dtype for transformers and vLLM alike ("float32", "bfloat16", "float16",
    # "auto"); None: each backend's default (bf16 on CUDA; the checkpoint's on CPU for transformers)
    lookup_source: str = "path"  # registry file the entry came from, or "path"
    registry_entry: dict | None = None

    def describe(self) -> dict:
        """JSON-safe description for run metadata (no secrets)."""
        return {
            "name": self.name, "backend": self.backend, "model_id": self.model_id, "peft_model": self.peft_model,
            "load_in_4bit": self.load_in_4bit, "dtype": self.dtype, "chat_template_kwargs": self.chat_template_kwargs,
            "lookup_source": self.lookup_source,
        }


class Policy(Protocol):
    """A loaded policy. ``generate`` returns, per context, ``n`` candidates; greedy is ``n=1, temperature=0``."""

    spec: PolicySpec

    def generate(self, contexts: list[list[dict]], *, n: int = 1, temperature: float = 0.0,
                 max_tokens: int = 256, seed: int | None = None,
                 prefixes: list[str] | None = None) -> list[list[Candidate]]: ...
    # ``prefixes`` (optional, transformers backend): continue each context's reply from this text; the
    # candidates then hold only the continuation. Backends that cannot refuse them with ``refuse_prefixes``.


def refuse_prefixes(prefixes: list[str] | None, backend: str) -> None:
    """Raise for ``prefixes`` on a backend that cannot continue a partial reply (``EvalConfig.validate_backend``
    stops such runs before a model loads; this guards direct callers)."""
    if prefixes is not None:
        raise NotImplementedError(f"the {backend} backend cannot continue a partial reply (prefixes); "
                                  "use the transformers backend (hf)")


def printable(text: str) -> str:
    """Model output as valid Unicode: lone surrogates (undecodable bytes from a server) become U+FFFD, so the
    game applies its own rules to it and every results file can still be written as UTF-8."""
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    return text.encode("utf-8", "replace").decode("utf-8", "replace") if _has_surrogates(text) else text


def _has_surrogates(text: str) -> bool:
    try:
        text.encode("utf-8")
        return False
    except UnicodeEncodeError:
        return True


def clean_candidates(outputs: list[list[Candidate]]) -> list[list[Candidate]]:
    """Every candidate's text (and raw text) made printable (see ``printable``), in place."""
    for group in outputs:
        for candidate in group:
            candidate.text = printable(candidate.text)
            if candidate.raw is not None:
                candidate.raw = printable(candidate.raw)
    return outputs
