"""Pieces of the GPU benchmark scripts (``benchmarks/gpu_*.py``): a random-weight model of real size built from
a config dict (no download), a tokenizer made here and padded to the model's vocabulary, the HBM roofline, and
where results go.

These scripts run on a machine whose Python has torch and transformers but perhaps not playprm's other
dependencies (clemcore, english-words): nothing here imports them.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import time
from pathlib import Path

from playprm import atomic

# Qwen/Qwen3-8B's config.json (architecture fields only): 36 layers, hidden 4096, GQA 32/8 heads of 128.
QWEN3_8B = {
    "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "vocab_size": 151936, "hidden_size": 4096,
    "intermediate_size": 12288, "num_hidden_layers": 36, "num_attention_heads": 32, "num_key_value_heads": 8,
    "head_dim": 128, "hidden_act": "silu", "max_position_embeddings": 40960, "rms_norm_eps": 1e-6,
    "rope_theta": 1000000.0, "tie_word_embeddings": False, "attention_bias": False, "torch_dtype": "bfloat16",
}
# The model card's architecture at ~2.4B parameters: Qwen3.5's text stack (3 gated delta-net layers to 1 gated
# full-attention layer, head_dim 256 with a quarter of it rotary, an interleaved multimodal RoPE, Qwen3.5's
# vocabulary, untied embeddings) with Qwen3.5-27B's proportions at 24 layers of hidden 2048. Not a published
# checkpoint's config: random weights of this shape say what the architecture costs on the GPU.
QWEN3_5_2B = {
    "architectures": ["Qwen3_5ForCausalLM"], "model_type": "qwen3_5_text", "vocab_size": 248320,
    "hidden_size": 2048, "intermediate_size": 6144, "num_hidden_layers": 24, "num_attention_heads": 8,
    "num_key_value_heads": 2, "head_dim": 256, "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128,
    "linear_value_head_dim": 128, "linear_num_key_heads": 16, "linear_num_value_heads": 16,
    "layer_types": ["full_attention" if (i + 1) % 4 == 0 else "linear_attention" for i in range(24)],
    "hidden_act": "silu", "max_position_embeddings": 262144, "rms_norm_eps": 1e-6, "tie_word_embeddings": False,
    "rope_parameters": {"rope_type": "default", "rope_theta": 10_000_000.0, "partial_rotary_factor": 0.25,
                        "mrope_section": [11, 11, 10], "mrope_interleaved": True},
    "torch_dtype": "bfloat16",
}
# the same layouts at toy size, to smoke-test the scripts on a CPU (``--model tiny`` / ``tiny-qwen3``)
TINY_QWEN3 = {**QWEN3_8B, "vocab_size": 4096, "hidden_size": 128, "intermediate_size": 256, "num_hidden_layers": 2,
              "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32}
TINY_QWEN3_5 = {**QWEN3_5_2B, "vocab_size": 4096, "hidden_size": 128, "intermediate_size": 256,
                "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32,
                "linear_key_head_dim": 16, "linear_value_head_dim": 16, "linear_num_key_heads": 2,
                "linear_num_value_heads": 4, "layer_types": ["linear_attention"] * 3 + ["full_attention"],
                "rope_parameters": {**QWEN3_5_2B["rope_parameters"], "mrope_section": [2, 1, 1]}}
MODELS = {"qwen3.5-2b": QWEN3_5_2B, "qwen3-8b": QWEN3_8B, "tiny": TINY_QWEN3_5, "tiny-qwen3": TINY_QWEN3}
DEFAULT_MODEL = "qwen3.5-2b"  # the card's architecture
H200_BANDWIDTH = 4.8e12  # bytes/s, the vendor's HBM3e figure


def made_up_words(count: int = 40000) -> list[str]:
    """Letter strings of English-like letter frequencies, a word list for machines without english-words."""
    rng = random.Random(0)
    letters = "etaoinshrdlcumwfgypbvkjxqz"
    return ["".join(rng.choices(letters, k=rng.randint(2, 9))) for _ in range(count)]


def bench_tokenizer(base_vocab: int = 2048):
    """make-tiny's tokenizer (trained here, Qwen-style chat template) on English words where the english-words
    package is installed, else on made-up words (a GPU image lacks it; the benchmarks need only token ids)."""
    from playprm.models import tiny

    try:
        import english_words  # noqa: F401
    except ImportError:
        return tiny.build_tokenizer(base_vocab, words=made_up_words())
    return tiny.build_tokenizer(base_vocab)


def padded_tokenizer(vocab_size: int, base_vocab: int = 2048):
    """``bench_tokenizer``, padded with special tokens to ``vocab_size`` so that every id a real-size random
    model samples decodes."""
    tokenizer = bench_tokenizer(base_vocab)
    missing = vocab_size - len(tokenizer)
    if missing > 0:
        tokenizer.add_tokens([f"<|pad_{i}|>" for i in range(missing)], special_tokens=True)
    return tokenizer


def config_object(config: dict):
    """The transformers config of a ``MODELS`` entry (``Qwen3Config`` or ``Qwen3_5TextConfig``)."""
    from transformers import AutoConfig

    fields = {k: v for k, v in config.items() if k not in ("architectures", "model_type", "torch_dtype")}
    return AutoConfig.for_model(config["model_type"], **fields)


def is_hybrid(config: dict) -> bool:
    """Qwen3.5's layout: linear-attention layers beside full-attention ones."""
    return "linear_attention" in config.get("layer_types", [])


