"""playprm's openai engine against a real OpenAI-compatible server: ``transformers serve`` on a tiny policy
(extra ``transformers[serving]``), on 127.0.0.1 only, stopped after each use. Greedy play, best-of-n with n
candidates per turn (the server ignores ``n``, so playprm asks again for the rest), a server that never
answers (the client's timeout ends it), and a server killed mid-run (its episodes fail, the run finishes)."""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from loopback_server import HANG, LoopbackServer

from playprm.cli import configure_logging, main
from playprm.models.base import PolicySpec

START_TIMEOUT = 240  # seconds for the server to load the tiny model (2 shared CPU cores)


@pytest.fixture(scope="module")
def servable(tmp_path_factory) -> dict[str, Path]:
    """A tiny policy/PRM pair that ``transformers serve`` loads: it loads a multimodal checkpoint (the tiny
    Qwen3.5) with AutoProcessor, which needs a preprocessor_config.json the tiny folder lacks; plain Qwen3
    is served as it is."""
    for module in ("openai", "fastapi", "uvicorn"):
        pytest.importorskip(module, reason="needs the serving extra: pip install 'transformers[serving]'")
    from playprm.models.tiny import TinySize
    from playprm.prm.tiny import make_tiny

    return make_tiny(tmp_path_factory.mktemp("servable"), TinySize(arch="qwen3"))


