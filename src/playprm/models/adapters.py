"""LoRA adapters across the two layouts of a multimodal checkpoint.

The hub checkpoints of the Qwen3.5 dense line are multimodal: ``Qwen3_5ForConditionalGeneration`` keeps its
language model under ``model.language_model.layers``. transformers' ``AutoModelForCausalLM`` (what TRL trains,
what clemcore's ``huggingface_local`` backend and playprm load) builds the text-only ``Qwen3_5ForCausalLM`` from
the same checkpoint, with the layers under ``model.layers``. An adapter saved from one class loads on the
other with every key missing: PEFT only warns, and the adapter then does nothing. So:

- ``train-sft`` saves what PEFT writes from the text-only class (the *text* layout), which clemcore's own
  backend loads as it is;
- ``load_adapter`` maps either layout onto the model at hand (PEFT's ``key_mapping``);
- ``hub_layout_copy`` writes the adapter with the multimodal class's names, for vLLM, whose
  ``Qwen3_5ForConditionalGeneration`` maps ``model.language_model.`` to its own ``language_model.model.``
  (``hf_to_vllm_mapper``) and has no rule for a bare ``model.layers.``.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

ADAPTER_WEIGHTS = "adapter_model.safetensors"
PEFT_PREFIX = "base_model.model."
TEXT_LAYERS = "model.layers."  # Qwen3_5ForCausalLM (text-only class)
HUB_LAYERS = "model.language_model.layers."  # Qwen3_5ForConditionalGeneration (the hub's checkpoint layout)
# vLLM's Qwen3_5ForConditionalGeneration.hf_to_vllm_mapper (vllm/model_executor/models/qwen3_5.py), as data:
# what a hub-layout key becomes inside vLLM
VLLM_QWEN3_5_PREFIXES = {"model.visual.": "visual.", "lm_head.": "language_model.lm_head.",
                         "model.language_model.": "language_model.model."}


def adapter_keys(adapter_dir: str | Path) -> list[str]:
    """Tensor names in an adapter folder's ``adapter_model.safetensors`` (read from the header only)."""
    from safetensors import safe_open

    with safe_open(str(Path(adapter_dir) / ADAPTER_WEIGHTS), framework="pt") as handle:
        return list(handle.keys())


def keys_layout(keys: list[str]) -> str | None:
    """``"hub"``, ``"text"`` or ``None`` (neither: e.g. a plain Qwen3 adapter, or a PRM backbone's)."""
    bare = [key.removeprefix(PEFT_PREFIX) for key in keys]
    if any(key.startswith(HUB_LAYERS) for key in bare):
        return "hub"
    if any(key.startswith(TEXT_LAYERS) for key in bare):
        return "text"
    return None


def model_layout(model) -> str | None:
    """The layout of a loaded transformers model: ``"hub"`` when it holds ``model.language_model.layers``,
    ``"text"`` when it holds ``model.layers``."""
    names = {name for name, _ in model.named_modules()}
    if HUB_LAYERS.rstrip(".") in names:
        return "hub"
    if TEXT_LAYERS.rstrip(".") in names:
        return "text"
    return None


def key_mapping(model, adapter_dir: str | Path) -> dict[str, str] | None:
    """PEFT ``key_mapping`` (regex -> replacement on names without ``base_model.model.``) that puts the adapter's
    keys on ``model``'s modules; ``None`` when the layouts already agree."""
    if not (Path(adapter_dir) / ADAPTER_WEIGHTS).is_file():
        return None  # a hub id or an older .bin adapter: let PEFT load it as it is
    source, target = keys_layout(adapter_keys(adapter_dir)), model_layout(model)
    if source == "text" and target == "hub":
        return {"^" + re.escape(TEXT_LAYERS): HUB_LAYERS}
    if source == "hub" and target == "text":
        return {"^" + re.escape(HUB_LAYERS): TEXT_LAYERS}
    return None


def load_adapter(model, adapter_dir: str | Path):
    """``PeftModel.from_pretrained`` with the adapter's keys mapped onto ``model``'s layout."""
    from peft import PeftModel

    return PeftModel.from_pretrained(model, str(adapter_dir), key_mapping=key_mapping(model, adapter_dir))


def merge_for_inference(model):
    """``model`` with its LoRA layers folded into the weights they adapt, when those weights are float32: the same
    function without two extra matmuls per adapted linear at every decode step (greedy play of SmolLM2 + the smol
    preset's LoRA 1.27x faster on 2 CPU threads, replies identical on 48 of 48 contexts: benchmarks/lora_merge.py).
    Weights of a lower precision (bf16, 4-bit) keep their adapter unmerged: rounding ``W + BA`` to them would lose
    the adapter.

    By hand because only ``PeftModel`` has ``merge_and_unload``; a model folder that is an adapter loads through
    transformers' PEFT integration, which injects the same PEFT layers with no unload. Returns the model to use."""
    import torch
    from peft.tuners.tuners_utils import BaseTunerLayer

    layers = [(name, module) for name, module in model.named_modules() if isinstance(module, BaseTunerLayer)]
    if not layers or any(p.dtype != torch.float32 for p in model.parameters()):
        return model
    if hasattr(model, "merge_and_unload"):  # a PeftModel
        return model.merge_and_unload()
    for name, layer in layers:
        layer.merge()
        parent, _, leaf = name.rpartition(".")
        setattr(model.get_submodule(parent), leaf, layer.get_base_layer())
    return model


def hub_layout_copy(adapter_dir: str | Path, out_dir: str | Path) -> Path:
    """A copy of a text-layout adapter with the multimodal class's key names, in ``out_dir``."""
    from safetensors.torch import load_file, save_file

    adapter_dir, out_dir = Path(adapter_dir), Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for path in adapter_dir.iterdir():
        if path.is_file() and path.name != ADAPTER_WEIGHTS:
            shutil.copy2(path, out_dir / path.name)
    prefix = PEFT_PREFIX + TEXT_LAYERS
    tensors = {PEFT_PREFIX + HUB_LAYERS + key[len(prefix):] if key.startswith(prefix) else key: value
               for key, value in load_file(str(adapter_dir / ADAPTER_WEIGHTS)).items()}
    save_file(tensors, str(out_dir / ADAPTER_WEIGHTS), metadata={"format": "pt"})
    return out_dir


def is_multimodal_checkpoint(model_id: str | Path) -> bool:
    """Whether a local checkpoint's config.json has a vision tower (Qwen3.5's hub layout)."""
    config_file = Path(model_id) / "config.json"
    if not config_file.is_file():
        return False
    try:
        return "vision_config" in json.loads(config_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