def default_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def synchronize() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


@contextlib.contextmanager
def bf16_on(device: str | None):
    """Build weights directly as bf16 on ``device`` (default: ``default_device()``), not fp32 on the CPU first."""
    import torch

    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)
    try:
        with torch.device(device or default_device()):
            yield
    finally:
        torch.set_default_dtype(previous)


def random_causal_lm(config: dict, tokenizer, *, device: str | None = None):
    """A causal LM of ``config`` (Qwen3ForCausalLM or Qwen3_5ForCausalLM) with random bf16 weights, built on the
    device (seconds, no checkpoint)."""
    import torch
    from transformers import AutoModelForCausalLM

    cfg = config_object(config)
    cfg.eos_token_id = tokenizer.convert_tokens_to_ids("<|im_end|>")
    cfg.pad_token_id = tokenizer.pad_token_id
    torch.manual_seed(0)
    with bf16_on(device):
        model = AutoModelForCausalLM.from_config(cfg)
    model.generation_config.eos_token_id = cfg.eos_token_id
    model.generation_config.pad_token_id = cfg.pad_token_id
    return model.eval()


def random_prm(config: dict, *, device: str | None = None):
    """playprm's ProcessRewardModel (backbone + scalar head) on a random bf16 backbone of ``config``."""
    import torch

    from playprm.prm.model import ProcessRewardModel

    torch.manual_seed(1)
    with bf16_on(device):
        prm = ProcessRewardModel.from_config(config_object(config))
    return prm.eval()


def write_model_dir(directory: Path, config: dict, tokenizer) -> Path:
    """config.json and tokenizer files, no weights: what vLLM's ``load_format="dummy"`` needs. A Qwen3.5 layout
    is written as the hub's multimodal checkpoints are (``Qwen3_5ForConditionalGeneration``, the text config
    under ``text_config``, a default vision tower), the class vLLM serves Qwen3.5 with."""
    directory.mkdir(parents=True, exist_ok=True)
    ids = {"eos_token_id": tokenizer.convert_tokens_to_ids("<|im_end|>"), "pad_token_id": tokenizer.pad_token_id}
    document = {**config, **ids}
    if is_hybrid(config):
        text = {k: v for k, v in document.items() if k not in ("architectures", "torch_dtype")}
        document = {"architectures": ["Qwen3_5ForConditionalGeneration"], "model_type": "qwen3_5",
                    "text_config": text, "vision_config": {"model_type": "qwen3_5_vision"},
                    "tie_word_embeddings": False, "torch_dtype": "bfloat16"}
    (directory / "config.json").write_text(json.dumps(document, indent=2))
    tokenizer.save_pretrained(directory)
    return directory


def weight_bytes_per_step(config: dict, bytes_per_value: int = 2) -> float:
    """Bytes of weights one decode step reads: every parameter once, the input embedding only by row (so left
    out when the LM head is a separate matrix). Counted on the meta device, so any layout is exact."""
    import torch
    from transformers import AutoModelForCausalLM

    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config_object(config))
    total = sum(p.numel() for p in model.parameters())
    if not config.get("tie_word_embeddings", False):
        total -= model.get_input_embeddings().weight.numel()
    return float(total * bytes_per_value)


def full_attention_layers(config: dict) -> int:
    """Layers that keep keys and values per token (all of them on Qwen3, 1 in 4 on Qwen3.5)."""
    types = config.get("layer_types")
    return types.count("full_attention") if types else config["num_hidden_layers"]


def kv_bytes_per_token(config: dict, bytes_per_value: int = 2) -> float:
    """Bytes of KV cache one cached token adds (and each decode step reads back)."""
    return float(2 * full_attention_layers(config) * config["num_key_value_heads"] * config["head_dim"]
                 * bytes_per_value)


