"""``playprm train-grpo``: online RL of a policy on the games' own reward (TRL GRPOTrainer, playprm's rollout)."""

from __future__ import annotations

from pathlib import Path

from playprm.train.recipe import add_run_arguments


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "train-grpo",
        help="train a policy by GRPO on its own episodes of the games (writes adapter or model + "
             "model_registry.json)",
        description="GRPO (TRL GRPOTrainer): each instance of the games is played --num-generations times by the "
                    "policy being trained (every player), each player's side rewarded by the episode's outcome "
                    "(--reward main-score | success) against its group. --model: a train-sft adapter folder "
                    "(trained further), or a model folder (a new LoRA adapter, or every weight with --full-weights "
                    "true). Any TrainingArguments / GRPOConfig field (--num-generations, --beta, --temperature, "
                    "--max-steps, --learning-rate, ...), the LoRA fields and --max-tokens can be set as "
                    "--field-name VALUE. See docs/training.md.",
        allow_abbrev=False,
    )
    add_run_arguments(parser, data_help=None, recipe_example="recipes/tiny/grpo.yaml")
    parser.add_argument("--game", action="append", help="a game to play (repeatable); default: every game of "
                                                       "--games-dir, or every built-in game")
    parser.add_argument("--games-dir", type=Path, help="folder of game folders (playprm instances --out)")
    parser.add_argument("--limit", type=int, help="instances per experiment (the first ones)")
    parser.set_defaults(func=run)


def run(args) -> int:
    from playprm.train.base_model import resolve_start_policy
    from playprm.train.grpo import train_grpo
    from playprm.train.grpo_config import GRPOTrainingConfig
    from playprm.train.recipe import prepare_run
    from playprm.transformers_runtime import choose_cpu_threads

    explicit = {"game": args.game, "games_dir": str(args.games_dir) if args.games_dir else None,
                "limit": args.limit}
    config, start, _ = prepare_run(args, GRPOTrainingConfig, "train-grpo", explicit, resolve=resolve_start_policy,
                                   needed=("model",))
    choose_cpu_threads(start.base.model_id)  # once per run, by the base's size, before it loads
    metrics = train_grpo(config, start, resume=args.resume)
    if config.process_index == 0:
        what = "model" if config.full_weights else "adapter"
        first, last = metrics["first_reward"], metrics["last_reward"]
        rewards = f"mean reward {first:.3f} at the first step, {last:.3f} at the last" if first is not None else \
            "no reward logged"
        print(f"wrote the {what}, model_registry.json and metrics.json to {config.output_dir}: {rewards}, "
              f"{metrics['global_step']} steps, {metrics['episodes_played']} episodes played")
    return 0
