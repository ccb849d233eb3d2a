"""GRPO's update without recomputing the prompt its rows share: the prefix runs once, its rows continue from it.

A GRPO step on a clembench game trains rows whose prompts are mostly the game's instructions: on the smol preset's
referencegame a row is about 300 prompt tokens and 28 completion tokens, and the four episodes of one instance give
the first player the same prompt four times and the second player the same instructions and grids. TRL runs every
row in full, forward and backward (``GRPOTrainer._get_per_token_logps_and_entropies``), so the update cost grows with
the prompts, not with what is trained. Here a micro-batch's longest common prefix runs once (batch 1, its keys and
values kept with their graph), each row's rest runs on top of it, and TRL's fused LM head scores the completion
tokens as it would have: the same per-token log-probabilities, entropies and gradients up to float rounding (the
prefix's gradient is the sum over its rows, as autograd sums it through the expanded cache; TRL's path gives a
left-padded row RoPE positions shifted by its padding, which attention does not see but rounding does), in fewer
operations. tests/test_shared_prefix.py
checks the values and gradients against TRL's path; benchmarks/grpo_step.py measures it. TRL has no such path.

Four conditions keep it exact, and TRL's own path runs where they fail: every layer is full attention
(attention-only models such as SmolLM2 and Qwen3; a linear-attention state, Qwen3.5's, or a sliding window is left
to TRL), positions are rotary (each row's positions start at 0 here and after its padding on TRL's path, which
rotary attention does not see; with learned absolute positions, GPT-2's, they are another input: 0.36 apart in
log-probability on issue 60's tiny GPT-2), activation checkpointing is off (its layers drop a passed cache;
train-grpo turns it on with CUDA), and no dropout is active (a prefix run once draws one dropout mask for all its
rows; ``--disable-dropout`` is the default of train-grpo). The trainer decides them once on the trained model as it
trains (``exact_on``), so that its update and its no-grad passes (old and reference log-probabilities, where TRL
turns checkpointing off and a reference model has no dropout) take one path: the ratio and the KL never compare
two position schemes. ``order_by_prompt`` puts rows with shared prompts into the same micro-batch, in place of TRL's
shuffle, where the order of the micro-batches of one optimizer step cannot change the step.
"""

from __future__ import annotations

import torch

from playprm.models.prefix_cache import common_prefix
from playprm.transformers_runtime import attention_only, cache_kwargs, output_cache, rotary_positions

# below this many shared tokens a second forward call costs more than it saves
MIN_SHARED_TOKENS = 16
# loss types whose step is a sum over micro-batches of one generation batch, each normalised by a quantity the order
# of the rows does not change (TRL's grpo_trainer: per-row means, or the generation batch's token count); bnpo
# divides by each micro-batch's own token count, and its step would change with the order
ORDER_FREE_LOSSES = {"grpo", "dr_grpo", "dapo", "cispo", "vespo", "sapo", "luspo"}


def order_by_prompt(batch: dict) -> dict:
    """``batch`` (TRL's generation batch: tensors and lists of one row each) with its rows sorted by their prompt
    tokens, so that the micro-batches TRL splits it into hold rows that share long prompt prefixes; the replacement
    for TRL's ``shuffle_sequence_dict`` where the order cannot change the step (``keeps_step``)."""
    prompts = [row[mask.bool()].tolist() for row, mask in zip(batch["prompt_ids"], batch["prompt_mask"])]
    order = sorted(range(len(prompts)), key=prompts.__getitem__)
    index = torch.tensor(order, dtype=torch.long)

    def permuted(value):
        if isinstance(value, torch.Tensor) and value.ndim > 0 and value.shape[0] == len(order):
            return value[index.to(value.device)]
        if isinstance(value, list) and len(value) == len(order):
            return [value[i] for i in order]
        return value
    return {key: permuted(value) for key, value in batch.items()}


def keeps_step(args, aux_loss: bool = False) -> bool:
    """Whether the rows of one generation batch can be reordered without changing the optimizer step: one
    generation batch is one step, each row used once, under a loss in ``ORDER_FREE_LOSSES``, and no term TRL takes
    per micro-batch (the entropy bonus's token mean, the high-entropy quantile mask, an MoE load-balancing loss:
    ``aux_loss``)."""
    return (args.steps_per_generation == args.gradient_accumulation_steps and args.num_iterations == 1
            and args.loss_type in ORDER_FREE_LOSSES and getattr(args, "top_entropy_quantile", 1.0) == 1.0
            and not getattr(args, "entropy_coef", 0.0) and not getattr(args, "use_adaptive_entropy", False)
            and not aux_loss)


