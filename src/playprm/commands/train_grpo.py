"""``playprm train-grpo``: online RL of a policy on the games' own reward (TRL GRPOTrainer, playprm's rollout)."""

from __future__ import annotations

import sys
from pathlib import Path

from playprm.train.recipe import add_run_arguments, true_or_false

# train-grpo's own settings and the GRPOConfig fields a run usually sets, declared so that --help lists them
# (every other TrainingArguments / GRPOConfig field is still taken as --field-name VALUE); all default to the
# recipe's value, else GRPOTrainingConfig's
OPTIONS = [
    ("--reward", str, "main-score | success: what an episode earns its players (default main-score: clemcore's Main "
                      "Score / 100, 0 for an episode the game aborted)"),
    ("--advantage", str, "episode | tree: GRPO's advantage per episode against its group (default), or step groups "
                         "of sibling replies to one state from a rollout tree (GiGPO-style)"),
    ("--branch-factor", int, "--advantage tree: copies a state is forked into at a trained turn (default: all "
                             "--num-generations at the first)"),
    ("--prm-path", str, "a train-prm folder of the policy's tokenizer: its values shape each reply's advantage as "
                        "potentials (--advantage episode)"),
    ("--prm-lambda", float, "--prm-path: λ of each reply's λ-return of the shaped rewards, in [0, 1] (default 1: the "
                            "outcome against the PRM's value of the state the reply answered)"),
    ("--num-generations", int, "rows of one instance in a group (default 4, at least 2): episodes, or with "
                               "--self-play true episodes x players"),
    ("--self-play", true_or_false, "true: one episode trains every player the policy plays, each player's rows a "
                                   "group of their own (half the episodes of a two-player game for the same rows)"),
    ("--temperature", float, "the rollout's sampling temperature, which the loss scores too (default 0.5, the small "
                             "preset's measured setting; no top-k, top-p or repetition penalty)"),
    ("--max-tokens", int, "tokens per reply (eval's --max-tokens)"),
    ("--rollout-batch-size", int, "episodes in flight in one rollout (default 64)"),
    ("--max-failed-share", float, "share of a rollout's episodes that may fail before the run stops, in [0, 1] "
                                  "(default 0: any failed episode stops it, in one line naming its game, player and "
                                  "cause); failed episodes get no reward and train nothing"),
    ("--shared-prefix", true_or_false, "true (default): the update runs the prompt prefix a micro-batch's rows share "
                                       "once, with TRL's values and gradients (attention-only models, no dropout); "
                                       "false: TRL's path, every row in full"),
    ("--disable-dropout", true_or_false, "default true (TRL's: false): no dropout in the update, as in the rollout's "
                                         "sampling"),
    ("--effective-batch-size", int, "player rows per optimizer step, --num-generations per group (default 16)"),
    ("--learning-rate", float, "default 1e-5 (a LoRA adapter)"),
    ("--beta", float, "KL coefficient against the starting policy (default 0: no reference model)"),
    ("--max-steps", int, "optimizer steps, one rollout each"),
    ("--seed", int, "the run's seed (rollouts and training)"),
]


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "train-grpo",
        help="train a policy by GRPO on its own episodes of the games (writes adapter or model + "
             "model_registry.json)",
        description="GRPO (TRL GRPOTrainer): each instance of the games is played --num-generations times by the "
                    "policy being trained (every player), each player's side rewarded by the episode's outcome "
                    "(--reward main-score | success) against its group. --model: a train-sft adapter folder "
                    "(trained further), or a model folder (a new LoRA adapter, or every weight with --full-weights "
                    "true). Besides the options below, any TrainingArguments / GRPOConfig field (--loss-type, "
                    "--scale-rewards, --lr-scheduler-type, --save-steps, ...) and the LoRA fields (--lora-r, "
                    "--lora-alpha, --full-weights, --load-in-4bit, ...) can be set as --field-name VALUE. One "
                    "process only (no torchrun). See docs/training.md.",
        allow_abbrev=False,
    )
    add_run_arguments(parser, data_help=None, recipe_example="recipes/tiny/grpo.yaml",
                      model_help="the starting policy: a train-sft output folder (its adapter trained further), or a "
                                 "model folder, model_registry.json name or .gguf file (a new LoRA adapter, or every "
                                 "weight with --full-weights true)")
    parser.add_argument("--game", "-g", dest="game", action="extend", nargs="+", metavar="NAME|SPEC",
                        help="games to play (repeatable; -g A B as in eval and clem run); default: every game of "
                             "--games-dir, or every built-in game")
    parser.add_argument("--games-dir", type=Path, help="folder of game folders (playprm instances --out)")
    parser.add_argument("--limit", type=int, help="instances per experiment (the first ones)")
    for flag, kind, text in OPTIONS:
        parser.add_argument(flag, type=kind, help=text)
    parser.set_defaults(func=run)


def run(args) -> int:
    from playprm.train.base_model import resolve_start_policy
    from playprm.train.grpo import train_grpo
    from playprm.train.grpo_config import GRPOTrainingConfig
    from playprm.train.grpo_rollout import RolloutError
    from playprm.train.recipe import prepare_run
    from playprm.transformers_runtime import choose_cpu_threads

    explicit = {"game": args.game, "games_dir": str(args.games_dir) if args.games_dir else None,
                "limit": args.limit, **{flag[2:].replace("-", "_"): getattr(args, flag[2:].replace("-", "_"))
                                        for flag, _, _ in OPTIONS}}
    config, start, _ = prepare_run(args, GRPOTrainingConfig, explicit, resolve=resolve_start_policy,
                                   needed=("model",))
    choose_cpu_threads(start.base.model_id)  # once per run, by the base's size, before it loads
    try:
        metrics = train_grpo(config, start, resume=args.resume)
    except RolloutError as error:  # a rollout it cannot train on: its checkpoints so far stay, --resume goes on
        print(f"playprm train-grpo: stopped: {error}", file=sys.stderr)
        return 1
    if config.process_index == 0:
        what = "model" if config.full_weights else "adapter"
        first, last = metrics["first_reward"], metrics["last_reward"]
        rewards = f"mean reward {first:.3f} at the first step, {last:.3f} at the last" if first is not None else \
            "no reward logged"
        print(f"wrote the {what}, model_registry.json and metrics.json to {config.output_dir}: {rewards}, "
              f"{metrics['global_step']} steps, {metrics['episodes_played']} episodes played")
    return 0
