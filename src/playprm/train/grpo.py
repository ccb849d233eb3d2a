"""Online reinforcement learning of the policy on the games' own reward (TRL's ``GRPOTrainer`` with a
``rollout_func``).

The dataset is one row per (game instance, player) of the selected games; TRL repeats each row G
(``num_generations``) times, and the rollout (``train.grpo_rollout``) plays G episodes of that instance with the
model being trained, every player the policy, through playprm's runner. A row's completion is its player's side
of the episode, the game's text masked out by ``env_mask``; its reward is the episode's outcome (``--reward``).

The starting policy is resolved as train-dpo resolves it (``train.base_model.resolve_start_policy``): a train-sft
adapter folder is trained further, a model folder gets a new LoRA adapter, or with ``--full-weights true`` every
weight is trained. The run's last rollout stays in ``<output-dir>/rollouts`` for inspection.
"""

from __future__ import annotations

import re
from pathlib import Path

from playprm.errors import UsageError
from playprm.train.base_model import StartPolicy, check_start_policy, load_start_policy
from playprm.train.run_dir import (
    checkpoint_to_resume,
    print_logs_as_numbers,
    run_summary,
    save_policy_run,
    training_callbacks,
)

ROLLOUTS_FOLDER = "rollouts"  # the last rollout's episodes, clemcore's layout (replaced at every rollout)


def select_rows(config):
    """The games' entries and one ``RowSpec`` per (instance, player), checked against the batch; no model."""
    from playprm.play.job import prepare_games
    from playprm.train.grpo_rollout import players_of, row_specs

    entries, instances = prepare_games(list(config.game or []), not config.game,
                                       Path(config.games_dir) if config.games_dir else None, config.limit)
    rows = row_specs(entries, instances, self_play=config.self_play)
    if config.self_play:
        counts = {entry.name: players_of(entry) for entry in entries}
        if len(set(counts.values())) > 1:
            raise UsageError(f"--self-play true trains games of one player count at a time; these differ: "
                             f"{', '.join(f'{g} {n}' for g, n in sorted(counts.items()))}; choose them with --game")
        players = next(iter(counts.values()), 1)
        if config.num_generations % players:
            raise UsageError(f"--self-play true: a group of --num-generations {config.num_generations} rows must be "
                             f"whole episodes of {players} players each; give a multiple of {players}")
    groups = config.generation_batch_size // config.num_generations
    if groups > len(rows):
        raise UsageError(f"a rollout plays {groups} instances x {config.num_generations} episodes "
                         f"(--effective-batch-size {config.generation_batch_size} / --num-generations "
                         f"{config.num_generations}), more than the {len(rows)} (instance, player) rows of the games; "
                         "lower --effective-batch-size or raise --limit")
    return entries, rows


def players_per_episode(config, entries) -> int:
    """Trained rows one episode gives: its players under --self-play (one count, ``select_rows`` checked), else 1."""
    from playprm.train.grpo_rollout import players_of

    return max(players_of(entry) for entry in entries) if config.self_play else 1


def check_prm(prm_path: str | None, tokenizer) -> None:
    """``--prm-path``: a PRM folder whose tokenizer is the policy's; UsageError otherwise, before any model loads.

    A PRM reads the replies as its own tokenizer splits them. One of another tokenizer was trained on another
    model family's replies (or it is another run's folder, given by mistake), and its values of this policy's
    text were never measured; playprm's PRMs are trained on the policy's own backbone (train-prm --model)."""
    if prm_path is None:
        return
    from transformers import AutoTokenizer

    from playprm.prm.model import read_prm_config

    read_prm_config(prm_path)
    try:
        theirs = AutoTokenizer.from_pretrained(prm_path)
    except (OSError, ValueError) as error:
        raise UsageError(f"--prm-path {prm_path}: its tokenizer does not load ({str(error).splitlines()[0]}); "
                         "give a folder written by train-prm") from None
    if theirs.get_vocab() != tokenizer.get_vocab():
        raise UsageError(f"--prm-path {prm_path}: its tokenizer ({len(theirs)} tokens) is not the policy's "
                         f"({len(tokenizer)} tokens); give a PRM trained on the policy's model (train-prm --model)")


