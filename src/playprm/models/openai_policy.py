"""OpenAI-compatible servers (``vllm serve``, SGLang, ``transformers serve``): n samples per request, requests
sent concurrently, bounded retries with backoff on timeouts, lost connections and 5xx answers, then one clear
error. A 4xx answer (a wrong key, an unknown model, a malformed request) fails at once: asking again cannot
fix it. A server that returns fewer than n choices (``transformers serve`` ignores ``n``) is asked again for
the rest. The API key is read from an environment variable named in the registry entry, never written
anywhere, and masked in every error text (``playprm.redact``)."""

from __future__ import annotations

import logging
import os
import time
from concurrent.futures import ThreadPoolExecutor

from playprm.chat import clemcore_messages
from playprm.errors import UsageError
from playprm.models import replies
from playprm.models.base import Candidate, PolicySpec, refuse_prefixes
from playprm.redact import redact, remember_secret

logger = logging.getLogger(__name__)

RETRYABLE_4XX = frozenset({408, 409, 429})  # request timeout, conflict, rate limit: another try may succeed


class ServerError(RuntimeError):
    """The server failed or refused; ``retryable`` False for refusals (4xx) that another try cannot change."""

    def __init__(self, message: str, *, retryable: bool = True):
        super().__init__(message)
        self.retryable = retryable


class OpenAIPolicy:
    def __init__(self, spec: PolicySpec, *, concurrency: int = 16, retries: int = 4, timeout: float = 120.0,
                 backoff: float = 1.0, client=None):
        self.spec = spec
        self.concurrency = concurrency
        self.retries = retries
        self.backoff = backoff
        self._warned_short = False
        if client is None:
            try:
                import openai
            except ImportError:
                raise UsageError("the openai backend needs the openai package: pip install 'playprm[openai]'") from None
            if not spec.base_url:
                raise UsageError(f"model '{spec.name}' uses the openai backend but its model_config has no "
                                 f"base_url (e.g. http://localhost:8000/v1)")
            key = os.environ.get(self.key_env, "EMPTY")
            remember_secret(key)
            client = openai.OpenAI(base_url=spec.base_url, api_key=key, timeout=timeout, max_retries=0)
        self.client = client

    @property
    def key_env(self) -> str:
        """The environment variable the API key is read from."""
        return self.spec.api_key_env or "OPENAI_API_KEY"

    def _request(self, messages: list[dict], n: int, temperature: float, max_tokens: int,
                 seed: int | None) -> list[Candidate]:
        extra = {"chat_template_kwargs": self.spec.chat_template_kwargs} if self.spec.chat_template_kwargs else {}
        response = self.client.chat.completions.create(
            model=self.spec.model_id, messages=messages, n=n, temperature=temperature,
            max_tokens=max_tokens, seed=seed, logprobs=True, extra_body=extra or None,
        )
        choices = response.choices
        usage = getattr(response, "usage", None)
        out = []
        for choice in choices:
            tokens = (choice.logprobs.content or []) if getattr(choice, "logprobs", None) else []
            num_tokens = len(tokens)
            if not tokens and len(choices) == 1 and usage is not None:  # a server without logprobs
                num_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
            out.append(Candidate(text=choice.message.content or "", num_tokens=num_tokens,
                                 logprob=float(sum(t.logprob for t in tokens))))
        return out

    def _with_retries(self, messages: list[dict], n: int, temperature: float, max_tokens: int,
                      seed: int | None) -> list[Candidate]:
        last_error = None
        for attempt in range(self.retries + 1):
            try:
                return self._request(messages, n, temperature, max_tokens, seed)
            except Exception as error:  # timeouts, connection errors, 5xx; a 4xx ends here
                status = getattr(error, "status_code", None)
                if isinstance(status, int) and 400 <= status < 500 and status not in RETRYABLE_4XX:
                    raise ServerError(self._refusal(status, error), retryable=False) from error
                last_error = error
                if attempt < self.retries:
                    time.sleep(self.backoff * 2 ** attempt)
        raise ServerError(redact(f"server {self.spec.base_url} failed {self.retries + 1} times: {last_error}"))

    def _refusal(self, status: int, error: BaseException) -> str:
        """One line for a 4xx answer: the status, the server's words (keys masked) and what to check."""
        if status in (401, 403):
            hint = f"check the API key in ${self.key_env}"
        elif status == 404:
            hint = f"check base_url and that the server serves model_id {self.spec.model_id!r}"
        else:
            hint = f"check the registry entry of {self.spec.name!r} (model_id, model_config) against the server"
        said = " ".join(redact(str(error)).split())[:300]
        return f"server {self.spec.base_url} refused the request with {status} (not retried): {said}; {hint}"

    def _one(self, messages: list[dict], n: int, temperature: float, max_tokens: int, seed: int | None):
        out: list[Candidate] = []
        for request in range(n):  # at most n requests: each one brings at least one choice or raises
            seed_k = None if seed is None else seed + request  # a repeated seed would repeat the sample
            got = self._with_retries(messages, n - len(out), temperature, max_tokens, seed_k)
            if not got:
                raise ServerError(f"server {self.spec.base_url} answered with no choices")
            out += got[: n - len(out)]
            if len(out) == n:
                break
            if not self._warned_short:
                self._warned_short = True
                logger.warning("server %s returned %d of %d choices (it may ignore n); asking again for the rest",
                               self.spec.base_url, len(got), n)
        return out

    def generate(self, contexts: list[list[dict]], *, n: int = 1, temperature: float = 0.0,
                 max_tokens: int = 256, seed: int | None = None,
                 prefixes: list[str] | None = None) -> list[list[Candidate]]:
        refuse_prefixes(prefixes, "OpenAI-compatible")
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            futures = [pool.submit(self._one, clemcore_messages(c), n, temperature, max_tokens, seed) for c in contexts]
            return replies.finish([f.result() for f in futures], replies.openai_compatible)  # as clemcore's backend
