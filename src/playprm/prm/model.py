"""The process reward model: a transformer backbone with a scalar head read at turn ends.

Design: a *token-level* head. ``forward`` returns one logit per token; a turn's score is the sigmoid of
the logit at the end-of-turn token that closes the assistant reply. Training can therefore label every
turn of an episode in one forward pass, and inference scores N candidates that share a context by
encoding the context once and reusing its KV cache (see ``playprm.prm.scorer``).

On disk (``--prm-path``)::

    prm_config.json      format, where the backbone comes from, adapter and head files (and
                         trust_remote_code when the backbone runs its checkpoint's own code)
    head.safetensors     the scalar head (hidden -> 1)
    backbone/            full backbone weights (tiny models), or
    adapter/             a PEFT adapter over ``base_model`` (trained PRMs)
    tokenizer files
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

PRM_CONFIG = "prm_config.json"
PRM_FORMAT = "playprm-prm/1"
HEAD_FILE = "head.safetensors"


@dataclass
class PRMOutput:
    logits: torch.Tensor  # (batch, seq) one logit per token
    past_key_values: Any = None


class TextBackbone:
    """Loads a PRM backbone: the text stack of a checkpoint, without its LM head or any vision tower.

    Hub checkpoints of the Qwen3.5 dense line are multimodal (``Qwen3_5ForConditionalGeneration``, language
    model under ``model.language_model``); ``AutoModel`` would build the whole multimodal model and
    ``"all-linear"`` LoRA would reach into its vision tower. ``AutoModelForCausalLM`` loads such a checkpoint as
    the text-only ``Qwen3_5ForCausalLM``, whose base model is the language model alone.
    """

    @staticmethod
    def from_pretrained(model_id: str, **kwargs):
        from transformers import AutoConfig, AutoModel, AutoModelForCausalLM

        config = AutoConfig.from_pretrained(model_id, trust_remote_code=kwargs.get("trust_remote_code", False))
        if getattr(config, "vision_config", None) is None:
            return AutoModel.from_pretrained(model_id, **kwargs)
        language_model = AutoModelForCausalLM.from_pretrained(model_id, **kwargs)
        return language_model.base_model


class ProcessRewardModel(nn.Module):
    """Backbone (the text stack of a base model, optionally PEFT-wrapped) plus a linear scalar head."""

    def __init__(self, backbone: nn.Module, hidden_size: int):
        super().__init__()
        self.backbone = backbone
        self.head = nn.Linear(hidden_size, 1)
        self.config_extra: dict[str, Any] = {}

    @classmethod
    def from_config(cls, config) -> ProcessRewardModel:
        """Random weights; for a multimodal config, the backbone is its language model only."""
        from transformers import AutoModel

        text = config.get_text_config()
        return cls(AutoModel.from_config(text), text.hidden_size)

    @property
    def device(self) -> torch.device:
        return self.head.weight.device

    def activation_checkpointing_enable(self, activation_checkpointing_kwargs=None, every_n_layers: int = 1,
                                        offload: bool = False) -> None:
        """Recompute the backbone's activations in the backward pass (the HF Trainer calls this when
        ``activation_checkpointing`` is on); inputs require grad so a frozen, adapted backbone still backpropagates."""
        self.backbone.activation_checkpointing_enable(
            activation_checkpointing_kwargs=activation_checkpointing_kwargs, every_n_layers=every_n_layers,
            offload=offload,
        )
        self.backbone.enable_input_require_grads()

    def forward(self, input_ids, attention_mask=None, position_ids=None, past_key_values=None,
                use_cache: bool = False) -> PRMOutput:
        from playprm.transformers_runtime import cache_kwargs, output_cache

        extra = cache_kwargs(self.backbone, past_key_values) if past_key_values is not None else {}
        out = self.backbone(
            input_ids=input_ids,
            attention_mask=attention_mask,
            position_ids=position_ids,
            use_cache=use_cache,
            **extra,
        )
        hidden = out.last_hidden_state
        logits = self.head(hidden.to(self.head.weight.dtype)).squeeze(-1)
        return PRMOutput(logits=logits, past_key_values=output_cache(out) if use_cache else None)

    def save(self, path: str | Path, *, tokenizer=None, base_model: str | None = None,
             chat_template_kwargs: dict | None = None, trust_remote_code: bool = False) -> Path:
        """Save to ``path``. With ``base_model`` and a PEFT backbone only the adapter is written;
        ``trust_remote_code``: the backbone runs its checkpoint's own code (recorded only when true)."""
        from safetensors.torch import save_file

        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        config: dict[str, Any] = {
            "format": PRM_FORMAT,
            "hidden_size": self.head.in_features,
            "head": HEAD_FILE,
            "chat_template_kwargs": chat_template_kwargs or {},
            **self.config_extra,
        }
        if trust_remote_code:  # read by load_prm; absent (false) for every other PRM, as before the key existed
            config["trust_remote_code"] = True
        if base_model is not None and hasattr(self.backbone, "peft_config"):
            self.backbone.save_pretrained(path / "adapter")
            config.update(base_model=base_model, adapter="adapter", backbone=None)
        else:
            backbone = self.backbone
            if hasattr(backbone, "merge_and_unload"):
                backbone = backbone.merge_and_unload()
            backbone.save_pretrained(path / "backbone")
            config.update(base_model=None, adapter=None, backbone="backbone")
        state = {k: v.detach().contiguous().cpu() for k, v in self.head.state_dict().items()}
        save_file(state, str(path / HEAD_FILE))
        if tokenizer is not None:
            tokenizer.save_pretrained(path)
        (path / PRM_CONFIG).write_text(json.dumps(config, indent=2))
        return path