@contextmanager
def transformers_serve(model: Path):
    """``transformers serve MODEL`` on 127.0.0.1 and a free port; yields (base_url, process); always stopped."""
    process = subprocess.Popen(
        [sys.executable, "-m", "transformers.cli.transformers", "serve", str(model), "--host", "127.0.0.1",
         "--port", "0", "--device", "cpu"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    lines: queue.Queue = queue.Queue()
    # a thread drains the server's output (a full pipe would stall it) and hands it over line by line
    threading.Thread(target=lambda: [lines.put(line) for line in process.stdout] + [lines.put(None)],
                     daemon=True).start()
    try:
        deadline, seen = time.monotonic() + START_TIMEOUT, []
        while True:  # uvicorn names the port it bound once it listens
            try:
                line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                pytest.fail("transformers serve did not start in time:\n" + "".join(seen[-20:]))
            if line is None:
                pytest.fail("transformers serve exited:\n" + "".join(seen[-20:]))
            seen.append(line)
            match = re.search(r"running on http://127\.0\.0\.1:(\d+)", line)
            if match:
                break
        yield f"http://127.0.0.1:{match[1]}/v1", process
    finally:
        process.kill()
        process.wait(timeout=30)


@pytest.fixture(scope="module")
def server(servable):
    with transformers_serve(servable["policy"]) as (url, _):
        yield url


def registry(folder: Path, url: str, model_id: Path) -> None:
    (folder / "model_registry.json").write_text(json.dumps([{
        "model_name": "served", "backend": "openai_compatible", "model_id": str(model_id),
        "model_config": {"base_url": url}}]))


def eval_args(results: Path, *extra: str) -> list[str]:
    return ["eval", "--policy-model", "served", "--game", "wordle", "--limit", "1", "--results-dir", str(results),
            "--max-tokens", "8", *extra]


def test_greedy_play_through_transformers_serve(server, servable, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    registry(tmp_path, server, servable["policy"])
    assert main(eval_args(tmp_path / "r")) == 0
    assert not list((tmp_path / "r").rglob("error.json"))
    costs = [json.loads(p.read_text()) for p in (tmp_path / "r").rglob("cost.json")]
    assert len(costs) == 2 and all(cost["generated_tokens"] > 0 for cost in costs)


def test_best_of_n_gets_n_candidates_per_turn_from_a_server_that_ignores_n(server, servable, tmp_path,
                                                                          monkeypatch):
    monkeypatch.chdir(tmp_path)
    registry(tmp_path, server, servable["policy"])
    assert main(eval_args(tmp_path / "r", "--mode", "best-of-n", "--n-candidates", "3", "--temperature", "1.0",
                          "--prm-path", str(servable["prm"]))) == 0
    assert not list((tmp_path / "r").rglob("error.json"))
    turns = [json.loads(line) for path in (tmp_path / "r").rglob("candidates.jsonl")
             for line in path.read_text().splitlines()]
    assert turns and all(len(turn["candidates"]) == 3 for turn in turns)


def test_a_server_that_never_answers_times_out_with_bounded_retries():
    pytest.importorskip("openai")
    from playprm.models.openai_policy import OpenAIPolicy, ServerError

    with LoopbackServer(lambda request: HANG, max_requests=5, lifetime=60) as silent:
        spec = PolicySpec(name="silent", backend="openai", model_id="m", base_url=silent.url)
        policy = OpenAIPolicy(spec, timeout=0.5, retries=1, backoff=0)
        started = time.monotonic()
        with pytest.raises(ServerError, match="failed 2 times: Request timed out"):
            policy.generate([[{"role": "user", "content": "hi"}]])
        assert time.monotonic() - started < 30
    assert len(silent.requests) == 2


def test_a_server_killed_mid_run_fails_the_remaining_episodes_and_the_run_finishes(servable, tmp_path):
    from playprm.models.openai_policy import OpenAIPolicy
    from playprm.models.registry import spec_from_entry
    from playprm.play.config import EvalConfig
    from playprm.play.wiring import run_eval

    class KillAfterFirstCall:
        """The fault-injection hook: the server is killed right after the first batch is answered."""

        def __init__(self, policy, process):
            self.policy, self.process, self.spec, self.calls = policy, process, policy.spec, 0

        def generate(self, contexts, **kwargs):
            self.calls += 1
            out = self.policy.generate(contexts, **kwargs)
            if self.calls == 1:
                self.process.kill()
                self.process.wait(timeout=30)
            return out

    with transformers_serve(servable["policy"]) as (url, process):
        spec = spec_from_entry({"model_name": "served", "backend": "openai_compatible",
                                "model_id": str(servable["policy"]), "model_config": {"base_url": url}}, "test")
        policy = KillAfterFirstCall(OpenAIPolicy(spec, retries=1, backoff=0, timeout=10), process)
        # one episode in flight at a time: the first one's first turn is answered, every later call fails
        cfg = EvalConfig(policy_model="served", games=["wordle"], limit=1, results_dir=tmp_path / "r", max_tokens=8,
                         batch_size=1)
        _, summary = run_eval(cfg, policy=policy, progress=False)
    errors = [json.loads(path.read_text()) for path in (tmp_path / "r").rglob("error.json")]
    assert sum(summary.errored.values()) == len(errors) >= 1
    assert sum(summary.played.values()) + len(errors) == 2
    assert all(error["stage"] == "policy" and "failed 2 times" in error["message"] for error in errors)
    assert not list((tmp_path / "r").rglob(".*staging*"))


ENTRY = {"model_name": "served", "backend": "playprm", "model_id": "tiny",
         "model_config": {"engine": "openai", "base_url": "http://127.0.0.1:8000/v1"}}


def test_an_unknown_model_config_key_of_a_playprm_entry_is_refused_naming_the_closest_valid_one():
    from playprm.errors import UsageError
    from playprm.models.registry import spec_from_entry

    entry = {**ENTRY, "model_config": {**ENTRY["model_config"], "model": "tiny"}}  # meant: model_id
    with pytest.raises(UsageError, match="unknown key 'model'; did you mean 'model_id'"):
        spec_from_entry(entry, "model_registry.json")


def test_clemcore_backends_keep_clemcores_keys_and_warn_on_unknown_ones(caplog):
    from playprm.models.registry import registry_entries, spec_from_entry

    configure_logging(verbose=False)  # as the CLI does: clemcore's logging config silences earlier loggers
    with caplog.at_level("WARNING"):
        for entry, source in registry_entries():  # clemcore's packaged entries: eos_to_cull, padding_side, ...
            if entry.get("backend") in ("huggingface_local", "openai"):
                spec_from_entry(entry, source)
        assert not caplog.records
        spec_from_entry({"model_name": "m", "backend": "huggingface_local", "huggingface_id": "org/m",
                         "model_config": {"eos_to_cull": "<eos>", "lod_in_4bit": True}}, "model_registry.json")
    assert "unknown key 'lod_in_4bit'; did you mean 'load_in_4bit'? (ignored)" in caplog.text
