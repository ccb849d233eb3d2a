"""OpenAI-compatible servers (``vllm serve``, SGLang): n samples per request, requests sent concurrently,
bounded retries with backoff, then one clear error. The API key is read from an environment variable named
in the registry entry and never written anywhere."""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor

from playprm.errors import UsageError
from playprm.models.base import Candidate, PolicySpec


class ServerError(RuntimeError):
    pass


class OpenAIPolicy:
    def __init__(self, spec: PolicySpec, *, concurrency: int = 16, retries: int = 4, timeout: float = 120.0,
                 backoff: float = 1.0, client=None):
        self.spec = spec
        self.concurrency = concurrency
        self.retries = retries
        self.backoff = backoff
        if client is None:
            try:
                import openai
            except ImportError:
                raise UsageError("the openai backend needs the openai package: pip install 'playprm[openai]'") from None
            if not spec.base_url:
                raise UsageError(f"model '{spec.name}' uses the openai backend but its model_config has no "
                                 f"base_url (e.g. http://localhost:8000/v1)")
            key = os.environ.get(spec.api_key_env or "OPENAI_API_KEY", "EMPTY")
            client = openai.OpenAI(base_url=spec.base_url, api_key=key, timeout=timeout, max_retries=0)
        self.client = client

    def _one(self, messages: list[dict], n: int, temperature: float, max_tokens: int, seed: int | None):
        last_error = None
        for attempt in range(self.retries + 1):
            try:
                extra = {"chat_template_kwargs": self.spec.chat_template_kwargs} if self.spec.chat_template_kwargs else {}
                response = self.client.chat.completions.create(
                    model=self.spec.model_id, messages=messages, n=n, temperature=temperature,
                    max_tokens=max_tokens, seed=seed, logprobs=True, extra_body=extra or None,
                )
                out = []
                for choice in response.choices:
                    tokens = (choice.logprobs.content or []) if choice.logprobs else []
                    out.append(Candidate(text=choice.message.content or "", num_tokens=len(tokens),
                                         logprob=float(sum(t.logprob for t in tokens))))
                return out
            except Exception as error:  # timeouts, connection errors, 5xx
                last_error = error
                if attempt < self.retries:
                    time.sleep(self.backoff * 2 ** attempt)
        raise ServerError(f"server {self.spec.base_url} failed {self.retries + 1} times: {last_error}")

    def generate(self, contexts: list[list[dict]], *, n: int = 1, temperature: float = 0.0,
                 max_tokens: int = 256, seed: int | None = None) -> list[list[Candidate]]:
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            futures = [pool.submit(self._one, c, n, temperature, max_tokens, seed) for c in contexts]
            return [f.result() for f in futures]
