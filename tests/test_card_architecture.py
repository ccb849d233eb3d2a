"""The model card's architecture end to end: a Qwen3.5-layout base (hybrid linear/full attention, multimodal
checkpoint), the adapter train-sft writes on it, and the card's registry entry shape playing every mode."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch

from playprm.cli import main
from playprm.models import adapters

ALL_LINEAR_ON_QWEN3_5 = {  # what "all-linear" means on Qwen3.5's text stack (no vision tower is loaded)
    "q_proj", "k_proj", "v_proj", "o_proj",  # full-attention layers
    "in_proj_qkv", "in_proj_z", "in_proj_a", "in_proj_b", "out_proj",  # gated delta-net (linear attention) layers
    "gate_proj", "up_proj", "down_proj",  # every layer's MLP
}
IDS = torch.tensor([[11, 57, 301, 990, 12, 8, 400, 77]])


@pytest.fixture(scope="module")
def sft_adapter(card_sft_adapter) -> Path:
    """What `playprm train-sft` writes on the Qwen3.5-layout base after a few steps (the session's one LoRA run)."""
    return card_sft_adapter


def _logits(model) -> torch.Tensor:
    with torch.no_grad():
        return model(IDS).logits


def _load_quietly(load):
    """Run ``load()``; returns (result, PEFT's missing-key warnings)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = load()
    return result, [str(w.message) for w in caught if "missing adapter keys" in str(w.message)]


def test_the_sft_adapter_covers_the_language_model_only(sft_adapter):
    keys = adapters.adapter_keys(sft_adapter)
    modules = {key.split(".")[-3] for key in keys}  # ...<module>.lora_A.weight
    assert modules == ALL_LINEAR_ON_QWEN3_5
    assert not any("visual" in key for key in keys)
    assert adapters.keys_layout(keys) == "text"  # as PEFT writes it from the text-only class
    config = json.loads((sft_adapter / "adapter_config.json").read_text())
    assert set(config["target_modules"]) == ALL_LINEAR_ON_QWEN3_5


def test_the_adapter_loads_on_the_text_only_and_the_multimodal_class_alike(card_models, sft_adapter):
    from transformers import AutoModelForCausalLM, Qwen3_5ForConditionalGeneration

    base = str(card_models["policy"])
    text, missing = _load_quietly(lambda: adapters.load_adapter(AutoModelForCausalLM.from_pretrained(base),
                                                                sft_adapter))
    assert not missing
    hub_model = Qwen3_5ForConditionalGeneration.from_pretrained(base)
    plain = _logits(hub_model)
    hub, missing = _load_quietly(lambda: adapters.load_adapter(hub_model, sft_adapter))
    assert not missing  # the text-layout keys were mapped onto model.language_model.layers
    assert torch.allclose(_logits(text), _logits(hub), atol=1e-5)
    assert not torch.allclose(_logits(hub), plain, atol=1e-4)  # and the adapter does something


def test_the_vllm_copy_has_the_names_vllms_qwen3_5_maps(card_models, sft_adapter, tmp_path):
    # vLLM is not installable here: this checks the names its Qwen3_5ForConditionalGeneration.hf_to_vllm_mapper
    # (VLLM_QWEN3_5_PREFIXES) can map, and that the copy loads on transformers' class of the same layout
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, Qwen3_5ForConditionalGeneration

    from playprm.models.base import PolicySpec
    from playprm.models.vllm_policy import vllm_adapter

    spec = PolicySpec(name="card", backend="vllm", model_id=str(card_models["policy"]), peft_model=str(sft_adapter))
    copy = Path(vllm_adapter(spec))
    keys = [key.removeprefix(adapters.PEFT_PREFIX) for key in adapters.adapter_keys(copy)]
    for key in keys:
        [vllm_name] = [new + key[len(old):] for old, new in adapters.VLLM_QWEN3_5_PREFIXES.items()
                       if key.startswith(old)]
        assert vllm_name.startswith("language_model.model.layers.")
    base = str(card_models["policy"])
    hub, missing = _load_quietly(lambda: PeftModel.from_pretrained(  # plain PEFT, as a hub user would
        Qwen3_5ForConditionalGeneration.from_pretrained(base), str(copy)))
    assert not missing
    text = adapters.load_adapter(AutoModelForCausalLM.from_pretrained(base), sft_adapter)
    assert torch.allclose(_logits(hub), _logits(text), atol=1e-5)


def test_play_folds_the_adapter_into_float32_weights_and_computes_the_same_function(card_models, sft_adapter):
    # merge_for_inference serves both ways an adapter reaches play: --policy-model naming the adapter folder
    # (transformers' PEFT integration) and a registry entry's peft_model (PeftModel); bf16 weights keep theirs
    from peft.tuners.tuners_utils import BaseTunerLayer
    from transformers import AutoModelForCausalLM

    def tuner_layers(model) -> int:
        return sum(isinstance(module, BaseTunerLayer) for module in model.modules())

    base = str(card_models["policy"])
    for load in (lambda: adapters.load_adapter(AutoModelForCausalLM.from_pretrained(base), sft_adapter),
                 lambda: AutoModelForCausalLM.from_pretrained(str(sft_adapter))):
        model = load().eval()
        assert tuner_layers(model) > 0
        expected = _logits(model)
        assert not torch.allclose(expected, _logits(AutoModelForCausalLM.from_pretrained(base).eval()), atol=1e-4)
        merged = adapters.merge_for_inference(model)
        assert tuner_layers(merged) == 0
        assert torch.allclose(_logits(merged), expected, atol=1e-4)
    bf16 = adapters.load_adapter(AutoModelForCausalLM.from_pretrained(base, dtype=torch.bfloat16), sft_adapter)
    assert tuner_layers(adapters.merge_for_inference(bf16)) > 0


@pytest.fixture()
def card_entry(card_models, sft_adapter, tmp_path, monkeypatch) -> Path:
    """The model card's registry entry shape: a Qwen3.5-layout base folder and the adapter train-sft wrote."""
    entry = {"model_name": "Qwen3.5-27B-sft-ep1", "backend": "huggingface_local",
             "huggingface_id": str(card_models["policy"]),
             "model_config": {"premade_chat_template": True, "load_in_4bit": True, "eos_to_cull": "<\\|im_end\\|>",
                              "chat_template_kwargs": {"enable_thinking": False}, "peft_model": str(sft_adapter)}}
    (tmp_path / "model_registry.json").write_text(json.dumps([entry]))
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("mode, extra", [
    ("greedy", []),
    ("best-of-n", ["--n-candidates", "4"]),  # the card's configuration
    ("beam-search", ["--n-candidates", "2", "--beam-width", "1", "--num-beam-iterations", "2"]),
    ("dvts", ["--n-candidates", "2", "--beam-width", "1", "--num-beam-iterations", "2"]),
    ("lf-beam", ["--n-candidates", "2", "--beam-width", "1"]),
])
def test_the_card_entry_plays_every_builtin_game_in_every_mode(card_entry, card_models, mode, extra, capsys):
    prm = [] if mode == "greedy" else ["--prm-path", str(card_models["prm"])]
    code = main(["eval", "--policy-model", "Qwen3.5-27B-sft-ep1", "--mode", mode, *prm, *extra, "--game-all",
                 "--limit", "1", "--max-tokens", "6", "--results-dir", "results"])
    assert code == 0
    [run_dir] = [p for p in (card_entry / "results").iterdir() if p.is_dir()]
    # wordle, taboo, referencegame, arithmetic: 2 experiments each; mastermind, guessthenumber: 1
    assert len(list(run_dir.rglob("scores.json"))) == 10
    assert not list(run_dir.rglob("error.json"))
    policy = json.loads((run_dir / "playprm_run.json").read_text())["policy"]
    assert policy["peft_model"].endswith("Qwen3.5-27B-sft-ep1")
    if mode != "greedy":
        rows = [json.loads(line) for path in run_dir.rglob("candidates.jsonl") for line in
                path.read_text().splitlines()]
        assert rows and all(0 <= c["score"] <= 1 for row in rows for c in row["candidates"])


def test_clemcores_own_backend_plays_the_card_layout_with_the_sft_adapter(card_models, sft_adapter, tmp_path):
    # clemcore 3.7.2's huggingface_local loads the text-only class and the text-layout adapter as they are;
    # chat_template_kwargs are left out: its template check cannot parse {% generation %} (see README)
    entry = {"model_name": "card-clemcore", "backend": "huggingface_local", "huggingface_id": str(card_models["policy"]),
             "model_config": {"premade_chat_template": True, "eos_to_cull": "<\\|im_end\\|>",
                              "peft_model": str(sft_adapter)}}
    assert main(["register", "--dir", str(tmp_path)]) == 0  # clemcore's CLI now sees the built-in games
    (tmp_path / "model_registry.json").write_text(json.dumps([entry]))
    clem = Path(sys.executable).with_name("clem")
    run = subprocess.run([str(clem), "run", "-g", "referencegame", "-m", "card-clemcore", "-r", "res", "-t", "0.0",
                          "-l", "6"], cwd=tmp_path, capture_output=True, text=True, timeout=600,
                         env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert run.returncode == 0, run.stderr[-2000:]
    assert len(list((tmp_path / "res").rglob("interactions.json"))) == 20
    log = (tmp_path / "clembench.log").read_text() if (tmp_path / "clembench.log").exists() else run.stderr
    assert "Load PeftModel adapters" in log and "missing adapter keys" not in log
