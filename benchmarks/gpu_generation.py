"""Decode throughput on one GPU: playprm's HFPolicy and transformers' generate (and vLLM when importable) on a
random-weight model in bf16 (default: the card's Qwen3.5 layout at ~2.4B; `--model qwen3-8b` for Qwen3-8B's
shape), at batch 1, 16 and 64, against the HBM bandwidth roofline.

Run by benchmarks/gpu_generation.sh (which sets PYTHONPATH to src/). No download: the model is built from a
config dict with random weights, the tokenizer is make-tiny's, padded to the model's vocabulary. Decode
throughput is (generated tokens - one per row) / (time of the full call - time of the same call with
max_tokens=1), so the prefill is left out; each number is the median of alternated rounds.

Engines run in separate processes (vLLM reserves most of the GPU's memory for itself): ``--engine all``
starts one per engine, then writes gpu_generation.json/.md to $OUT (or benchmarks/out/).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from playprm.bench import gpu, report


def hf_engine(args) -> dict:
    import torch

    from playprm.models.base import PolicySpec
    from playprm.models.hf import HFPolicy

    config = gpu.MODELS[args.model]
    tokenizer = gpu.padded_tokenizer(config["vocab_size"])
    started = time.perf_counter()
    model = gpu.random_causal_lm(config, tokenizer)
    build_seconds = time.perf_counter() - started
    policy = HFPolicy(PolicySpec(name=f"{args.model}-random", backend="hf", model_id="random"), model, tokenizer,
                      max_batch_rows=max(args.batches))
    contexts = gpu.chat_contexts(tokenizer, max(args.batches), args.prompt_tokens)
    prompt_lengths = [len(policy.prompt_ids(c)) for c in contexts]

    def hf_policy(batch: int, tokens: int):
        out = policy.generate(contexts[:batch], n=1, temperature=0.0, max_tokens=tokens)
        return sum(c.num_tokens for group in out for c in group)

    def hf_generate(batch: int, tokens: int):
        """transformers' own greedy generate on the same left-padded batch, forced to ``tokens`` new tokens."""
        prompts = [policy.prompt_ids(c) for c in contexts[:batch]]
        width = max(len(p) for p in prompts)
        pad = tokenizer.pad_token_id
        ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts], device=policy.device)
        mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts], device=policy.device)
        with torch.inference_mode():
            out = model.generate(ids, attention_mask=mask, max_new_tokens=tokens, min_new_tokens=tokens,
                                 do_sample=False, pad_token_id=pad)
        return (out.shape[1] - width) * batch

    paths = {"HFPolicy": hf_policy, "transformers generate": hf_generate}
    for call in paths.values():  # warm-up: kernels, allocator
        call(2, 4)
    rows = measure(paths, args)
    peak = gpu.peak_memory_gib()
    return {"engine": "transformers", "rows": rows, "build_seconds": build_seconds, "peak_gib": peak,
            "prompt_tokens": [min(prompt_lengths), max(prompt_lengths)]}


def vllm_engine(args) -> dict:
    try:
        import vllm
    except ImportError as error:
        return {"engine": "vllm", "skipped": f"vLLM is not importable here ({error})"}
    config = gpu.MODELS[args.model]
    tokenizer = gpu.padded_tokenizer(config["vocab_size"])
    with tempfile.TemporaryDirectory() as folder:
        model_dir = gpu.write_model_dir(Path(folder) / f"{args.model}-random", config, tokenizer)
        started = time.perf_counter()
        # load_format="dummy": random weights of the config's shapes, no checkpoint needed
        llm = vllm.LLM(model=str(model_dir), load_format="dummy", dtype="bfloat16", gpu_memory_utilization=0.85,
                       max_model_len=args.prompt_tokens + args.new_tokens + 64, enable_prefix_caching=False)
        build_seconds = time.perf_counter() - started
        from playprm import chat

        contexts = gpu.chat_contexts(tokenizer, max(args.batches), args.prompt_tokens)
        prompts = [{"prompt_token_ids": chat.prompt_ids(tokenizer, c)} for c in contexts]

        def generate(batch: int, tokens: int):
            params = vllm.SamplingParams(max_tokens=tokens, temperature=0.0, ignore_eos=True, detokenize=False)
            outs = llm.generate(prompts[:batch], params, use_tqdm=False)
            return sum(len(o.outputs[0].token_ids) for o in outs)

        generate(2, 4)
        rows = measure({"vLLM": generate}, args)
    return {"engine": "vllm", "rows": rows, "build_seconds": build_seconds, "version": vllm.__version__}


