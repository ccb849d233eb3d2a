"""Greedy play with a LoRA adapter left as PEFT layers against the same adapter folded into float32 weights
(``models.adapters.merge_for_inference``, what playprm's play does since 2026-12-06).

Usage: python benchmarks/lora_merge.py ADAPTER_DIR CONVERSATIONS_JSONL [--threads 2] [--contexts 48] [--rounds 3]

ADAPTER_DIR: a train-sft output folder (e.g. ``runs/smoltime/sft-policy`` of ``pipeline --preset smol``);
CONVERSATIONS_JSONL: sft-data's ``validation.jsonl`` beside it (each conversation without its last reply is one
context). The two policies decode the same contexts in one process, alternated A B A B, the prefix cache off so
that every round encodes in full; prints each round's seconds, the ratio of the medians and how many replies agree.
"""

import argparse
import json
import statistics
import time

import torch

from playprm.models.hf import HFPolicy, load_causal_lm
from playprm.models.registry import resolve_policy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("adapter")
    parser.add_argument("conversations")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--contexts", type=int, default=48)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=56)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    spec = resolve_policy(args.adapter)
    merged, tokenizer = load_causal_lm(spec)  # what play loads: folded
    unmerged, _ = load_causal_lm_unmerged(spec)
    with open(args.conversations) as lines:
        contexts = [json.loads(line)["messages"][:-1] for line in lines][:args.contexts]
    policies = {"peft layers": HFPolicy(spec, model=unmerged, tokenizer=tokenizer, reuse_cache=False),
                "folded": HFPolicy(spec, model=merged, tokenizer=tokenizer, reuse_cache=False)}
    seconds: dict[str, list[float]] = {name: [] for name in policies}
    replies: dict[str, list[str]] = {}
    for _ in range(args.rounds):
        for name, policy in policies.items():
            start = time.perf_counter()
            out = policy.generate(contexts, n=1, temperature=0.0, max_tokens=args.max_tokens)
            seconds[name].append(time.perf_counter() - start)
            replies[name] = [candidates[0].text for candidates in out]
    for name, values in seconds.items():
        print(f"{name}: " + ", ".join(f"{v:.2f}" for v in values) + f" s (median {statistics.median(values):.2f})")
    ratio = statistics.median(seconds["peft layers"]) / statistics.median(seconds["folded"])
    same = sum(a == b for a, b in zip(replies["peft layers"], replies["folded"]))
    print(f"peft layers / folded: {ratio:.2f}x; identical greedy replies: {same} of {len(contexts)}")


def load_causal_lm_unmerged(spec):
    """load_causal_lm as it was before folding: the adapter stays as PEFT layers."""
    from unittest import mock

    with mock.patch("playprm.models.adapters.merge_for_inference", lambda model: model):
        return load_causal_lm(spec)


if __name__ == "__main__":
    main()
