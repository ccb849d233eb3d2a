"""Time and peak GPU memory of QLoRA training steps, SFT and PRM, on random-weight models of real size.

Offline and self-contained: the model is built from a config dict (the card's Qwen3.5 layout at ~2.4B, see
``playprm.bench.gpu.QWEN3_5_2B``; with ``--qwen3-8b`` also Qwen3-8B's shape, with ``--qwen35-27b`` also a
Qwen3.5-27B-shaped text model where the disk holds its random weights), given random weights on the GPU,
saved to a scratch folder and loaded back through the trainers' own loader (4-bit NF4, double quantization,
bf16 compute). It then trains a few steps of 4 sequences x 1024 tokens with the model card's settings (LoRA r=16
on all linear layers, paged AdamW 8-bit, activation checkpointing) through the same trainer classes that
``train-sft`` (TRL SFTTrainer) and ``train-prm`` (PRMTrainer) use. The first step is warm-up and not timed.

Prints one line per job and writes ``OUT/gpu_train_step.json``. Skips (exit 0, one ``SKIP`` line) without CUDA
or bitsandbytes. Run it through ``benchmarks/gpu_train_step.sh``.
"""

from __future__ import annotations

import argparse
import gc
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from playprm.bench import gpu

QWEN3_8B = ("qwen3", dict(
    vocab_size=151936, hidden_size=4096, intermediate_size=12288, num_hidden_layers=36, num_attention_heads=32,
    num_key_value_heads=8, head_dim=128, max_position_embeddings=40960, rope_theta=1_000_000.0, rms_norm_eps=1e-6,
    tie_word_embeddings=False,
))
# the text model of Qwen3.5-27B (hybrid gated-delta-net / full attention layers; no vision tower): 25.4B params
QWEN35_27B = ("qwen3_5_text", dict(
    vocab_size=248320, hidden_size=5120, intermediate_size=17408, num_hidden_layers=64, num_attention_heads=24,
    num_key_value_heads=4, head_dim=256, tie_word_embeddings=False,
))
QWEN35_2B = ("qwen3_5_text", {k: v for k, v in gpu.QWEN3_5_2B.items()
                               if k not in ("architectures", "model_type", "torch_dtype")})
TURNS_PER_SEQUENCE = 8  # PRM: head read at 8 reply ends per sequence, as in an 8-turn episode


def skip(reason: str) -> None:
    print(f"SKIP gpu_train_step: {reason}")
    sys.exit(0)


def check_environment() -> None:
    try:
        import torch
    except ImportError:
        skip("torch is not installed")
    if not torch.cuda.is_available():
        skip("no CUDA device is visible (torch.cuda.is_available() is False); run on a GPU node")
    try:
        import bitsandbytes  # noqa: F401
    except Exception as error:  # ImportError, or a CUDA-setup error of bitsandbytes itself
        skip(f"bitsandbytes cannot be imported ({str(error).splitlines()[0]}); pip install 'playprm[gpu]'")