def dropout_active(model, training: bool | None = None) -> bool:
    """Whether a training forward of ``model`` draws dropout: a ``Dropout`` module (LoRA's among them) or the
    attention's functional dropout (``config.attention_dropout``), which TRL's ``disable_dropout`` leaves alone.
    ``training``: whether the forward is in training mode (default: ``model``'s mode now)."""
    if not (model.training if training is None else training):
        return False
    config = getattr(model, "config", None)
    return (getattr(config, "attention_dropout", 0) or 0) > 0 or any(
        isinstance(m, torch.nn.Dropout) and m.p > 0 for m in model.modules())


def _checkpointing(model) -> bool:
    """Activation checkpointing: its layers drop the cache a training forward is handed (transformers forces
    ``use_cache=False`` there), so the rows could not continue the prefix; and the no-grad passes (old and
    reference log-probabilities) must take the path the training pass takes."""
    return any(getattr(module, "gradient_checkpointing", False) for module in model.modules())


def exact_on(model, *, checkpointing: bool = False, training: bool | None = None) -> bool:
    """Whether the shared prefix gives TRL's values on ``model``: full attention in every layer, rotary positions,
    no activation checkpointing (on ``model``, or ``checkpointing``: the run's setting, which TRL turns off for its
    no-grad passes) and no dropout drawn (``training``: in training mode; default: ``model``'s mode now)."""
    return (not dropout_active(model, training) and not checkpointing and not _checkpointing(model)
            and attention_only(model) and rotary_positions(model))


def _contiguous(attention_mask: torch.Tensor, completion_width: int) -> bool:
    """Every row is left-padded prompt then right-padded completion, without holes (TRL's rollout layout)."""
    prompt, completion = attention_mask[:, :-completion_width], attention_mask[:, -completion_width:]
    return bool((prompt.cummax(-1).values == prompt).all() and (completion.flip(-1).cummax(-1).values.flip(-1)
                                                                 == completion).all())


def _key_value_layers(cache) -> bool:
    layers = getattr(cache, "layers", None)
    return bool(layers) and all(type(layer).__name__ == "DynamicLayer" for layer in layers)


def shared_prefix_logps(model, input_ids: torch.Tensor, attention_mask: torch.Tensor, logits_to_keep: int,
                        autocast=None, exact: bool | None = None) -> tuple[torch.Tensor, torch.Tensor | None] | None:
    """The per-token log-probabilities and entropies of the last ``logits_to_keep`` columns of ``input_ids`` (TRL's
    layout: left-padded prompts, then right-padded completions), as ``model(..., labels=..., fused_lm_head=True)``
    gives them, with the rows' common prefix run once; zeros where a completion is padding. None where this path
    does not apply (too short a shared prefix, a cache that is not keys and values, a model it would not be exact
    on): the caller runs TRL's. ``autocast``: a callable giving the trainer's autocast context
    (``accelerator.autocast``); ``exact``: ``exact_on`` as the caller decided it for all passes of a step (default:
    decided on ``model`` now)."""
    if (input_ids.size(0) < 2 or not (exact_on(model) if exact is None else exact)
            or not _contiguous(attention_mask, logits_to_keep)):
        return None
    rows = [row[mask.bool()].tolist() for row, mask in zip(input_ids, attention_mask)]
    completion_mask = attention_mask[:, -logits_to_keep:]
    completion_lengths = completion_mask.sum(-1).tolist()
    prompt_lengths = [len(row) - length for row, length in zip(rows, completion_lengths)]
    # each row keeps its last prompt token in its own part: the hidden state there scores its first completion token
    shared = min(common_prefix(rows), min(prompt_lengths) - 1)
    if shared < MIN_SHARED_TOKENS:
        return None
    device = input_ids.device
    context = autocast or (lambda: torch.autocast(device.type, enabled=False))  # a fresh context for each call
    with context():
        prefix = model(input_ids=input_ids.new_tensor([rows[0][:shared]]), use_cache=True, logits_to_keep=1)
    cache = output_cache(prefix)
    if not _key_value_layers(cache):
        return None
    count = len(rows)
    for layer in cache.layers:  # one prefix for every row: autograd sums the rows' gradients into it
        layer.keys = layer.keys.expand(count, *layer.keys.shape[1:])
        layer.values = layer.values.expand(count, *layer.values.shape[1:])
    rests = [row[shared:] for row in rows]
    width = max(len(rest) for rest in rests)
    ids = torch.zeros((count, width), dtype=input_ids.dtype, device=device)
    rest_mask = torch.zeros((count, width), dtype=attention_mask.dtype, device=device)
    labels = torch.full((count, width), -100, dtype=input_ids.dtype, device=device)
    for i, (rest, prompt_length) in enumerate(zip(rests, prompt_lengths)):
        ids[i, :len(rest)] = torch.tensor(rest, dtype=input_ids.dtype)
        rest_mask[i, :len(rest)] = 1
        first = prompt_length - shared - 1  # the position whose next token is the first completion token
        labels[i, first:len(rest) - 1] = ids[i, first + 1:len(rest)]
    positions = shared + torch.arange(width, device=device).expand(count, width)
    full_mask = torch.cat([torch.ones((count, shared), dtype=attention_mask.dtype, device=device), rest_mask], dim=1)
    with context():
        out = model(input_ids=ids, attention_mask=full_mask, position_ids=positions, shift_labels=labels,
                    fused_lm_head=True, **cache_kwargs(model, cache))
    logps = out.log_probs.new_zeros((count, logits_to_keep))
    entropy = None if out.entropy is None else out.entropy.new_zeros((count, logits_to_keep))
    for i, (prompt_length, length) in enumerate(zip(prompt_lengths, completion_lengths)):
        first = prompt_length - shared - 1
        logps[i, :length] = out.log_probs[i, first:first + length]
        if entropy is not None:
            entropy[i, :length] = out.entropy[i, first:first + length]
    return logps, entropy


