"""A train-sft step on CPU against a bare forward and backward of the same batch, with TRL's fused LM head as TRL
runs it on CPU (every position projected through the vocabulary) and as playprm runs it
(``train.fused_head.score_labelled_positions_only``: the labelled positions only, TRL's CUDA path).

Usage: python benchmarks/sft_step.py MODEL SFT_DATA [--batches 4] [--batch-size 4] [--rounds 3] [--threads 1]

MODEL: a model folder (e.g. ``runs/smol_s0/base`` of ``pipeline --preset smol``, SmolLM2-135M-Instruct in fp32);
SFT_DATA: its sft-data folder (``runs/smol_s0/sft-data``). A LoRA SFT trainer is built as train-sft builds it (the
card's LoRA, r 16, all-linear); the same ``--batches`` batches of its training data are then run, alternated
A B C A B C, as:
- ``trl cpu``: ``trainer.training_step`` (forward through the fused head, TRL's metrics, backward) with TRL's
  head projecting every position;
- ``labelled only``: the same with playprm's patch;
- ``bare``: ``model(input_ids, attention_mask, labels).loss.backward()`` through the model's own head and loss.
Prints each variant's seconds a batch (median over rounds) and the ratios to ``bare``.
"""

import argparse
import statistics
import time
from pathlib import Path

import torch

from playprm.train.base_model import resolve_start_policy
from playprm.train.fused_head import score_labelled_positions_only
from playprm.train.recipe import build_config
from playprm.train.sft import build_sft_trainer, load_tokenizer, tokenize_split
from playprm.train.sft_config import SFTTrainingConfig


def main() -> None:
    from transformers import AutoModelForCausalLM
    from trl.trainer import utils

    from playprm.train.base_model import load_start_policy
    from playprm.train.dataset_files import read_splits, sft_record_problem

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("data")
    parser.add_argument("--batches", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    start = resolve_start_policy(args.model)
    config = build_config(SFTTrainingConfig, {
        "output_dir": "/tmp/playprm-sft-step", "per_device_train_batch_size": args.batch_size,
        "effective_batch_size": args.batch_size, "max_length": 1024, "activation_checkpointing": False,
        "eval_strategy": "no", "save_strategy": "no", "disable_tqdm": True, "seed": 0})
    tokenizer = load_tokenizer(start.base)
    template_kwargs = start.base.template_kwargs(config.chat_template_kwargs)
    splits = read_splits(Path(args.data), sft_record_problem, "sft-data")
    train = tokenize_split(tokenizer, splits["train"], template_kwargs, config.max_length, False)
    validation = tokenize_split(tokenizer, splits["validation"][:4], template_kwargs, config.max_length, False)
    model, peft_config = load_start_policy(AutoModelForCausalLM, start.base, None, config)
    trainer = build_sft_trainer(config, model, tokenizer, train, validation, peft_config=peft_config)
    compact, every = utils._use_triton, getattr(utils._use_triton, "original", utils._use_triton)
    loader = iter(trainer.get_train_dataloader())
    batches = [next(loader) for _ in range(args.batches)]
    model = trainer.model
    model.train()
    trainer.current_gradient_accumulation_steps = 1  # what Trainer.train sets before its first step

    def step(batch):
        trainer.training_step(model, batch)

    def bare(batch):
        out = model(input_ids=batch["input_ids"], attention_mask=batch.get("attention_mask"), labels=batch["labels"])
        out.loss.backward()

    variants = {"trl cpu": (every, step), "labelled only": (compact, step), "bare": (every, bare)}
    seconds: dict[str, list[float]] = {name: [] for name in variants}
    tokens = sum(int(b["attention_mask"].sum()) for b in batches)
    labelled = sum(int((b["labels"] != -100).sum()) for b in batches)
    print(f"{args.batches} batches of {args.batch_size}: {tokens} tokens, {labelled} of them labelled")
    for round_ in range(args.rounds):
        for name, (use_triton, run) in variants.items():
            utils._use_triton = use_triton
            model.zero_grad()
            began = time.perf_counter()
            for batch in batches:
                run(batch)
            seconds[name].append((time.perf_counter() - began) / len(batches))
            print(f"round {round_ + 1}, {name}: {seconds[name][-1]:.2f} s a batch", flush=True)
    utils._use_triton = compact
    medians = {name: statistics.median(values) for name, values in seconds.items()}
    for name, value in medians.items():
        print(f"{name}: median {value:.2f} s a batch, {value / medians['bare']:.2f}x bare")
    print(f"trl cpu / labelled only: {medians['trl cpu'] / medians['labelled only']:.2f}x")


if __name__ == "__main__":
    score_labelled_positions_only()
    main()