def state_bytes_per_sequence(config: dict, bytes_per_value: int = 2) -> float:
    """Qwen3.5: the fixed-size gated delta-net state of one sequence (recurrent matrix + convolution window per
    linear-attention layer), read and written every decode step whatever the context length; 0 on Qwen3."""
    if not is_hybrid(config):
        return 0.0
    layers = config["num_hidden_layers"] - full_attention_layers(config)
    key_dim = config["linear_num_key_heads"] * config["linear_key_head_dim"]
    value_dim = config["linear_num_value_heads"] * config["linear_value_head_dim"]
    recurrent = config["linear_num_value_heads"] * config["linear_key_head_dim"] * config["linear_value_head_dim"]
    convolution = (2 * key_dim + value_dim) * config["linear_conv_kernel_dim"]
    return float(layers * (recurrent + convolution) * bytes_per_value)


def roofline_tokens_per_second(config: dict, batch: int, context: int, bandwidth: float = H200_BANDWIDTH) -> dict:
    """Upper bounds of decode tokens/s when a step is limited by reading memory: weights only, and weights plus
    the batch's KV cache at ``context`` tokens."""
    weights = weight_bytes_per_step(config)
    kv = batch * (context * kv_bytes_per_token(config) + 2 * state_bytes_per_sequence(config))
    return {"weights_only": batch * bandwidth / weights, "with_kv": batch * bandwidth / (weights + kv)}


def copy_bandwidth(gigabytes: float = 4.0, repeats: int = 10) -> float | None:
    """Device-to-device copy rate in bytes/s, counting bytes read and written (a measured ceiling); None
    without a GPU."""
    import torch

    if not torch.cuda.is_available():
        return None
    source = torch.empty(int(gigabytes * 2**30), dtype=torch.uint8, device="cuda")
    target = torch.empty_like(source)
    target.copy_(source)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(repeats):
        target.copy_(source)
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - start
    del source, target
    torch.cuda.empty_cache()
    return 2 * gigabytes * 2**30 * repeats / elapsed


def timed(call):
    """(seconds, result) of ``call()`` with the GPU synchronized on both sides."""
    synchronize()
    start = time.perf_counter()
    result = call()
    synchronize()
    return time.perf_counter() - start, result


def chat_contexts(tokenizer, count: int, tokens: int, seed: int = 0) -> list[list[dict]]:
    """``count`` one-turn chats of about ``tokens`` template tokens, different from each other."""
    from playprm import chat

    rng = random.Random(seed)
    words = [w for w in ("guess the word taboo clue grid cell target partner letter green yellow red reply "
                         "format explanation describe expression round game player answer").split()]
    contexts = []
    for _ in range(count):
        text = "Let's play a game."
        while len(chat.prompt_ids(tokenizer, [{"role": "user", "content": text}])) < tokens:
            text += " " + " ".join(rng.choices(words, k=16))
        contexts.append([{"role": "user", "content": text}])
    return contexts


def peak_memory_gib() -> float:
    import torch

    return torch.cuda.max_memory_allocated() / 2**30 if torch.cuda.is_available() else 0.0


def output_dir() -> Path:
    """``$OUT`` (the device tool's output folder) when set, else ``benchmarks/out/`` under the working directory
    (the ``benchmarks/gpu_*.sh`` scripts run from the repository root; an installed package has no repository)."""
    base = os.environ.get("OUT")
    path = Path(base) if base else Path("benchmarks") / "out"
    path.mkdir(parents=True, exist_ok=True)
    if not base:  # results of a local run are not for committing
        (path / ".gitignore").write_text("*\n")
    return path


def write_results(name: str, data: dict, markdown: str) -> list[Path]:
    """``<name>.json`` and ``<name>.md`` in ``output_dir``; the markdown is printed too."""
    out = output_dir()
    json_path, md_path = out / f"{name}.json", out / f"{name}.md"
    atomic.write_text(json_path, json.dumps(data, indent=2, default=str))
    atomic.write_text(md_path, markdown)
    print(markdown, flush=True)
    return [json_path, md_path]


def environment() -> dict:
    """GPU, driver-visible memory and library versions."""
    import torch
    import transformers

    info = {"torch": torch.__version__, "transformers": transformers.__version__, "cuda": torch.version.cuda,
            "date": time.strftime("%Y-%m-%dT%H:%M:%S")}
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        info.update(gpu=props.name, gpu_memory_gib=round(props.total_memory / 2**30, 1))
    try:
        import vllm

        info["vllm"] = vllm.__version__
    except ImportError:
        info["vllm"] = None
    return info