def write_random_model(model_type: str, shape: dict, folder: Path) -> int:
    """Random bf16 weights of the given shape, initialised on the GPU and saved to ``folder``; returns #params."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.for_model(model_type, **shape)
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    parameters = sum(p.numel() for p in model.parameters())
    model.save_pretrained(folder, max_shard_size="5GB")
    del model
    release_memory()
    return parameters


def release_memory() -> None:
    import torch

    gc.collect()
    torch.cuda.empty_cache()


def step_timer():
    """A TrainerCallback that times each optimizer step between CUDA synchronisations."""
    import torch
    from transformers import TrainerCallback

    class StepTimer(TrainerCallback):
        def __init__(self):
            self.seconds: list[float] = []
            self._start = 0.0

        def on_step_begin(self, args, state, control, **kwargs):
            torch.cuda.synchronize()
            self._start = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            torch.cuda.synchronize()
            self.seconds.append(time.perf_counter() - self._start)

    return StepTimer()


def bench_settings(out: Path, steps: int, batch: int, length: int) -> dict:
    """The model card's settings, trimmed to a timing run: no evaluation, no checkpoints, one sequence batch
    per optimizer step."""
    return dict(output_dir=str(out), max_steps=steps, per_device_train_batch_size=batch,
                gradient_accumulation_steps=1, eval_strategy="no", save_strategy="no",
                load_best_model_at_end=False, early_stopping_patience=0, logging_steps=1, disable_tqdm=True,
                require_cuda=True, report_to="none")


def random_tokens(count: int, length: int, vocab: int):
    import torch

    generator = torch.Generator().manual_seed(0)
    return torch.randint(0, vocab, (count, length), generator=generator).tolist()


def run_job(name: str, make_trainer, batch: int, length: int) -> dict:
    """Train with the trainer ``make_trainer(timer)`` builds; time the steps after the first; peak memory."""
    import torch

    torch.cuda.reset_peak_memory_stats()
    started = time.perf_counter()
    timer = step_timer()
    trainer = make_trainer(timer)
    loaded_gib = torch.cuda.memory_allocated() / 2**30
    load_s = time.perf_counter() - started
    torch.cuda.reset_peak_memory_stats()
    trainer.train()
    timed = timer.seconds[1:] or timer.seconds
    step_s = statistics.median(timed)
    result = {
        "job": name, "load_s": round(load_s, 1), "weights_gib": round(loaded_gib, 2),
        "step_s": round(step_s, 3), "tokens_per_s": round(batch * length / step_s),
        "peak_allocated_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2),
        "peak_reserved_gib": round(torch.cuda.max_memory_reserved() / 2**30, 2),
        "steps_timed": len(timed), "step_s_all": [round(s, 3) for s in timer.seconds],
    }
    del trainer
    release_memory()
    print(f"{name}: {result['step_s']:.2f} s/step ({result['tokens_per_s']} tokens/s), peak "
          f"{result['peak_allocated_gib']:.1f} GiB allocated / {result['peak_reserved_gib']:.1f} GiB reserved, "
          f"4-bit weights {result['weights_gib']:.1f} GiB, load {result['load_s']:.0f} s", flush=True)
    return result


def sft_trainer(model_dir: Path, tokenizer, out: Path, steps: int, batch: int, length: int, vocab: int):
    from datasets import Dataset
    from transformers import AutoModelForCausalLM
    from trl import SFTTrainer

    from playprm.train.base_model import BaseModel, load_base_model
    from playprm.train.qlora import lora_config
    from playprm.train.sft_config import SFTTrainingConfig

    config = SFTTrainingConfig(**bench_settings(out / "sft", steps, batch, length), max_length=length)
    sequences = []
    for ids in random_tokens(steps * batch, length, vocab):
        # the second half plays the assistant replies: the loss covers it, as assistant-only SFT does
        sequences.append({"input_ids": ids, "labels": [-100] * (length // 2) + ids[length // 2:]})

    def make(timer):
        model = load_base_model(AutoModelForCausalLM, BaseModel(str(model_dir)), config)
        return SFTTrainer(model=model, args=config, train_dataset=Dataset.from_list(sequences),
                          processing_class=tokenizer, peft_config=lora_config(config, "CAUSAL_LM"),
                          callbacks=[timer])

    return make


def prm_trainer(model_dir: Path, tokenizer, out: Path, steps: int, batch: int, length: int, vocab: int):
    from playprm.train.base_model import BaseModel
    from playprm.train.prm import PRMCollator, PRMTrainer, build_prm
    from playprm.train.prm_config import PRMTrainingConfig

    config = PRMTrainingConfig(**bench_settings(out / "prm", steps, batch, length), max_length=length)
    gap = length // TURNS_PER_SEQUENCE
    items = [{"input_ids": ids, "positions": [gap * (t + 1) - 1 for t in range(TURNS_PER_SEQUENCE)],
              "labels": [float((i + t) % 2) for t in range(TURNS_PER_SEQUENCE)]}
             for i, ids in enumerate(random_tokens(steps * batch, length, vocab))]

    def make(timer):
        model = build_prm(BaseModel(str(model_dir)), config, initial_label_rate=0.5)
        return PRMTrainer(model=model, args=config, data_collator=PRMCollator(tokenizer.pad_token_id),
                          train_dataset=items, callbacks=[timer], loss="bce")

    return make


def parameter_count(model_type: str, shape: dict) -> int:
    """Parameters of the causal LM of that shape, counted on the meta device (no memory used)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(AutoConfig.for_model(model_type, **shape))
    return sum(p.numel() for p in model.parameters())


