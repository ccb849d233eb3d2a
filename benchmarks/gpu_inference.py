"""Best-of-N overhead and PRM scoring throughput on one GPU, on random-weight models in bf16 (default: the
card's Qwen3.5 layout at ~2.4B).

Run by benchmarks/gpu_inference.sh (which sets PYTHONPATH to src/). The policy is vLLM (playprm's VLLMPolicy,
random weights via load_format="dummy") when vLLM is importable, else playprm's HFPolicy; the PRM is playprm's
ProcessRewardModel behind PRMScorer (transformers) in both cases. No download.

1. wall(best-of-N, PRM included) / wall(greedy) for N = 4 and 8 on the same contexts (playprm's own
   best_of_n.choose and greedy.choose), with the generation and the PRM call also timed alone, and (HFPolicy)
   the same N rows decoded greedily, which isolates the cost of sampling.
2. PRM scoring throughput: shared-context ``score`` on contexts x candidates, against ``score_naive`` on a
   subset. Every figure is the median of alternated rounds. Results: gpu_inference.json/.md in $OUT (or
   benchmarks/out/).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from playprm.bench import gpu, report


def make_policy(tokenizer, config: dict, args, folder: Path):
    """(policy, engine name): VLLMPolicy on dummy weights when vLLM imports, else HFPolicy on a random model."""
    from playprm.models.base import PolicySpec

    spec = PolicySpec(name=f"{args.model}-random", backend="hf", model_id="random")
    try:
        import vllm
    except ImportError as error:
        from playprm.models.hf import HFPolicy

        model = gpu.random_causal_lm(config, tokenizer)
        return HFPolicy(spec, model, tokenizer, max_batch_rows=args.contexts * max(args.ns)), \
            f"transformers (HFPolicy); vLLM not importable: {error}"
    from playprm.models.vllm_policy import VLLMPolicy

    model_dir = gpu.write_model_dir(folder / f"{args.model}-random", config, tokenizer)
    # the engine playprm eval runs (VLLMPolicy, engine_kwargs), on random weights of the config's shapes
    policy = VLLMPolicy(PolicySpec(name=spec.name, backend="vllm", model_id=str(model_dir), dtype="bfloat16"),
                        gpu_memory_utilization=0.55, max_model_len=args.prompt_tokens + args.new_tokens + 64,
                        load_format="dummy")
    return policy, f"vLLM {vllm.__version__} (VLLMPolicy, prefix caching)"


def alternate(paths: dict, rounds: int) -> dict[str, list[float]]:
    for call in paths.values():  # warm-up round
        call()
    times = {name: [] for name in paths}
    for _ in range(rounds):
        for name, call in paths.items():
            times[name].append(gpu.timed(call)[0])
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--contexts", type=int, default=32)
    parser.add_argument("--prompt-tokens", type=int, default=400)
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--ns", type=int, nargs="+", default=[4, 8])
    parser.add_argument("--prm-candidates", type=int, default=8)
    parser.add_argument("--naive-contexts", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--model", choices=sorted(gpu.MODELS), default=gpu.DEFAULT_MODEL,
                        help="tiny: a toy Qwen3 to smoke-test this script on a CPU")
    args = parser.parse_args()
    config = gpu.MODELS[args.model]

    from dataclasses import replace

    from playprm import chat
    from playprm.play.config import default_search_settings
    from playprm.prm.scorer import PRMScorer
    from playprm.search import best_of_n, greedy
    from playprm.search.base import SearchSettings

    info = gpu.environment()
    started = time.perf_counter()
    tokenizer = gpu.padded_tokenizer(config["vocab_size"])
    with tempfile.TemporaryDirectory() as folder:
        policy, engine = make_policy(tokenizer, config, args, Path(folder))
        scorer = PRMScorer(gpu.random_prm(config), tokenizer,
                           max_batch_rows=args.contexts * max(args.ns + [args.prm_candidates]))
        build_seconds = time.perf_counter() - started
        contexts = gpu.chat_contexts(tokenizer, args.contexts, args.prompt_tokens)

        def settings(n: int) -> SearchSettings:
            return default_search_settings(n_candidates=n, temperature=0.7, max_tokens=args.new_tokens, seed=0)

        sampled = {n: policy.generate(contexts, n=n, temperature=0.7, max_tokens=args.new_tokens, seed=1)
                   for n in args.ns}
        texts = {n: [[c.text for c in group] for group in sampled[n]] for n in args.ns}
        paths = {"greedy": lambda: greedy.choose(contexts, policy, None, replace(settings(1), temperature=0.0))}
        for n in args.ns:
            paths[f"best-of-{n}"] = lambda n=n: best_of_n.choose(contexts, policy, scorer, settings(n))
            paths[f"generate n={n} (T=0.7)"] = lambda n=n: policy.generate(
                contexts, n=n, temperature=0.7, max_tokens=args.new_tokens, seed=2)
            paths[f"PRM score {n} candidates"] = lambda n=n: scorer.score(contexts, texts[n])
            if engine.startswith("transformers"):
                paths[f"generate n={n} (T=0, same rows)"] = lambda n=n: policy.generate(
                    contexts, n=n, temperature=0.0, max_tokens=args.new_tokens)
        overhead = alternate(paths, args.rounds)

        k = args.prm_candidates
        groups = [[f"GUESS: word{i}\nEXPLANATION: " + " ".join(["because"] * (args.new_tokens - 12))
                   for i in range(k)] for _ in contexts]
        few = args.naive_contexts
        scoring = alternate({
            f"score {args.contexts} contexts x {k}": lambda: scorer.score(contexts, groups),
            f"score {few} contexts x {k}": lambda: scorer.score(contexts[:few], groups[:few]),
            f"score_naive {few} contexts x {k}": lambda: scorer.score_naive(contexts[:few], groups[:few]),
        }, args.rounds)
        peak = gpu.peak_memory_gib()

    med = {name: statistics.median(t) for name, t in {**overhead, **scoring}.items()}
    base = med["greedy"]
    lines = ["## GPU best-of-N overhead and PRM scoring (benchmarks/gpu_inference.sh)", "",
             f"- {info.get('gpu')} ({info.get('gpu_memory_gib')} GiB), torch {info['torch']}, transformers "
             f"{info['transformers']}; {info['date']}",
             f"- policy: {engine}; PRM: PRMScorer on a random {args.model}-shaped backbone (bf16); both built in "
             f"{build_seconds:.0f} s; peak torch memory {peak:.1f} GiB",
             f"- {args.contexts} contexts of ~{args.prompt_tokens} tokens, up to {args.new_tokens} new tokens, "
             f"best-of-N at temperature 0.7, {args.rounds} alternated rounds (medians)", ""]
    lines.append(report.table(["path", "wall s", "x greedy"],
                              [[name, f"{med[name]:.3f}", f"{med[name] / base:.2f}x"] for name in overhead]))
    lines += [""] + [f"- best-of-{n} / greedy = {med[f'best-of-{n}'] / base:.2f} "
                     f"(goal {'<= 1.5' if n == 4 else '<= 2.0' if n == 8 else 'none'})" for n in args.ns]
    prm_tokens = sum(len(chat.prompt_ids(tokenizer, c)) for c in contexts)
    many = med[f"score {args.contexts} contexts x {k}"]
    counts = {f"score {args.contexts} contexts x {k}": args.contexts * k, f"score {few} contexts x {k}": few * k,
              f"score_naive {few} contexts x {k}": few * k}
    lines += ["", report.table(["PRM path", "wall s", "candidates/s"],
                               [[name, f"{med[name]:.3f}", f"{counts[name] / med[name]:.0f}"] for name in scoring])]
    lines += ["", f"- shared-context scoring: {args.contexts * k / many:.0f} candidates/s, "
                  f"{(prm_tokens + args.contexts * k * args.new_tokens) / many:.0f} tokens/s (contexts once, "
                  f"then candidates)",
              f"- naive / shared at {few} contexts: "
              f"{med[f'score_naive {few} contexts x {k}'] / med[f'score {few} contexts x {k}']:.1f}x"]
    data = {"environment": info, "engine": engine, "settings": vars(args), "build_seconds": build_seconds,
            "peak_gib": peak, "best_of_n_times": overhead, "prm_times": scoring, "medians": med}
    gpu.write_results("gpu_inference", data, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