def rollout_function(config, rows, entries, tokenizer, template_kwargs, base, announce=print):
    """``rollout_func(prompts, trainer)`` for TRL: plays the rows named by ``prompts`` with the trainer's
    current model (no gradient, eval mode) and returns their token rows (``grpo_rollout.play_groups``); with
    ``config.prm_path``, the PRM's values shape each reply's advantage (``grpo_rollout.Shaping``)."""
    from playprm.models.base import PolicySpec
    from playprm.models.hf import HFPolicy
    from playprm.play.job import load_benchmarks
    from playprm.train.grpo_rollout import (
        RolloutSettings,
        Shaping,
        TokenChain,
        play_groups,
        play_trees,
    )

    by_key = {row.key: row for row in rows}
    players = players_per_episode(config, entries)
    benchmarks, broken = load_benchmarks(entries)
    if broken:
        game, error = next(iter(broken.items()))
        raise UsageError(f"game {game} failed to load ({error}); fix it or leave it out with --game")
    chain = TokenChain(tokenizer, template_kwargs)
    settings = RolloutSettings(temperature=config.temperature, max_tokens=config.max_tokens, reward=config.reward,
                               batch_size=config.rollout_batch_size, max_failed_share=config.max_failed_share)
    spec = PolicySpec(name="policy", backend="hf", model_id=base.model_id, chat_template_kwargs=template_kwargs)
    results_dir = Path(config.output_dir) / ROLLOUTS_FOLDER
    shaping = None
    if config.prm_path:
        from playprm.prm.scorer import PRMScorer

        # each rollout's episodes are new: no context state to carry from one scoring call to the next
        scorer = PRMScorer.from_path(config.prm_path)
        scorer.prefix_store = None
        shaping = Shaping(scorer, lam=config.prm_lambda, scale_rewards=config.scale_rewards)

    def rollout(prompts, trainer):
        model = trainer.accelerator.unwrap_model(trainer.model)
        was_training = model.training
        model.eval()  # no dropout while sampling, and the KV cache (activation checkpointing turns it off)
        try:
            policy = HFPolicy(spec, model=model, tokenizer=tokenizer)  # a fresh prefix cache: the weights moved
            specs, seed = [by_key[prompt] for prompt in prompts], config.seed * 1_000_003 + trainer.state.global_step
            if config.advantage == "tree":
                return play_trees(specs, policy, chain, settings, results_dir, benchmarks, seed=seed,
                                  group_size=config.num_generations,
                                  branch_factor=config.branch_factor or config.num_generations)
            return play_groups(specs, policy, chain, settings, results_dir, benchmarks, seed=seed, shaping=shaping,
                               group_size=config.num_generations, players=players,
                               scale_rewards=config.scale_rewards)
        finally:
            model.train(was_training)

    return rollout


NONE_REWARD_WARNING = "All reward functions returned None"
RANK_PREFIX = re.compile(r"\[RANK \d+\] ")  # accelerate's logger adapter, which TRL logs through, puts it first


def quiet_expected_none_rewards() -> None:
    """Drop TRL's warning, with its dump of the row's inputs, for rows whose reward is None: here a row without a
    reward is one that trains nothing by design (a tree's placeholder past an episode that ended early, a failed
    episode's row, counted each step as ``failed_episodes``), never a reward function that broke. Idempotent."""
    import logging

    trl_logger = logging.getLogger("trl.trainer.grpo_trainer")
    if not any(getattr(f, "playprm_none_rewards", False) for f in trl_logger.filters):
        class ExpectedNoneRewards(logging.Filter):
            playprm_none_rewards = True

            def filter(self, record):
                return not RANK_PREFIX.sub("", record.getMessage(), count=1).startswith(NONE_REWARD_WARNING)

        trl_logger.addFilter(ExpectedNoneRewards())


def token_advantage_trainer(trainer_class):
    """``trainer_class`` (TRL's ``GRPOTrainer``) taking per-token advantages from the rollout (``--advantage
    tree``, ``--prm-path``). TRL computes one advantage per row, shape (B,), from the row rewards; a tree gives each reply its
    own (the subtree's against its siblings'), so the rows' ``token_advantages`` replace it as (B, T), which
    TRL's loss accepts from subclasses."""
    import torch

    class TokenAdvantageTrainer(trainer_class):
        def _generate_and_score_completions(self, inputs):
            output = super()._generate_and_score_completions(inputs)
            # TRL copies the rollout's extra keys into this process's inputs, row by row
            length = output["completion_ids"].shape[1]
            advantages = torch.zeros((len(inputs), length), device=output["completion_ids"].device)
            for row, values in enumerate(example["token_advantages"] for example in inputs):
                advantages[row, :len(values)] = torch.tensor(values[:length], dtype=advantages.dtype)
            output["advantages"] = advantages
            return output

    return TokenAdvantageTrainer


def zero_advantage_steps_skipped(trainer_class):
    """``trainer_class`` (TRL's ``GRPOTrainer`` or a subclass) whose optimizer skips a step in which every row's
    advantage is 0 and the loss has no other term (no KL to a reference, ``beta`` 0; no entropy bonus; no MoE
    load-balancing loss): such a step has nothing to learn and a zero gradient, yet AdamW would move the weights by
    its momentum (and weight decay). The step still counts (``global_step`` and the scheduler advance); the weights
    and the optimizer's state stay as they were."""

    class ZeroAdvantageSkippingTrainer(trainer_class):
        _step_learns = False  # whether a micro-batch of the optimizer step under way has something to learn

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            advantages = inputs.get("advantages")
            other_terms = (self.beta != 0.0 or bool(getattr(self.args, "entropy_coef", 0.0))
                           or getattr(self.args, "use_adaptive_entropy", False)
                           or getattr(self, "aux_loss_enabled", False))
            self._step_learns = (self._step_learns or other_terms or advantages is None
                                 or bool(advantages.detach().ne(0).any()))
            return super().compute_loss(model, inputs, return_outputs=return_outputs,
                                        num_items_in_batch=num_items_in_batch)

        def create_optimizer(self, model=None):
            import types

            optimizer = super().create_optimizer(model)
            step, trainer = optimizer.step, self

            def step_if_anything_to_learn(optimizer, *args, **kwargs):
                learns, trainer._step_learns = trainer._step_learns, False
                return step(*args, **kwargs) if learns else None

            # a bound method, as torch's LR schedulers expect to find (they wrap ``step.__func__``)
            optimizer.step = types.MethodType(step_if_anything_to_learn, optimizer)
            return optimizer

    return ZeroAdvantageSkippingTrainer