def read_prm_config(path: str | Path) -> dict:
    """Read and check ``prm_config.json``; raises UsageError with a one-line reason."""
    from playprm.errors import UsageError

    path = Path(path)
    config_file = path / PRM_CONFIG
    if not path.is_dir():
        raise UsageError(f"--prm-path {path} is not a directory; give a folder written by train-prm or make-tiny")
    if not config_file.is_file():
        raise UsageError(f"--prm-path {path} has no {PRM_CONFIG}; give a folder written by train-prm or make-tiny")
    try:
        config = json.loads(config_file.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise UsageError(f"{config_file} is not valid JSON ({error}); re-run train-prm") from None
    if not isinstance(config, dict) or config.get("format") != PRM_FORMAT:
        raise UsageError(f"{config_file} is not a playprm PRM config (format {PRM_FORMAT!r} expected)")
    if not (path / config.get("head", HEAD_FILE)).is_file():
        raise UsageError(f"{path} lacks the PRM head file {config.get('head', HEAD_FILE)}; re-run train-prm")
    return config


def load_prm(path: str | Path, *, device: str | None = None, dtype=None, load_in_4bit: bool = False):
    """Load a PRM and its tokenizer from ``path`` as ``models.loading`` decides (4-bit on CUDA when asked, the
    base model's own code when its training recorded ``trust_remote_code``); returns ``(model, tokenizer, config)``."""
    from safetensors.torch import load_file
    from transformers import AutoTokenizer

    from playprm.models.loading import pretrained_loading

    path = Path(path)
    config = read_prm_config(path)
    loading = pretrained_loading("prm", device=device, dtype=dtype, load_in_4bit=load_in_4bit,
                                 trust_remote_code=bool(config.get("trust_remote_code", False)))
    if config.get("adapter"):
        from peft import PeftModel

        backbone = TextBackbone.from_pretrained(config["base_model"], **loading.kwargs())
        backbone = PeftModel.from_pretrained(backbone, str(path / config["adapter"]))
        from playprm.models.adapters import merge_for_inference

        backbone = merge_for_inference(backbone)  # float32 weights: the adapter folded in
    else:
        backbone = TextBackbone.from_pretrained(str(path / config["backbone"]), **loading.kwargs())
    model = ProcessRewardModel(backbone, config["hidden_size"])
    model.head.load_state_dict(load_file(str(path / config["head"])))
    if not loading.load_in_4bit:
        model.to(loading.device)
    model.head.to(loading.device)
    model.eval()
    tokenizer = AutoTokenizer.from_pretrained(str(path), trust_remote_code=loading.trust_remote_code)
    return model, tokenizer, config
