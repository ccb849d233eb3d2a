"""The model card's registry entry, with local paths for its two ids, plays the built-in games; a PEFT adapter
changes what the policy says; clemcore's own `clem run` plays with a playprm policy."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from playprm.cli import main
from playprm.models.hf import HFPolicy
from playprm.models.registry import resolve_policy

CONTEXT = [[{"role": "user", "content": "Let's play Wordle. Make your first guess."}]]


@pytest.fixture(scope="module")
def adapter(tiny_models, tmp_path_factory) -> Path:
    """A LoRA adapter over the tiny policy with non-zero weights (a fresh adapter is an identity)."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_models["policy"])
    peft_model = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules="all-linear"))
    torch.manual_seed(5)
    with torch.no_grad():
        for name, param in peft_model.named_parameters():
            if "lora_B" in name:
                param.normal_(0, 0.5)
    path = tmp_path_factory.mktemp("adapter") / "sft-ep1"
    peft_model.save_pretrained(path)
    return path


@pytest.fixture()
def card_workspace(tiny_models, adapter, tmp_path, monkeypatch) -> Path:
    entry = {"model_name": "Qwen3.5-27B-sft-ep1", "backend": "huggingface_local",
             "huggingface_id": str(tiny_models["policy"]),
             "model_config": {"premade_chat_template": True, "load_in_4bit": True,
                              "chat_template_kwargs": {"enable_thinking": False}, "peft_model": str(adapter)}}
    (tmp_path / "model_registry.json").write_text(json.dumps([entry]))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_a_peft_adapter_changes_the_outputs(tiny_models, adapter):
    spec = resolve_policy(str(tiny_models["policy"]))
    plain = HFPolicy(spec).generate(CONTEXT, n=1, temperature=0.0, max_tokens=12)[0][0].text
    spec.peft_model = str(adapter)
    adapted = HFPolicy(spec).generate(CONTEXT, n=1, temperature=0.0, max_tokens=12)[0][0].text
    assert plain != adapted


def test_model_card_entry_plays_the_builtin_games_on_cpu(card_workspace, capsys):
    code = main(["eval", "--policy-model", "Qwen3.5-27B-sft-ep1", "--game-all", "--limit", "1", "--max-tokens", "8",
                 "--results-dir", "results"])
    out = capsys.readouterr().out
    assert code == 0
    assert "load_in_4bit needs CUDA; loading" in out  # one warning line, then an unquantized load
    run_dir = card_workspace / "results" / "Qwen3.5-27B-sft-ep1-t0.0--Qwen3.5-27B-sft-ep1-t0.0"
    assert len(list(run_dir.rglob("scores.json"))) == 10  # 2 of each two-experiment game, 1 of mastermind and guessthenumber
    policy = json.loads((run_dir / "playprm_run.json").read_text())["policy"]
    assert policy["peft_model"].endswith("sft-ep1") and policy["chat_template_kwargs"] == {"enable_thinking": False}


def test_clemcore_clem_run_plays_with_a_playprm_policy(card_models, tmp_path):
    # the card's layout only: test_clemcore_parity plays both architectures through clem run
    assert main(["register", "--dir", str(tmp_path), "--model-name", "tiny-playprm",
                 "--model-path", str(card_models["policy"])]) == 0
    clem = Path(sys.executable).with_name("clem")
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    run = subprocess.run([str(clem), "run", "-g", "referencegame", "-m", "tiny-playprm", "-r", "res", "-t", "0.0",
                          "-l", "8"], cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env)
    assert run.returncode == 0, run.stderr[-2000:]
    interactions = list((tmp_path / "res").rglob("interactions.json"))
    assert len(interactions) == 20  # clemcore played every referencegame instance through the playprm backend
    score = subprocess.run([str(clem), "score", "-r", "res"], cwd=tmp_path, capture_output=True, text=True,
                           timeout=300)
    assert score.returncode == 0 and len(list((tmp_path / "res").rglob("scores.json"))) == 20
