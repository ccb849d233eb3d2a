"""Figure 1b: figures 1 and 2 on the model card's Qwen3.5 against Qwen3 of the same size, alternated in one run.

Qwen3.5 (3 gated delta-net layers to 1 softmax-attention layer) runs its linear attention through transformers'
reference PyTorch kernels on CPU (``flash-linear-attention`` and ``causal-conv1d`` are CUDA packages), so its
absolute times say what the CPU fallback costs; the ratios n=4 / n=1 and 8 candidates / 1 say whether the
prefill-once design (repeated convolution and recurrent states as well as keys/values) holds on it.
"""

from __future__ import annotations

import time

from playprm.bench import workload
from playprm.bench.generation import batched
from playprm.bench.report import Figure, Goal, ratio, seconds
from playprm.bench.scoring import workload_for
from playprm.bench.timing import alternate


def run(pairs_by_arch: dict[str, workload.ModelPair], *, contexts: int = 16, max_tokens: int = 24,
        prm_contexts: int = 4, prm_context_tokens: int = 1000, prm_candidates: int = 8,
        prm_candidate_tokens: int = 32, pairs: int = 3, temperature: float = 1.0) -> Figure:
    """Per architecture: HFPolicy at n=1 and n=4 on game contexts, shared PRM scoring of 1 and of
    ``prm_candidates`` candidates; every path alternated with every other in each round."""
    from playprm.models.hf import HFPolicy
    from playprm.models.registry import resolve_policy
    from playprm.prm.scorer import PRMScorer

    started = time.perf_counter()
    calls, labels = {}, {}
    batch = workload.game_contexts(contexts)
    for arch, models in pairs_by_arch.items():
        # one call's cost: without cross-turn reuse, repeated contexts would be found already encoded
        policy = HFPolicy(resolve_policy(str(models.policy)), reuse_cache=False)
        scorer = PRMScorer.from_path(models.prm)
        scorer.prefix_store = None
        prm_batch, groups = workload_for(scorer.tokenizer, prm_contexts, prm_context_tokens, prm_candidates,
                                         prm_candidate_tokens)
        singles = [g[:1] for g in groups]
        labels[arch] = models.label
        for n in (1, 4):
            calls[f"{arch} policy n={n}"] = (lambda p=policy, n=n: batched(p, batch, n, temperature, max_tokens))
        calls[f"{arch} PRM 1 candidate"] = lambda s=scorer, b=prm_batch, g=singles: s.score(b, g)
        calls[f"{arch} PRM {prm_candidates} candidates"] = lambda s=scorer, b=prm_batch, g=groups: s.score(b, g)
    trial = alternate(calls, pairs=pairs, warmup=1)
    archs = list(pairs_by_arch)
    reference = archs[-1]
    rows, goals = [], []
    for arch in archs:
        n1, n4 = trial.median(f"{arch} policy n=1"), trial.median(f"{arch} policy n=4")
        one, many = trial.median(f"{arch} PRM 1 candidate"), trial.median(f"{arch} PRM {prm_candidates} candidates")
        rows.append([labels[arch], seconds(n1), seconds(n4), ratio(n4 / n1), seconds(one), seconds(many),
                     ratio(many / one),
                     ratio(n1 / trial.median(f"{reference} policy n=1")),
                     ratio(one / trial.median(f"{reference} PRM 1 candidate"))])
        goals.append(Goal(text=f"{arch}: HFPolicy n=4 costs <= 1.5x n=1", measured=n4 / n1, limit=1.5,
                          met=n4 / n1 <= 1.5,
                          why_missed="the n rows decode together; at this width each decoded token costs about "
                                     "as much as a prefill token, so n=4 decodes 4x the tokens of n=1"))
        goals.append(Goal(text=f"{arch}: {prm_candidates} PRM candidates cost <= 1.5x one (shared context)",
                          measured=many / one, limit=1.5, met=many / one <= 1.5,
                          why_missed="as in figure 2: the candidate tokens attend over the whole cached context"))
    notes = [
        "All paths of both architectures alternated in each round (A B C D, A B C D, ...): the cross-architecture "
        "columns are ratios of medians of interleaved runs.",
        "On CPU, Qwen3.5's gated delta-net layers run transformers' reference PyTorch kernels (chunked delta rule "
        "for the prefill, a recurrent step per decoded token, a depthwise causal convolution); on CUDA the `gpu` "
        "extra installs `flash-linear-attention` and `causal-conv1d`, which replace them.",
    ]
    return Figure(
        key="architectures", title="1b. Figures 1 and 2 on Qwen3.5 (the card's architecture) and on Qwen3",
        setup=(f"Policy: {contexts} game contexts, up to {max_tokens} new tokens, temperature {temperature}. PRM: "
               f"{prm_contexts} conversations of ~{prm_context_tokens} tokens with {prm_candidates} candidates of "
               f"~{prm_candidate_tokens} tokens. Models: " + "; ".join(labels[a] for a in archs) +
               f". {pairs} alternated rounds; times are medians."),
        header=["model", "policy n=1 s", "policy n=4 s", "n=4 / n=1", "PRM 1 s", f"PRM {prm_candidates} s",
                f"{prm_candidates} / 1", f"policy n=1 x {reference}", f"PRM 1 x {reference}"],
        rows=rows, raw=trial.times, goals=goals, notes=notes, seconds=time.perf_counter() - started,
    )
