"""Loading models: a model that fails to load is one line with the cause (not a 40-line traceback), and an
adapter loaded on another base than the one it was trained on (PEFT accepts any base of matching shapes)
gets a warning."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from playprm.cli import configure_logging, main
from playprm.models.adapter_base import other_base


def test_a_corrupt_model_folder_is_one_line_naming_the_model_and_the_cause(card_models, tmp_path, capsys):
    broken = tmp_path / "broken"
    shutil.copytree(card_models["policy"], broken)
    (broken / "model.safetensors").write_text("not a safetensors file")
    code = main(["eval", "--policy-model", str(broken), "--game", "wordle", "--limit", "1",
                 "--results-dir", str(tmp_path / "r")])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err.startswith(f"playprm eval: error: cannot load model '{broken}' (hf backend): SafetensorError")
    assert "\n" not in err and "Traceback" not in err


def adapter_on(base: Path, out: Path) -> Path:
    """A LoRA adapter of ``base`` saved to ``out`` (untrained: only its recorded base matters here)."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(base)
    get_peft_model(model, LoraConfig(r=2, target_modules=["q_proj"])).save_pretrained(out)
    return out


def test_an_adapter_loaded_on_another_base_of_the_same_shapes_is_warned_about(card_models, tmp_path, caplog):
    from playprm.models.base import PolicySpec
    from playprm.models.hf import load_causal_lm

    adapter = adapter_on(card_models["policy"], tmp_path / "adapter")
    other = tmp_path / "other-base"
    shutil.copytree(card_models["policy"], other)  # same shapes, another model as far as anyone can tell
    configure_logging(verbose=False)  # as the CLI does: clemcore's logging config silences earlier loggers
    with caplog.at_level("WARNING", logger="playprm"):
        load_causal_lm(PolicySpec(name="p", backend="hf", model_id=str(card_models["policy"]),
                                  peft_model=str(adapter)), device="cpu")
        assert not caplog.records
        load_causal_lm(PolicySpec(name="p", backend="hf", model_id=str(other), peft_model=str(adapter)),
                       device="cpu")
    assert f"was trained on {card_models['policy']} but is loaded on {other}" in caplog.text


@pytest.mark.parametrize("recorded, loading, warned", [
    ("Qwen/Qwen3.5-27B", "Qwen/Qwen3.5-27B", False),
    ("Qwen/Qwen3-8B", "Qwen/Qwen3.5-27B", True),
    ("Qwen/Qwen3.5-27B", "{tmp}/hub/models--Qwen--Qwen3.5-27B/snapshots/abc", False),  # the hub cache's copy
    ("Qwen/Qwen3.5-27B", "{tmp}/Qwen3.5-27B", False),  # a local copy of the hub checkpoint
    ("{tmp}/a/policy", "{tmp}/b/policy", True),  # two folders: compared as folders, not by name
    ("{tmp}/a/policy", "{tmp}/a/policy/", False),
    ("{tmp}/moved/policy", "{tmp}/a/policy", False),  # trained on a folder that is gone: names agree
])
def test_the_recorded_base_is_compared_as_hub_id_or_folder(tmp_path, recorded, loading, warned):
    for folder in ("a/policy", "b/policy", "Qwen3.5-27B", "hub/models--Qwen--Qwen3.5-27B/snapshots/abc"):
        (tmp_path / folder).mkdir(parents=True)
    recorded, loading = recorded.format(tmp=tmp_path), loading.format(tmp=tmp_path)
    (tmp_path / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": recorded}))
    assert (other_base(tmp_path, loading) == recorded) is warned


def test_one_decision_loads_the_policy_the_prm_and_the_trainers_as_each_needs(monkeypatch):
    import torch

    monkeypatch.delenv("LOCAL_RANK", raising=False)
    from playprm.models.loading import pretrained_loading

    policy = pretrained_loading("policy", device="cuda", load_in_4bit=True, trust_remote_code=True)
    assert (policy.dtype, policy.load_in_4bit, policy.device_map) == (torch.bfloat16, True, "auto")
    assert policy.kwargs()["trust_remote_code"] is True and "quantization_config" in policy.kwargs()
    prm = pretrained_loading("prm", device="cuda", load_in_4bit=True)
    assert (prm.dtype, prm.load_in_4bit, prm.device_map) == (torch.bfloat16, True, None)  # whole, then moved
    trainer = pretrained_loading("train", device="cuda", dtype=torch.float32, load_in_4bit=True)
    assert (trainer.dtype, trainer.device_map) == (torch.float32, {"": 0})  # this process's GPU
    assert pretrained_loading("train", device="cuda", load_in_4bit=True, sharded=True).device_map is None
    for role in ("policy", "prm", "train"):  # on CPU: no 4-bit, the checkpoint's dtype unless one is asked for
        cpu = pretrained_loading(role, device="cpu", load_in_4bit=True)
        assert cpu.kwargs() == {"trust_remote_code": False}
        assert pretrained_loading(role, device="cpu", dtype="float32").kwargs()["dtype"] == "float32"
    assert pretrained_loading("policy", device="cpu").gguf_dtype() == "fp32"
    assert pretrained_loading("policy", device="cuda", dtype="auto").gguf_dtype() == "bf16"


def test_a_prm_on_a_base_that_runs_its_own_code_loads_with_it(card_models, tmp_path, monkeypatch):
    from playprm.prm import model as prm_model

    model, tokenizer, _ = prm_model.load_prm(card_models["prm"], device="cpu")
    model.save(tmp_path / "remote", tokenizer=tokenizer, trust_remote_code=True)
    model.save(tmp_path / "plain", tokenizer=tokenizer)
    assert json.loads((tmp_path / "remote" / prm_model.PRM_CONFIG).read_text())["trust_remote_code"] is True
    assert "trust_remote_code" not in json.loads((tmp_path / "plain" / prm_model.PRM_CONFIG).read_text())
    asked = []
    load = prm_model.TextBackbone.from_pretrained
    monkeypatch.setattr(prm_model.TextBackbone, "from_pretrained",
                        staticmethod(lambda model_id, **kwargs: asked.append(kwargs["trust_remote_code"])
                                     or load(model_id, **kwargs)))
    prm_model.load_prm(tmp_path / "remote", device="cpu")
    prm_model.load_prm(tmp_path / "plain", device="cpu")
    assert asked == [True, False]
