"""What playprm asks of vLLM's engine, checked without vLLM (the engine itself runs in tests/test_vllm_cpu.py):
the registry's ``dtype`` key, the CPU-only engine arguments, the LoRA rank slot, and the cached-token accounting."""

from __future__ import annotations

import importlib.util
import json

import pytest

from playprm.cli import main
from playprm.errors import UsageError
from playprm.games.builtin.scripted import RandomValidPolicy
from playprm.models.base import PolicySpec
from playprm.models.registry import resolve_policy
from playprm.models.vllm_policy import engine_kwargs, lora_rank_slot
from playprm.play.config import EvalConfig
from playprm.play.wiring import run_eval


def entry(**config) -> dict:
    return {"model_name": "m", "backend": "vllm", "huggingface_id": "org/model", "model_config": config}


@pytest.mark.parametrize("given, passed", [("float32", "float32"), ("fp32", "float32"), ("bf16", "bfloat16"),
                                           ("auto", "auto")])
def test_model_config_dtype_is_passed_to_both_engines_by_its_torch_name(tmp_path, given, passed):
    (tmp_path / "model_registry.json").write_text(json.dumps([entry(dtype=given)]))
    spec = resolve_policy("m", cwd=tmp_path)
    assert spec.dtype == passed and spec.describe()["dtype"] == passed
    assert engine_kwargs(spec, on_cpu=True)["dtype"] == passed


@pytest.mark.parametrize("dtype, message", [("float64", "dtype must be one of auto, float32"),
                                            (32, "dtype must be str")])
def test_an_unknown_dtype_fails_with_one_line_before_any_model_loads(tmp_path, dtype, message):
    (tmp_path / "model_registry.json").write_text(json.dumps([entry(dtype=dtype)]))
    with pytest.raises(UsageError, match=message) as info:
        resolve_policy("m", cwd=tmp_path)
    assert "\n" not in str(info.value)


def test_without_dtype_each_engine_keeps_its_default(tmp_path):
    (tmp_path / "model_registry.json").write_text(json.dumps([entry()]))
    spec = resolve_policy("m", cwd=tmp_path)
    assert spec.dtype is None and engine_kwargs(spec, on_cpu=False)["dtype"] == "auto"


def test_on_cpu_the_kv_cache_has_a_fixed_size_and_the_model_runs_eagerly():
    spec = PolicySpec(name="m", backend="vllm", model_id="/models/m")
    cpu, gpu = engine_kwargs(spec, on_cpu=True), engine_kwargs(spec, on_cpu=False)
    # vLLM's CPU worker would otherwise reserve 92% of the node's memory and refuse to start on a shared machine
    assert cpu["kv_cache_memory_bytes"] == 2 * 1024**3 and cpu["enforce_eager"]
    assert "gpu_memory_utilization" not in cpu and gpu["gpu_memory_utilization"] == 0.85
    assert "kv_cache_memory_bytes" not in gpu and "enforce_eager" not in gpu
    assert cpu["enable_prefix_caching"] and gpu["enable_prefix_caching"]


@pytest.mark.parametrize("rank, slot", [(8, 8), (16, 16), (12, 16), (64, 64), (100, 128)])
def test_the_lora_slot_is_the_smallest_vllm_allows_that_holds_the_adapter(tmp_path, rank, slot):
    (tmp_path / "adapter_config.json").write_text(json.dumps({"r": rank}))
    assert lora_rank_slot(str(tmp_path)) == slot
    spec = PolicySpec(name="m", backend="vllm", model_id="/models/m", peft_model=str(tmp_path))
    assert engine_kwargs(spec, on_cpu=True)["max_lora_rank"] == slot


def test_an_adapter_that_cannot_be_read_here_gets_the_largest_usual_slot(tmp_path):
    assert lora_rank_slot(str(tmp_path / "org-adapter")) == 64


class PrefixCachingPolicy(RandomValidPolicy):
    """Random valid moves that report, as vLLM does, the context tokens found in the prefix cache: 128 per turn
    already played in the episode (the turn number is the count of earlier replies in the context)."""

    def generate(self, contexts, **kwargs):
        out = super().generate(contexts, **kwargs)
        for context, group in zip(contexts, out):
            earlier = sum(m["role"] == "assistant" for m in context)
            for candidate in group:
                candidate.prefill_tokens, candidate.cached_tokens = 10, 128 * earlier
        return out


def test_cost_json_carries_each_turns_cached_tokens_and_their_sum(tmp_path):
    cfg = EvalConfig(policy_model="caching", games=["wordle"], limit=1, max_tokens=8, results_dir=tmp_path)
    run_dir, _ = run_eval(cfg, policy=PrefixCachingPolicy("caching"), progress=False)
    costs = [json.loads(p.read_text()) for p in run_dir.rglob("cost.json")]
    assert costs and any(len(c["turns"]) > 1 for c in costs)
    for cost in costs:
        assert [t["cached_tokens"] for t in cost["turns"]] == [128 * i for i in range(len(cost["turns"]))]
        assert cost["cached_tokens"] == sum(t["cached_tokens"] for t in cost["turns"])


def test_backends_that_do_not_say_leave_cached_tokens_out_of_cost_json(tmp_path):
    cfg = EvalConfig(policy_model="random", games=["wordle"], limit=1, max_tokens=8, results_dir=tmp_path)
    run_dir, _ = run_eval(cfg, policy=RandomValidPolicy(), progress=False)
    for path in run_dir.rglob("cost.json"):
        cost = json.loads(path.read_text())
        assert "cached_tokens" not in cost and all("cached_tokens" not in t for t in cost["turns"])


@pytest.mark.parametrize("command", [["eval"], ["collect", "--samples-per-instance", "2"]])
def test_a_vllm_entry_without_vllm_installed_fails_with_one_line_before_any_run_folder(tmp_path, monkeypatch,
                                                                                        capsys, command):
    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vLLM is installed in this venv")
    (tmp_path / "model_registry.json").write_text(json.dumps([entry(dtype="float32")]))
    monkeypatch.chdir(tmp_path)
    code = main([*command, "--policy-model", "m", "--game", "wordle", "--limit", "1", "--results-dir", "out"])
    error = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in error and "scripts/make_vllm_venv.sh" in error
    assert not (tmp_path / "out").exists()