def train_grpo(config, start: StartPolicy, *, resume: bool = False, callbacks=(), announce=print) -> dict:
    """GRPO of the ``start`` policy on the games of ``config`` (a ``GRPOTrainingConfig``); returns the metrics
    written to ``config.output_dir`` beside the adapter or model, ``model_registry.json`` and the model card.
    ``resume`` continues from the last checkpoint there. Input problems raise UsageError before the model loads."""
    import os

    from datasets import Dataset
    from transformers import AutoModelForCausalLM
    from trl import GRPOTrainer

    from playprm.train.base_model import import_gguf_base
    from playprm.train.fused_head import score_labelled_positions_only
    from playprm.train.grpo_rollout import episode_reward
    from playprm.train.qlora import announce_cpu_fallback
    from playprm.train.sft import full_weight_trainer, load_tokenizer
    from playprm.train.shared_prefix import shared_prefix_trainer

    check_start_policy(start, config)
    output_dir = Path(config.output_dir)
    entries, rows = select_rows(config)
    checkpoint = checkpoint_to_resume(output_dir, resume)
    announce_cpu_fallback(config, "train-grpo", announce)
    base = import_gguf_base(start.base, config, announce)
    tokenizer = load_tokenizer(base)
    check_prm(config.prm_path, tokenizer)
    template_kwargs = base.template_kwargs(config.chat_template_kwargs)
    games = sorted({row.game for row in rows})
    if config.process_index == 0:
        announce(f"train-grpo: {len(rows)} (instance, player) rows of {', '.join(games)}; each played "
                 f"{config.num_generations} times per group, {config.generation_batch_size // config.num_generations}"
                 f" groups per rollout; reward {config.reward}")

    model, peft_config = load_start_policy(AutoModelForCausalLM, base, start.adapter, config)
    score_labelled_positions_only()
    quiet_expected_none_rewards()
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # rollout_func is experimental in TRL 1.16: pinned <2
    per_token = config.advantage == "tree" or config.prm_path is not None or config.self_play
    trainer_class = zero_advantage_steps_skipped(token_advantage_trainer(GRPOTrainer) if per_token else GRPOTrainer)
    if config.shared_prefix:
        trainer_class = shared_prefix_trainer(trainer_class)
    trainer = (full_weight_trainer(trainer_class) if config.full_weights else trainer_class)(
        model=model,
        reward_funcs=episode_reward,
        args=config,
        train_dataset=Dataset.from_list([{"prompt": row.key} for row in rows]),
        processing_class=tokenizer,
        peft_config=peft_config,
        callbacks=training_callbacks(config, callbacks),
        rollout_func=rollout_function(config, rows, entries, tokenizer, template_kwargs, base, announce),
    )
    print_logs_as_numbers(trainer)
    result = trainer.train(resume_from_checkpoint=checkpoint)
    history = [entry for entry in trainer.state.log_history if "reward" in entry]
    metrics = {
        **run_summary(trainer, result),
        "first_reward": history[0]["reward"] if history else None,
        "last_reward": history[-1]["reward"] if history else None,
        # one row is one episode's player side (under --self-play, each of its players' sides is a row), used
        # num_iterations times
        "episodes_played": trainer.state.global_step * config.per_device_train_batch_size
        * config.gradient_accumulation_steps * config.world_size // config.num_iterations // players_per_episode(config, entries),
        "self_play": config.self_play,
        "rows": len(rows),
        "games": games,
        "reward": config.reward,
        "advantage": config.advantage,
        "branch_factor": config.branch_factor,
        "prm_path": str(Path(config.prm_path).resolve()) if config.prm_path else None,
        "prm_lambda": config.prm_lambda if config.prm_path else None,
        "num_generations": config.num_generations,
        "beta": config.beta,
        "start": str(start.adapter or base.model_id),
    }
    save_policy_run(trainer, config, base, tokenizer, template_kwargs, metrics,
                    data_dir=Path(config.games_dir) if config.games_dir else None, kind="grpo",
                    samples_per_game={game: {"train": sum(row.game == game for row in rows), "validation": 0}
                                      for game in games})
    return metrics
