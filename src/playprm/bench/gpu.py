"""Pieces of the GPU benchmark scripts (``benchmarks/gpu_*.py``): a random-weight model of real size built from
a config dict (no download), a tokenizer made here and padded to the model's vocabulary, the HBM roofline, and
where results go.

These scripts run on a machine whose Python has torch and transformers but perhaps not playprm's other
dependencies (clemcore, english-words): nothing here imports them.
"""

from __future__ import annotations

import json
import os
import random
import time
from pathlib import Path

# Qwen/Qwen3-8B's config.json (architecture fields only): 36 layers, hidden 4096, GQA 32/8 heads of 128.
QWEN3_8B = {
    "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "vocab_size": 151936, "hidden_size": 4096,
    "intermediate_size": 12288, "num_hidden_layers": 36, "num_attention_heads": 32, "num_key_value_heads": 8,
    "head_dim": 128, "hidden_act": "silu", "max_position_embeddings": 40960, "rms_norm_eps": 1e-6,
    "rope_theta": 1000000.0, "tie_word_embeddings": False, "attention_bias": False, "torch_dtype": "bfloat16",
}
# a Qwen3 of the same layout at toy size, to smoke-test the scripts on a CPU (``--model tiny``)
TINY_QWEN3 = {**QWEN3_8B, "vocab_size": 4096, "hidden_size": 128, "intermediate_size": 256, "num_hidden_layers": 2,
              "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32}
MODELS = {"qwen3-8b": QWEN3_8B, "tiny": TINY_QWEN3}
H200_BANDWIDTH = 4.8e12  # bytes/s, the vendor's HBM3e figure


def _synthetic_corpus() -> list[str]:
    """Letter strings and game-like lines, for machines without the english-words package."""
    rng = random.Random(0)
    letters = "etaoinshrdlcumwfgypbvkjxqz"
    words = ["".join(rng.choices(letters, k=rng.randint(2, 9))) for _ in range(40000)]
    lines = [" ".join(words[i:i + 40]) for i in range(0, len(words), 40)]
    return lines + ["GUESS: house EXPLANATION: common letters", "CLUE: a place to live. GUESS: home"] * 20


def padded_tokenizer(vocab_size: int, base_vocab: int = 2048):
    """make-tiny's tokenizer (trained here, Qwen-style chat template), padded with special tokens to
    ``vocab_size`` so that every id a real-size random model samples decodes."""
    from playprm.models import tiny

    try:
        import english_words  # noqa: F401
    except ImportError:  # the GPU image has no english-words; train the same BPE on made-up words instead
        tiny._tokenizer_corpus = _synthetic_corpus
    tokenizer = tiny.build_tokenizer(base_vocab)
    missing = vocab_size - len(tokenizer)
    if missing > 0:
        tokenizer.add_tokens([f"<|pad_{i}|>" for i in range(missing)], special_tokens=True)
    return tokenizer


def config_object(config: dict):
    from transformers import Qwen3Config

    fields = {k: v for k, v in config.items() if k not in ("architectures", "model_type", "torch_dtype")}
    return Qwen3Config(**fields)


def default_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def synchronize() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


def random_causal_lm(config: dict, tokenizer, *, device: str | None = None):
    """Qwen3ForCausalLM with random bf16 weights, built on the device (seconds, no checkpoint)."""
    import torch
    from transformers import Qwen3ForCausalLM

    cfg = config_object(config)
    cfg.eos_token_id = tokenizer.convert_tokens_to_ids("<|im_end|>")
    cfg.pad_token_id = tokenizer.pad_token_id
    torch.manual_seed(0)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)
    try:
        with torch.device(device or default_device()):
            model = Qwen3ForCausalLM(cfg)
    finally:
        torch.set_default_dtype(previous)
    model.generation_config.eos_token_id = cfg.eos_token_id
    model.generation_config.pad_token_id = cfg.pad_token_id
    return model.eval()


def random_prm(config: dict, *, device: str | None = None):
    """playprm's ProcessRewardModel (backbone + scalar head) on a random bf16 backbone of ``config``."""
    import torch

    from playprm.prm.model import ProcessRewardModel

    cfg = config_object(config)
    torch.manual_seed(1)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)
    try:
        with torch.device(device or default_device()):
            prm = ProcessRewardModel.from_config(cfg)
    finally:
        torch.set_default_dtype(previous)
    return prm.eval()


def write_model_dir(directory: Path, config: dict, tokenizer) -> Path:
    """config.json and tokenizer files, no weights: what vLLM's ``load_format="dummy"`` needs."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json.dumps({**config, "eos_token_id": tokenizer.convert_tokens_to_ids(
        "<|im_end|>"), "pad_token_id": tokenizer.pad_token_id}, indent=2))
    tokenizer.save_pretrained(directory)
    return directory


def weight_bytes_per_step(config: dict, bytes_per_value: int = 2) -> float:
    """Bytes of weights one decode step reads: every matrix once, the input embedding only by row (so left out)."""
    h, i, layers = config["hidden_size"], config["intermediate_size"], config["num_hidden_layers"]
    q = config["num_attention_heads"] * config["head_dim"]
    kv = config["num_key_value_heads"] * config["head_dim"]
    per_layer = h * q + 2 * h * kv + q * h + 3 * h * i + 2 * h + 2 * config["head_dim"]
    lm_head = config["vocab_size"] * h
    return float((layers * per_layer + lm_head + h) * bytes_per_value)


def kv_bytes_per_token(config: dict, bytes_per_value: int = 2) -> float:
    """Bytes of KV cache one cached token adds (and each decode step reads back)."""
    return float(2 * config["num_hidden_layers"] * config["num_key_value_heads"] * config["head_dim"]
                 * bytes_per_value)


def roofline_tokens_per_second(config: dict, batch: int, context: int, bandwidth: float = H200_BANDWIDTH) -> dict:
    """Upper bounds of decode tokens/s when a step is limited by reading memory: weights only, and weights plus
    the batch's KV cache at ``context`` tokens."""
    weights = weight_bytes_per_step(config)
    kv = batch * context * kv_bytes_per_token(config)
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
    """``$OUT`` (the device tool's output folder) when set, else ``benchmarks/out/``."""
    base = os.environ.get("OUT")
    path = Path(base) if base else Path(__file__).resolve().parents[3] / "benchmarks" / "out"
    path.mkdir(parents=True, exist_ok=True)
    if not base:  # results of a local run are not for committing
        (path / ".gitignore").write_text("*\n")
    return path


def write_results(name: str, data: dict, markdown: str) -> list[Path]:
    """``<name>.json`` and ``<name>.md`` in ``output_dir``; the markdown is printed too."""
    out = output_dir()
    json_path, md_path = out / f"{name}.json", out / f"{name}.md"
    for path, text in ((json_path, json.dumps(data, indent=2, default=str)), (md_path, markdown)):
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    print(markdown, flush=True)
    return [json_path, md_path]


def table(header: list[str], rows: list[list]) -> str:
    from playprm.bench.report import markdown_table

    return "\n".join(markdown_table(header, rows))


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
