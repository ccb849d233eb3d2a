"""Every model_registry.json entry playprm writes plays under clemcore 3.7.2's own ``clem run`` as written.

train-sft writes the entries (an adapter over its base, or with ``--full-weights`` the saved model); the pipeline
presets copy train-sft's entry into their work directory unchanged (``pipeline.stages._register_trained_policy``), and
``playprm register`` writes the ``playprm``-backend entry (played under ``clem run`` in test_model_card.py).
make-tiny writes none. clemcore reads ``premade_chat_template`` and ``eos_to_cull`` unconditionally and asks
bitsandbytes for a quantization config whenever ``load_in_4bit`` is present, even false: on a machine without
bitsandbytes an entry carrying ``"load_in_4bit": false`` fails every episode.
"""

from __future__ import annotations

import json
import shutil

import pytest
from test_clemcore_parity import clem, episodes, workspace
from test_train_sft import QUICK, TINY_RECIPE, write_sft_data

from playprm.cli import main
from playprm.models.registry import resolve_policy


@pytest.mark.parametrize("kind", [
    "adapter",  # the card's LoRA: the session's one LoRA run (conftest.card_sft_adapter)
    "full-weights",  # the small and tiny presets' policies
])
def test_clem_run_plays_the_entry_train_sft_writes_as_written(card_models, tmp_path, monkeypatch, kind, request):
    if kind == "adapter":
        out = request.getfixturevalue("card_sft_adapter")
    else:
        out = tmp_path / "run"
        assert main(["train-sft", "--config", str(TINY_RECIPE), "--model", str(card_models["policy"]), "--data",
                     str(write_sft_data(tmp_path / "data", train=4, validation=2)), "--output-dir", str(out), *QUICK,
                     "--max-steps", "1", "--model-name", f"sft-{kind}", "--full-weights", "true"]) == 0
    [entry] = json.loads((out / "model_registry.json").read_text())
    config = entry["model_config"]
    assert "load_in_4bit" not in config and {"premade_chat_template", "eos_to_cull"} <= set(config)
    assert resolve_policy(f"sft-{kind}", cwd=out).load_in_4bit is False  # playprm reads the absence as false

    root = workspace(tmp_path / "clem", card_models["policy"])
    shutil.copy(out / "model_registry.json", root / "model_registry.json")  # the entry exactly as written
    clem("run", "-g", "referencegame", "-m", f"sft-{kind}", "-r", "res", "-t", "0.0", "-l", "6", "-b", "4", cwd=root)
    played = episodes(root / "res")
    assert len(played) == 4  # 2 experiments x 2 instances, none aborted by the backend
    assert all((episode / "interactions.json").is_file() for episode in played.values())
    assert not list((root / "res").rglob("error.json"))
