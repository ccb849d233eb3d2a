"""The configuration of ``train-grpo``: TRL's ``GRPOConfig`` with the model card's LoRA fields, the games to play
and the reward."""

from dataclasses import dataclass

from trl import GRPOConfig

from playprm.play.config import EvalConfig, field_defaults
from playprm.train.grpo_rollout import REWARDS
from playprm.train.qlora import ModelCardArguments, resolve_device_defaults

ADVANTAGES = ("episode", "tree")  # GRPO's own (one per row); GiGPO-style step groups from a rollout tree


@dataclass
class GRPOTrainingConfig(ModelCardArguments, GRPOConfig):
    """Every ``GRPOConfig`` / ``TrainingArguments`` field (``num_generations``, ``beta``, ``loss_type``,
    ``temperature``, ``scale_rewards``, ``mask_truncated_completions``, ...), with the defaults and extra fields of
    ``ModelCardArguments`` (the card's LoRA, ...), and:

    Parameters:
        game: the games whose instances are played (as eval's ``--game``); none: every game of ``games_dir``.
        games_dir: a folder of game folders (``playprm instances --out``); none: the built-in games.
        limit: instances per experiment (the first ones, as eval's ``--limit``).
        reward: what a player's episode earns: ``main-score`` (clemcore's Main Score / 100; 0 for an aborted
            or errored episode) or ``success`` (1 for a won episode, else 0).
        advantage: ``episode`` (GRPO's own: the episode reward against the group's G episodes of one instance)
            or ``tree`` (the group's G episodes are one tree, forked at the trained player's turns; each reply's
            advantage is its subtree's mean reward against its siblings', the replies to the identical state).
        branch_factor: ``tree`` only: copies a state is forked into at a trained turn while the group's G leaves
            last (none: all G at the first trained turn, so the group shares that state).
        prm_path: a PRM folder (train-prm; a PRM of the policy's own tokenizer): its values of the policy's
            replies shape the reward turn by turn as potentials (``grpo_rollout.shaped_advantages``), each reply
            trained with its own advantage. ``episode`` advantage only.
        prm_lambda: ``prm_path`` only: λ of the replies' λ-returns of the shaped rewards, in [0, 1]. 1 (the
            default): the outcome against the PRM's value of the state a reply answered (unbiased); 0: each
            reply's change of the PRM's value alone (dense, as right as the PRM).
        self_play: every player of an episode is trained on it (the policy plays them all): a dataset row is an
            instance, and a group of ``num_generations`` rows is ``num_generations / players`` episodes, each giving
            one row per player; each player's rows are a GRPO group of their own. On a two-player game half the
            episodes of the default for the same trained rows. ``episode`` advantage, no ``prm_path``.
        max_tokens: tokens per reply (eval's ``--max-tokens``; TRL's ``max_completion_length`` is not applied to
            a rollout).
        rollout_batch_size: episodes in flight in one rollout (one generation call per turn for all of them).
        max_failed_share: the share of a rollout's episodes that may fail (a generation that failed twice, a game
            master that raised) before the run stops, in [0, 1]; default 0: any failed episode stops the run with
            one line naming its game, player and cause. Failed episodes below the threshold get no reward and
            train nothing; each step logs their count (``failed_episodes``).
        num_generations: G, the episodes of one instance in a group (TRL's default 8; at least 2).
        learning_rate: 1e-5 (TRL's GRPO default, 1e-6, is for full weights of large models; a LoRA update needs
            more). The small preset's full-weight policies take the rate their measurement chose.
        effective_batch_size: 16 rows (player sides of episodes) per optimizer step, 4 groups of 4 (with
            ``per_device_train_batch_size`` 8); one rollout serves one optimizer step.
        activation_checkpointing: on with CUDA, off on CPU (it only costs time at the sizes a CPU trains).
        shared_prefix: the update runs the prompt prefix a micro-batch's rows share once and each row's rest on
            top of it (``train.shared_prefix``: the same values and gradients as TRL's path, which runs every row in
            full; attention-only models with rotary positions, without dropout), rows ordered by prompt so that
            micro-batches share more.
            false: TRL's path.
        disable_dropout: true (TRL's default is false): the rollout samples with the model in eval mode, without
            dropout, so the loss scores the distribution the replies came from; and the update runs the rows'
            shared prompt prefix once (``train.shared_prefix``), which one dropout mask for all rows would not allow.

    No validation split: ``eval_strategy`` "no", no best checkpoint, no early stopping; ``logging_steps`` 1 (a
    step is a whole rollout). ``beta`` 0 (TRL's default: no reference model).

    The rollout samples from softmax(logits / ``temperature``), the distribution TRL's loss scores; the sampling
    settings it could not match in both places (``top_p``, ``top_k``, ``min_p``, ``repetition_penalty``,
    ``generation_kwargs``) and ``use_vllm`` (playprm's sampler plays the episodes) are refused, and so is a
    launch of several processes (``WORLD_SIZE`` > 1: the rollout is one process's).
    """

    game: list[str] | None = None
    games_dir: str | None = None
    limit: int | None = None
    reward: str = "main-score"
    advantage: str = "episode"
    branch_factor: int | None = None
    prm_path: str | None = None
    prm_lambda: float = 1.0
    self_play: bool = False
    max_tokens: int = field_defaults(EvalConfig)["max_tokens"]
    rollout_batch_size: int = 64
    max_failed_share: float = 0.0

    num_generations: int | None = 4
    # not TRL's 1.0: on the small preset's weaker policy 1.0 lost −5.03 to its greedy and 0.5 gained +2.01, 0.5 − 1.0
    # +7.05 [+2.68, +12.08] on 298 held-out games (BENCHMARKS.md, runs a and d of the GRPO settings table)
    temperature: float = 0.5
    learning_rate: float = 1e-5
    effective_batch_size: int | None = 16
    per_device_train_batch_size: int = 8
    activation_checkpointing: bool | None = None
    shared_prefix: bool = True
    disable_dropout: bool = True
    eval_strategy: str = "no"
    load_best_model_at_end: bool = False
    early_stopping_patience: int | None = 0
    logging_steps: float = 1

    def __post_init__(self):
        import os

        import torch

        processes = os.environ.get("WORLD_SIZE", "1")
        if processes.isdigit() and int(processes) > 1:
            raise ValueError(f"train-grpo runs in one process (this launch has WORLD_SIZE={processes}): its rollout "
                             "folder and groups are one process's; run it with python or playprm, not torchrun or "
                             "accelerate launch")
        refused = {"top_p": 1.0, "top_k": 0, "min_p": None, "repetition_penalty": 1.0, "generation_kwargs": None}
        for name, default in refused.items():
            value = getattr(self, name)
            if value != default and not (name == "top_k" and value is None):
                raise ValueError(f"--{name.replace('_', '-')} {value}: train-grpo's rollout samples from softmax(logits"
                                 " / --temperature), the distribution TRL's loss scores; other sampling settings "
                                 "would make the two differ. Leave it out (set --temperature only)")
        if self.use_vllm:
            raise ValueError("--use-vllm true: train-grpo's rollout plays the episodes with playprm's own sampler, "
                             "which vLLM cannot replace; leave --use-vllm out")
        if self.reward not in REWARDS:
            raise ValueError(f"--reward {self.reward} is not one of {', '.join(REWARDS)}")
        if self.advantage not in ADVANTAGES:
            raise ValueError(f"--advantage {self.advantage} is not one of {', '.join(ADVANTAGES)}")
        if self.num_generations is None or self.num_generations < 2:
            raise ValueError(f"--num-generations {self.num_generations}: GRPO needs at least 2 episodes of an "
                             "instance per group (a reply's advantage is its reward against the group's)")
        for name in ("max_tokens", "rollout_batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"--{name.replace('_', '-')} must be at least 1, not {getattr(self, name)}")
        if self.branch_factor is not None and (self.branch_factor < 2 or self.advantage != "tree"):
            raise ValueError(f"--branch-factor {self.branch_factor}: give at least 2, with --advantage tree")
        if self.prm_path is not None and self.advantage != "episode":
            raise ValueError(f"--prm-path shapes the episode advantage; it does not combine with --advantage "
                             f"{self.advantage}")
        if self.self_play and (self.advantage != "episode" or self.prm_path is not None):
            raise ValueError("--self-play true trains every player on GRPO's episode advantage; it does not combine "
                             "with --advantage tree or --prm-path")
        if not 0.0 <= self.prm_lambda <= 1.0:
            raise ValueError(f"--prm-lambda must be in [0, 1], not {self.prm_lambda}")
        if not 0.0 <= self.max_failed_share <= 1.0:
            raise ValueError(f"--max-failed-share must be in [0, 1], not {self.max_failed_share}")
        if self.limit is not None and self.limit < 1:
            raise ValueError(f"--limit must be at least 1, not {self.limit}")
        if self.activation_checkpointing is None:
            self.activation_checkpointing = torch.cuda.is_available()
        resolve_device_defaults(self)
        super().__post_init__()