def shared_prefix_trainer(trainer_class):
    """``trainer_class`` (TRL's ``GRPOTrainer`` or a subclass) whose update runs each micro-batch's shared prompt
    prefix once (``shared_prefix_logps``) and whose generation batch is ordered by prompt instead of shuffled where
    that keeps the step (``keeps_step``); TRL's own path for any chunk where it does not apply."""
    from trl.trainer import grpo_trainer

    class SharedPrefixTrainer(trainer_class):
        def _prepare_inputs(self, generation_batch):
            if not keeps_step(self.args, aux_loss=getattr(self, "aux_loss_enabled", False)):
                return super()._prepare_inputs(generation_batch)
            shuffle = grpo_trainer.shuffle_sequence_dict
            grpo_trainer.shuffle_sequence_dict = order_by_prompt
            try:
                return super()._prepare_inputs(generation_batch)
            finally:
                grpo_trainer.shuffle_sequence_dict = shuffle

        def _get_per_token_logps_and_entropies(self, model, input_ids, attention_mask, logits_to_keep,
                                               batch_size=None, compute_entropy=False, compute_aux_loss=False,
                                               **extra):
            if compute_aux_loss or any(value is not None for value in extra.values()):  # MoE, images: TRL's
                return super()._get_per_token_logps_and_entropies(
                    model, input_ids, attention_mask, logits_to_keep, batch_size=batch_size,
                    compute_entropy=compute_entropy, compute_aux_loss=compute_aux_loss, **extra)
            batch_size = batch_size or input_ids.size(0)
            # decided on the trained model as it trains, for this pass whichever it is (update, old, reference)
            exact = exact_on(self.accelerator.unwrap_model(self.model), training=True,
                             checkpointing=bool(getattr(self.args, "activation_checkpointing", False)))
            logps, entropies = [], []
            for start in range(0, input_ids.size(0), batch_size):
                ids, mask = input_ids[start:start + batch_size], attention_mask[start:start + batch_size]
                part = shared_prefix_logps(model, ids, mask, logits_to_keep, autocast=self.accelerator.autocast,
                                           exact=exact)
                if part is None:
                    part = super()._get_per_token_logps_and_entropies(model, ids, mask, logits_to_keep,
                                                                      compute_entropy=compute_entropy)[:2]
                logps.append(part[0])
                entropies.append(part[1])
            entropy = torch.cat(entropies, dim=0) if compute_entropy and None not in entropies else None
            return torch.cat(logps, dim=0), entropy, None

    return SharedPrefixTrainer