def bench_model(label: str, model_type: str, shape: dict, scratch: Path, args, tokenizer) -> list[dict]:
    """Write random weights of one shape, then time the SFT and the PRM job on them."""
    try:
        parameters = parameter_count(model_type, shape)
    except Exception as error:  # e.g. a transformers release without this architecture
        print(f"SKIP {label}: cannot build its config with this transformers ({error})")
        return []
    need_gib = parameters * 2 / 2**30 * 1.05  # bf16 safetensors, plus a margin
    free_gib = shutil.disk_usage(scratch).free / 2**30
    if free_gib < need_gib:
        print(f"SKIP {label}: its random weights need {need_gib:.0f} GiB of disk in {scratch}, "
              f"{free_gib:.0f} GiB are free (set TMPDIR to a larger disk)")
        return []
    model_dir = scratch / label
    started = time.perf_counter()
    write_random_model(model_type, shape, model_dir)
    print(f"{label}: {parameters / 1e9:.2f}B random parameters written in {time.perf_counter() - started:.0f} s",
          flush=True)
    results = []
    common = (model_dir, tokenizer, scratch / f"{label}-runs", args.steps, args.batch, args.length,
              shape["vocab_size"])
    for job, builder in (("sft", sft_trainer), ("prm", prm_trainer)):
        result = run_job(f"{label} {job}", builder(*common), args.batch, args.length)
        results.append({"model": label, "parameters": parameters, "batch": args.batch, "length": args.length,
                        **result})
    shutil.rmtree(model_dir, ignore_errors=True)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/out"), help="folder for gpu_train_step.json")
    parser.add_argument("--steps", type=int, default=6, help="optimizer steps per job (the first is warm-up)")
    parser.add_argument("--batch", type=int, default=4, help="sequences per step")
    parser.add_argument("--length", type=int, default=1024, help="tokens per sequence")
    parser.add_argument("--qwen3-8b", action="store_true", help="also the Qwen3-8B-shaped model (plain attention)")
    parser.add_argument("--qwen35-27b", action="store_true",
                        help="also the Qwen3.5-27B-shaped text model (needs ~50 GiB of free disk)")
    parser.add_argument("--no-card-layout", action="store_true",
                        help="leave out the ~2.4B Qwen3.5-layout model (benchmarks/gpu_check.py times it apart)")
    args = parser.parse_args()
    check_environment()

    import torch

    from playprm.atomic import write_json

    print(f"device: {torch.cuda.get_device_name(0)}, "
          f"{torch.cuda.get_device_properties(0).total_memory / 2**30:.0f} GiB", flush=True)
    tokenizer = gpu.bench_tokenizer()  # only its pad token is used: the data are token ids already
    models = ([] if args.no_card_layout else [("Qwen3.5-layout-2.4B", *QWEN35_2B)]) \
        + ([("Qwen3-8B", *QWEN3_8B)] if args.qwen3_8b else []) \
        + ([("Qwen3.5-27B", *QWEN35_27B)] if args.qwen35_27b else [])
    results = []
    with tempfile.TemporaryDirectory(prefix="playprm-bench-") as scratch:
        for label, model_type, shape in models:
            results += bench_model(label, model_type, shape, Path(scratch), args, tokenizer)
    write_json(args.out / "gpu_train_step.json", {
        "device": torch.cuda.get_device_name(0), "torch": torch.__version__, "results": results,
    })
    print(f"wrote {args.out / 'gpu_train_step.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