def measure(paths: dict, args) -> list[dict]:
    """Per path and batch: full and prefill-only calls alternated round by round; medians."""
    times = {(name, b, t): [] for name in paths for b in args.batches for t in (1, args.new_tokens)}
    tokens = {}
    for _ in range(args.rounds):
        for (name, batch, new), samples in times.items():
            seconds, count = gpu.timed(lambda call=paths[name], b=batch, t=new: call(b, t))
            samples.append(seconds)
            tokens[(name, batch, new)] = count
    rows = []
    for name in paths:
        for batch in args.batches:
            full = statistics.median(times[(name, batch, args.new_tokens)])
            prefill = statistics.median(times[(name, batch, 1)])
            decoded = tokens[(name, batch, args.new_tokens)] - batch
            decode_seconds = max(full - prefill, 1e-9)
            roof = gpu.roofline_tokens_per_second(gpu.MODELS[args.model], batch, args.prompt_tokens + args.new_tokens // 2)
            rows.append({"path": name, "batch": batch, "full_s": full, "prefill_s": prefill,
                         "decode_tokens": decoded, "decode_tokens_per_s": decoded / decode_seconds,
                         "ms_per_step": decode_seconds / max(args.new_tokens - 1, 1) * 1000,
                         "roofline_weights_only": roof["weights_only"], "roofline_with_kv": roof["with_kv"],
                         "raw_full_s": times[(name, batch, args.new_tokens)],
                         "raw_prefill_s": times[(name, batch, 1)]})
    return rows


def markdown(results: list[dict], info: dict, args, bandwidth: float | None) -> str:
    config = gpu.MODELS[args.model]
    lines = ["## GPU decode throughput (benchmarks/gpu_generation.sh)", "",
             f"- {info.get('gpu')} ({info.get('gpu_memory_gib')} GiB), torch {info['torch']}, transformers "
             f"{info['transformers']}, CUDA {info['cuda']}, vLLM {info.get('vllm') or 'not installed'}; "
             f"{info['date']}",
             f"- model: random-weight {args.model} shape ({config['num_hidden_layers']} layers, hidden "
             f"{config['hidden_size']}, GQA {config['num_attention_heads']}/{config['num_key_value_heads']}), "
             f"bf16; weights read per "
             f"decode step {gpu.weight_bytes_per_step(config) / 1e9:.1f} GB; KV cache "
             f"{gpu.kv_bytes_per_token(config) / 1024:.0f} KiB per token",
             f"- prompts of ~{args.prompt_tokens} tokens, {args.new_tokens} new tokens (greedy), {args.rounds} "
             f"alternated rounds; decode = full call - the same call with max_tokens=1",
             f"- roofline: batch x bandwidth / bytes read per step, at {gpu.H200_BANDWIDTH / 1e12:.1f} TB/s "
             f"(vendor){'' if bandwidth is None else f'; measured device copy {bandwidth / 1e12:.2f} TB/s'}", ""]
    rows = []
    for result in results:
        if "skipped" in result:
            lines.append(f"- {result['engine']}: skipped: {result['skipped']}")
            continue
        for r in result["rows"]:
            rows.append([r["path"], r["batch"], f"{r['prefill_s']:.3f}", f"{r['full_s']:.3f}",
                         f"{r['ms_per_step']:.1f}", f"{r['decode_tokens_per_s']:.0f}",
                         f"{r['roofline_with_kv']:.0f}",
                         f"{r['decode_tokens_per_s'] / r['roofline_with_kv'] * 100:.0f}%"])
    lines += ["", report.table(["path", "batch", "prefill s", "full s", "ms/step", "decode tok/s", "roofline tok/s",
                                "of roofline"], rows)]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", choices=["all", "hf", "vllm"], default="all")
    parser.add_argument("--model", choices=sorted(gpu.MODELS), default=gpu.DEFAULT_MODEL,
                        help="tiny: a toy Qwen3 to smoke-test this script on a CPU")
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 16, 64])
    parser.add_argument("--prompt-tokens", type=int, default=256)
    parser.add_argument("--new-tokens", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--part", type=Path, help="(internal) write this engine's result JSON here")
    args = parser.parse_args()
    if args.engine != "all":
        result = (hf_engine if args.engine == "hf" else vllm_engine)(args)
        text = json.dumps(result, indent=2)
        if args.part:
            args.part.write_text(text)
        else:
            print(text)
        return 0
    info = gpu.environment()
    bandwidth = gpu.copy_bandwidth()
    results = []
    with tempfile.TemporaryDirectory() as folder:
        for engine in ("vllm", "hf"):
            part = Path(folder) / f"{engine}.json"
            command = [sys.executable, __file__, "--engine", engine, "--part", str(part), "--batches",
                       *map(str, args.batches), "--model", args.model, "--prompt-tokens", str(args.prompt_tokens), "--new-tokens",
                       str(args.new_tokens), "--rounds", str(args.rounds)]
            done = subprocess.run(command, check=False)
            results.append(json.loads(part.read_text()) if part.exists() else
                           {"engine": engine, "skipped": f"its process exited with {done.returncode}"})
    data = {"environment": info, "copy_bandwidth_bytes_per_s": bandwidth, "config": gpu.MODELS[args.model],
            "settings": vars(args) | {"part": None}, "results": results}
    gpu.write_results("gpu_generation", data, markdown(results, info, args, bandwidth))
    return 0


if __name__ == "__main__":
    sys.exit(main())
