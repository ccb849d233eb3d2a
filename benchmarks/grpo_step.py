"""The cost of a train-grpo step for the same trained player rows, as issue 53 found it against train-grpo now.

"before": GRPO's episode rows (one episode per (instance, player) row), TRL's update over every row in full
(``--shared-prefix false``), LoRA dropout on (``--disable-dropout false``), and the rollout's prefill as it was (every
position through the vocabulary head, every prompt encoded from scratch: ``as_before``). "now": train-grpo's
defaults with ``--self-play true`` (one episode gives a row for each player), the update running each micro-batch's
shared prompt prefix once, the rollout encoding a prefix its episodes share once.

Usage: python benchmarks/grpo_step.py POLICY GAMES_DIR [--game referencegame] [--rows 16] [--generations 4]
       [--micro-batch 4] [--steps 2] [--rounds 2] [--threads 2] [--max-tokens 56]

POLICY: a train-sft output folder (e.g. ``runs/smol_s0/sft-policy`` of ``pipeline --preset smol``); GAMES_DIR: its
training instances (``runs/smol_s0/splits/train``). Each round runs train-grpo for ``--steps`` steps in each mode,
alternated A B A B in one process, at the smol preset's settings (its GRPO temperature,
``SmolPreset.grpo_temperature``, lr 5e-5, ``--rows`` player
rows a step, ``--generations`` episodes of an instance a group, updated ``--micro-batch`` rows at a time); a callback times every optimizer step (the
rollout and the update). Prints each mode's step seconds, the episodes a step plays and the ratio of the medians.
"""

import argparse
import contextlib
import statistics
import tempfile
import time
from pathlib import Path

import torch
from transformers import TrainerCallback

from playprm.pipeline.smol import SmolPreset
from playprm.train.base_model import resolve_start_policy
from playprm.train.grpo import train_grpo
from playprm.train.grpo_config import GRPOTrainingConfig
from playprm.train.recipe import build_config


@contextlib.contextmanager
def as_before():
    """The rollout's prefill before issue 53's changes: every position through the vocabulary head, and no prefix
    shared between the prompts of one call (prompts are still encoded one call per length group)."""
    from playprm.models import prefix_cache

    saved = prefix_cache.last_logits_kwargs, prefix_cache.SHARED_PREFIX_TOKENS
    prefix_cache.last_logits_kwargs = lambda model: {}
    prefix_cache.SHARED_PREFIX_TOKENS = 1 << 30
    try:
        yield
    finally:
        prefix_cache.last_logits_kwargs, prefix_cache.SHARED_PREFIX_TOKENS = saved


class StepTimer(TrainerCallback):
    def __init__(self):
        self.seconds, self.start = [], None

    def on_step_begin(self, args, state, control, **kwargs):
        self.start = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        self.seconds.append(time.perf_counter() - self.start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("policy")
    parser.add_argument("games_dir")
    parser.add_argument("--game", default="referencegame")
    parser.add_argument("--players", type=int, default=2)
    parser.add_argument("--rows", type=int, default=16)
    parser.add_argument("--micro-batch", type=int, default=4)
    parser.add_argument("--generations", type=int, default=4)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--max-tokens", type=int, default=56)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    modes = {"before": {"num_generations": args.generations, "shared_prefix": False, "disable_dropout": False},
             "now": {"num_generations": args.generations * args.players, "self_play": True}}
    seconds: dict[str, list[float]] = {name: [] for name in modes}
    with tempfile.TemporaryDirectory() as scratch:
        for round_ in range(args.rounds):
            for name, settings in modes.items():
                timer = StepTimer()
                config = build_config(GRPOTrainingConfig, {
                    "game": [args.game], "games_dir": args.games_dir, "max_steps": args.steps,
                    "effective_batch_size": args.rows, "per_device_train_batch_size": args.micro_batch,
                    "learning_rate": 5e-5, "temperature": SmolPreset.grpo_temperature, "max_tokens": args.max_tokens,
                    "save_strategy": "no",
                    "lr_scheduler_type": "constant", "warmup_steps": 0, "disable_tqdm": True, "seed": round_,
                    "output_dir": str(Path(scratch) / f"{round_}-{name}"), **settings})
                with as_before() if name == "before" else contextlib.nullcontext():
                    train_grpo(config, resolve_start_policy(args.policy), callbacks=[timer],
                               announce=lambda text: None)
                seconds[name] += timer.seconds
                print(f"round {round_ + 1}, {name}: " + ", ".join(f"{s:.1f}" for s in timer.seconds) + " s a step",
                      flush=True)
    for name, values in seconds.items():
        episodes = args.rows // (args.players if "self_play" in modes[name] else 1)
        print(f"{name}: median {statistics.median(values):.1f} s a step of {args.rows} player rows, "
              f"{episodes} episodes")
    ratio = statistics.median(seconds["now"]) / statistics.median(seconds["before"])
    print(f"now / before: {ratio:.2f}x a step for the same trained rows")


if __name__ == "__main__":
    main()
