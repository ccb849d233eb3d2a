"""A/B: the decode loop with finished rows dropped vs every row decoding to the end (``HFPolicy.compact_rows``).

Usage: python benchmarks/decode_loop.py POLICY_DIR [OUT_JSON]. POLICY_DIR should be a trained model whose replies
stop at different lengths (the small preset's ``<workdir>/sft-policy``); a random-weight model never stops early,
so there is nothing to drop. Outputs must be identical both ways (checked); times are medians of 3 alternated
rounds on one thread, 32 first-turn contexts of the built-in games, 64 new tokens at most.
"""

from __future__ import annotations

import json
import statistics
import sys

import torch

from playprm.bench import workload
from playprm.bench.timing import alternate
from playprm.models.hf import HFPolicy, load_causal_lm
from playprm.models.registry import resolve_policy


def policy_pair(spec, model, tokenizer) -> tuple[HFPolicy, HFPolicy]:
    compact = HFPolicy(spec, model, tokenizer, reuse_cache=False)
    every_row = HFPolicy(spec, model, tokenizer, reuse_cache=False)
    every_row.compact_rows = False
    return compact, every_row


def main(argv: list[str]) -> dict:
    torch.set_num_threads(1)
    spec = resolve_policy(argv[0])
    model, tokenizer = load_causal_lm(spec)
    contexts = workload.game_contexts(32, limit=4)
    results = {}
    for n in (1, 4):
        compact, every_row = policy_pair(spec, model, tokenizer)

        def call(policy: HFPolicy, n: int = n):
            return policy.generate(contexts, n=n, temperature=0.0 if n == 1 else 0.7, max_tokens=64, seed=1)

        trial = alternate({"compact": lambda a=compact: call(a), "every row": lambda b=every_row: call(b)}, pairs=3)
        a, b = call(compact), call(every_row)
        lengths = [c.num_tokens for group in a for c in group]
        results[f"n={n}"] = {
            "compact_s": trial.median("compact"), "every_row_s": trial.median("every row"),
            "every_row_over_compact": trial.median("every row") / trial.median("compact"),
            "same_outputs": [[c.text for c in g] for g in a] == [[c.text for c in g] for g in b],
            "reply_tokens_min_median_max": [min(lengths), statistics.median(lengths), max(lengths)],
        }
        print(f"n={n}", results[f"n={n}"], flush=True)
    if len(argv) > 1:
        with open(argv[1], "w", encoding="utf-8") as out:
            json.dump(results, out, indent=1)
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
