"""TRL's fused LM head on CPU: score only the positions whose next token is labelled, as TRL does on CUDA.

TRL's trainers (SFT, DPO, GRPO) replace the LM head's logits by ``add_fused_lm_head``: per-token log-probabilities
computed tile by tile over the vocabulary. On CUDA and XPU it projects only the labelled positions (``compact``);
everywhere else it projects every position, prompt and padding included, and masks them afterwards, because on
Neuron a varying count of positions would recompile the kernel on every batch (trl/trainer/utils.py). A CPU
recompiles nothing, and there the tiles run as a dozen plain torch passes over (positions x vocabulary) floats in
the forward and again in the backward: on SmolLM2-135M's SFT (conversations whose replies are a small share of
their tokens, 49k vocabulary) that head took about 45 % of a train-sft step (py-spy, 8 steps, 2026-12-06), most of
it on positions whose label is -100. Written here because TRL has no switch for it.

``score_labelled_positions_only()`` makes the CPU take TRL's own compact path (``hidden_states[mask]`` in, the
results scattered back by ``masked_scatter``: the same per-token values, the same loss and gradients; tested in
tests/test_fused_head.py). Measured side by side: benchmarks/sft_step.py.
"""

from __future__ import annotations


def score_labelled_positions_only() -> None:
    """Let TRL's fused LM head project only the labelled positions on CPU too (idempotent; CUDA unchanged)."""
    from trl.trainer import utils

    if getattr(utils._use_triton, "playprm_compact", False):
        return
    original = utils._use_triton  # utils' own binding decides ``compact`` alone; the kernels keep theirs

    def compact(device) -> bool:
        return device.type == "cpu" or original(device)

    compact.playprm_compact = True
    compact.original = original
    utils._use_triton = compact
