"""--policy-model resolution: clemcore registry entries (the model card's among them) and local folders."""

from __future__ import annotations

import json

import pytest

from playprm.errors import UsageError
from playprm.models.registry import resolve_policy

CARD_ENTRY = {
    "model_name": "Qwen3.5-27B-sft-ep1", "backend": "huggingface_local", "huggingface_id": "Qwen/Qwen3.5-27B",
    "model_config": {"premade_chat_template": True, "load_in_4bit": True,
                     "chat_template_kwargs": {"enable_thinking": False},
                     "peft_model": "Diginyx/Qwen3.5-27B-sft-ep1"},
}


def write_registry(directory, entries):
    (directory / "model_registry.json").write_text(json.dumps(entries))


def test_model_card_entry_resolves_as_written(tmp_path):
    write_registry(tmp_path, [CARD_ENTRY])
    spec = resolve_policy("Qwen3.5-27B-sft-ep1", cwd=tmp_path)
    assert spec.backend == "hf"
    assert spec.model_id == "Qwen/Qwen3.5-27B"
    assert spec.peft_model == "Diginyx/Qwen3.5-27B-sft-ep1"
    assert spec.load_in_4bit is True
    assert spec.chat_template_kwargs == {"enable_thinking": False}
    assert spec.lookup_source.endswith("model_registry.json")


def test_working_directory_entries_come_before_clemcore_packaged_ones(tmp_path):
    write_registry(tmp_path, [{"model_name": "llama-3.3-70b", "backend": "huggingface_local",
                               "huggingface_id": "my/own-llama"}])
    assert resolve_policy("llama-3.3-70b", cwd=tmp_path).model_id == "my/own-llama"
    (tmp_path / "model_registry.json").unlink()
    assert resolve_policy("llama-3.3-70b", cwd=tmp_path).model_id == "meta-llama/Llama-3.3-70B-Instruct"


def test_local_model_directory_is_accepted(card_models, tmp_path):
    spec = resolve_policy(str(card_models["policy"]), cwd=tmp_path)
    assert spec.backend == "hf" and spec.name == "policy"


def test_relative_paths_in_entries_resolve_against_the_working_directory(card_models, tmp_path):
    import shutil

    shutil.copytree(card_models["policy"], tmp_path / "weights")
    write_registry(tmp_path, [{"model_name": "mine", "backend": "huggingface_local", "huggingface_id": "weights"}])
    assert resolve_policy("mine", cwd=tmp_path).model_id == str((tmp_path / "weights").resolve())


@pytest.mark.parametrize("entry, message", [
    ({"model_name": "m", "huggingface_id": "x/y"}, "has no 'backend'"),
    ({"model_name": "m", "backend": "anthropic", "huggingface_id": "x/y"}, "cannot run locally"),
    ({"model_name": "m", "backend": "huggingface_local", "huggingface_id": "x/y",
      "model_config": {"load_in_4bit": "yes"}}, "load_in_4bit must be bool"),
    ({"model_name": "m", "backend": "huggingface_local", "huggingface_id": "x/y",
      "model_config": {"chat_template_kwargs": ["enable_thinking"]}}, "chat_template_kwargs must be dict"),
    ({"model_name": "m", "backend": "huggingface_local", "huggingface_id": "x/y", "model_config": []},
     "'model_config' must be an object"),
    ({"model_name": "m", "backend": "huggingface_local"}, "no 'huggingface_id'"),
])
def test_invalid_entries_fail_with_one_clear_line(tmp_path, entry, message):
    write_registry(tmp_path, [entry])
    with pytest.raises(UsageError, match=message) as info:
        resolve_policy("m", cwd=tmp_path)
    assert "\n" not in str(info.value)


def test_corrupt_registry_file_names_the_file(tmp_path):
    (tmp_path / "model_registry.json").write_text("[{not json")
    with pytest.raises(UsageError, match="model_registry.json is not valid JSON"):
        resolve_policy("anything", cwd=tmp_path)


@pytest.mark.parametrize("selector", ["no-such-model", "./missing/dir", "/abs/missing"])
def test_unknown_model_name_or_missing_directory(tmp_path, selector):
    with pytest.raises(UsageError, match="no such model directory"):
        resolve_policy(selector, cwd=tmp_path)


def test_missing_subfolder_of_an_existing_directory_is_not_taken_for_a_hub_id(tmp_path):
    (tmp_path / "T").mkdir()
    with pytest.raises(UsageError, match="no such model directory"):
        resolve_policy("T/policy", cwd=tmp_path)


def test_hub_ids_stay_valid_inputs(tmp_path):
    spec = resolve_policy("Qwen/Qwen3.5-27B", cwd=tmp_path)
    assert spec.model_id == "Qwen/Qwen3.5-27B" and spec.lookup_source == "hub id"


def test_missing_vllm_gives_one_clear_line():
    pytest.importorskip("playprm.models.vllm_policy")
    try:
        import vllm  # noqa: F401
        pytest.skip("vLLM is installed here")
    except ImportError:
        pass
    from playprm.models.vllm_policy import require_vllm

    with pytest.raises(UsageError, match="needs vLLM"):
        require_vllm()
