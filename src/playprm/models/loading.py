"""How pretrained weights load, decided in one place for every model playprm loads: the policy (``models.hf``),
the PRM backbone (``prm.model``) and the trainers' base models (``train.base_model``).

``pretrained_loading`` takes what a model's own record asks for (a registry entry, a PRM folder's
``prm_config.json``, a training config) and decides:

- the device: the caller's, else CUDA when there is one, else the CPU;
- the dtype: the one asked for (``model_config.dtype``, a trainer's bf16 / fp32), else bf16 on CUDA and the
  checkpoint's own on CPU;
- 4-bit NF4 weights (``bnb_4bit_config``, the model card's): on CUDA only (bitsandbytes 4-bit is CUDA-only);
- the device map: a policy spreads over the visible GPUs (``"auto"``); a PRM loads whole and is moved to its
  device; a trainer's 4-bit weights go to its own process's GPU (``LOCAL_RANK``), its other weights are placed by
  the Trainer, or by DeepSpeed / FSDP when they shard them;
- remote code: only when the record asks for it (``trust_remote_code``).

A GGUF file (``models.gguf``) is de-quantised rather than loaded by ``from_pretrained``: ``Loading.gguf_dtype``.
CPU threads are no loader's business: a run decides them once, where it starts
(``transformers_runtime.choose_cpu_threads``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import torch

ROLES = ("policy", "prm", "train")


def bnb_4bit_config():
    """The model card's quantization: 4-bit NF4, double quantization, bf16 compute."""
    from transformers import BitsAndBytesConfig

    return BitsAndBytesConfig(
        load_in_4bit=True,
        bnb_4bit_quant_type="nf4",
        bnb_4bit_use_double_quant=True,
        bnb_4bit_compute_dtype=torch.bfloat16,
    )


@dataclass(frozen=True)
class Loading:
    """What ``pretrained_loading`` decided for one model."""

    device: str  # where the model runs: "cuda" (or "cuda:<i>") or "cpu"
    dtype: Any  # a torch dtype or a name ("float32", "auto"); None: the checkpoint's own (transformers' default)
    load_in_4bit: bool  # 4-bit NF4 weights (bitsandbytes)
    device_map: Any  # from_pretrained's device_map; None: loaded on the CPU, then moved by the caller or the Trainer
    trust_remote_code: bool

    @property
    def cuda(self) -> bool:
        return self.device.startswith("cuda")

    def kwargs(self) -> dict:
        """``from_pretrained``'s keyword arguments."""
        kwargs: dict[str, Any] = {"trust_remote_code": self.trust_remote_code}
        if self.dtype is not None:
            kwargs["dtype"] = self.dtype
        if self.load_in_4bit:
            kwargs["quantization_config"] = bnb_4bit_config()
        if self.device_map is not None:
            kwargs["device_map"] = self.device_map
        return kwargs

    def gguf_dtype(self):
        """The dtype a GGUF file's weights are de-quantised to: the one asked for, else bf16 on CUDA (as a model
        folder loads there) and fp32 on CPU (the file keeps no dtype of its own to fall back on)."""
        if self.dtype not in (None, "auto"):
            return self.dtype
        return "bf16" if self.cuda else "fp32"


def pretrained_loading(role: str, *, device: str | None = None, dtype=None, load_in_4bit: bool = False,
                       trust_remote_code: bool = False, sharded: bool = False) -> Loading:
    """How the pretrained weights of a ``role`` model load (one of ``ROLES``: ``policy``, ``prm``, ``train``).

    ``device``: where the model is to run (default CUDA when there is one); ``dtype``: the dtype its record asks
    for, if any; ``load_in_4bit``: whether it asks for 4-bit weights; ``trust_remote_code``: whether it asks to run
    the checkpoint's own code; ``sharded`` (trainers): DeepSpeed or FSDP place the weights themselves.
    """
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}; one of {', '.join(ROLES)}")
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    cuda = device.startswith("cuda")
    if dtype is None and cuda:
        dtype = torch.bfloat16
    quantized = load_in_4bit and cuda
    device_map = None
    if role == "policy" and cuda:
        device_map = "auto"
    elif role == "train" and quantized and not sharded:
        # each DDP process holds a whole quantized copy on its own GPU
        device_map = {"": int(os.environ.get("LOCAL_RANK", "0"))}
    return Loading(device=device, dtype=dtype, load_in_4bit=quantized, device_map=device_map,
                   trust_remote_code=trust_remote_code)
