"""API keys never reach disk or the console: a server that echoes the bearer key in its 401 body (some
OpenAI-compatible servers do) once put the key into error.json and clembench.log. A 4xx answer fails at once."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys

import pytest
from loopback_server import LoopbackServer

from playprm.models.base import PolicySpec
from playprm.redact import MASK, install_log_redaction, redact, remember_secret

KEY = "sk-test-0123456789abcdef-SECRET"


def echo_key_401(request):
    """A 401 whose body repeats the key the client sent, as careless servers do."""
    sent = request["headers"].get("Authorization", "")
    return 401, {"error": {"message": f"Incorrect API key provided: {sent.removeprefix('Bearer ')}. "
                                      f"You sent Authorization: {sent}", "code": "invalid_api_key"}}


def test_a_key_echoed_in_a_401_reaches_no_file_no_log_and_no_console(tmp_path):
    pytest.importorskip("openai")
    with LoopbackServer(echo_key_401, max_requests=20, lifetime=120) as server:
        (tmp_path / "model_registry.json").write_text(json.dumps([{
            "model_name": "served", "backend": "openai_compatible", "model_id": "m",
            "model_config": {"base_url": server.url, "api_key_env": "MY_SERVER_KEY"}}]))
        run = subprocess.run(
            [sys.executable, "-m", "playprm", "eval", "--policy-model", "served", "--game", "wordle", "--limit", "1",
             "--results-dir", "results", "--max-tokens", "8"],
            cwd=tmp_path, env={**os.environ, "MY_SERVER_KEY": KEY}, capture_output=True, text=True, timeout=300)
    assert server.requests and all(KEY in r["headers"]["Authorization"] for r in server.requests)
    errors = sorted((tmp_path / "results").rglob("error.json"))
    assert errors, run.stderr
    record = json.loads(errors[0].read_text())
    assert "refused the request with 401 (not retried)" in record["message"]
    assert "$MY_SERVER_KEY" in record["message"]
    # fail fast: one request per episode, no retry by the client nor by the runner (not 5 tries with backoff)
    assert len(server.requests) <= len(errors)  # a 401 is final: one request per batch, no retry
    log = tmp_path / "results" / "clembench.log"  # in the run's folder, none in the working directory
    assert not (tmp_path / "clembench.log").exists()
    assert MASK in log.read_text()  # the error was logged, with the key masked
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert KEY not in path.read_text(encoding="utf-8", errors="replace"), path
    assert KEY not in run.stdout + run.stderr


def test_a_4xx_answer_is_not_retried_but_a_5xx_is():
    from playprm.models.openai_policy import OpenAIPolicy, ServerError

    class Refusing(Exception):
        def __init__(self, status):
            super().__init__(f"Error code: {status}")
            self.status_code = status

    class Client:
        calls: list[int] = []
        statuses = [503, 400]

        class chat:  # noqa: N801 - mimics the openai client's attribute layout
            class completions:  # noqa: N801
                @staticmethod
                def create(**kwargs):
                    status = Client.statuses[min(len(Client.calls), len(Client.statuses) - 1)]
                    Client.calls.append(status)
                    raise Refusing(status)

    spec = PolicySpec(name="served", backend="openai", model_id="m", base_url="http://127.0.0.1:9/v1")
    policy = OpenAIPolicy(spec, client=Client, retries=4, backoff=0)
    with pytest.raises(ServerError, match="refused the request with 400"):
        policy.generate([[{"role": "user", "content": "hi"}]])
    assert Client.calls == [503, 400]  # the 503 was retried, the 400 ended it


@pytest.mark.parametrize("text", [
    "Authorization: Bearer abcdefgh12345678",
    "{'Authorization': 'Bearer abcdefgh12345678'}",
    '{"api_key": "abcdefgh12345678"}',
    "headers={'x-api-key': 'abcdefgh12345678'}",
    "sent Bearer abcdefgh12345678 to the server",
])
def test_authorization_and_bearer_values_are_masked_in_any_text(text):
    masked = redact(text)
    assert "abcdefgh12345678" not in masked and MASK in masked
    assert redact(masked) == masked  # masking twice (a message, then its log record) changes nothing more


def test_registered_and_environment_keys_are_masked_but_short_placeholders_are_not(monkeypatch):
    remember_secret("registered-key-42424242")
    remember_secret("EMPTY")
    monkeypatch.setenv("SOME_SERVICE_API_KEY", "from-the-env-31313131")
    text = redact("a registered-key-42424242, an from-the-env-31313131, and EMPTY")
    assert text == f"a {MASK}, an {MASK}, and EMPTY"


def test_log_records_are_masked_before_any_handler_sees_them():
    install_log_redaction()
    remember_secret(KEY)
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)  # a handler added after installation, as clemcore's are
    logger = logging.getLogger("test_secrets.any")
    logger.addHandler(handler)
    try:
        try:
            raise RuntimeError(f"server said: bad key {KEY}")
        except RuntimeError:
            logger.error("batch failed (%s)", KEY, exc_info=True)
    finally:
        logger.removeHandler(handler)
    written = stream.getvalue()
    assert KEY not in written and "batch failed" in written and "RuntimeError" in written
