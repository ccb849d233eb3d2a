"""GRPO's update with the rows' shared prompt prefix run once (train.shared_prefix): the same per-token
log-probabilities, entropies and LoRA gradients as TRL's path on an attention-only model, TRL's path where it
cannot be exact (Qwen3.5's linear-attention state, active dropout, too short a prefix), and a generation batch
ordered by prompt only where the order cannot change the step."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from playprm.train import shared_prefix

pytestmark = pytest.mark.usefixtures("one_cpu_thread")

PREFIX = 40
# (extra prompt tokens after the shared prefix, completion tokens): a row identical to another up to its reply, a
# row whose prompt is the shared prefix alone, an empty completion (a truncated one TRL masked)
ROWS = [(5, 7), (12, 3), (5, 9), (0, 4), (8, 0)]


def lora_model(path, dropout: float = 0.0):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM
    from trl.trainer.utils import add_fused_lm_head

    from playprm.train.fused_head import score_labelled_positions_only

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    add_fused_lm_head(model, outputs=("log_probs", "entropy"))  # as GRPOTrainer does
    score_labelled_positions_only()  # as train-grpo does
    model = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", lora_dropout=dropout,
                                             init_lora_weights=False))  # non-zero adapters: they change the output
    model.train()
    return model


def trl_batch(rows=ROWS, prefix=PREFIX, seed=1):
    """TRL's layout: left-padded prompts (a shared prefix, then each row's own tokens), right-padded completions."""
    generator = torch.Generator().manual_seed(seed)
    shared = torch.randint(5, 200, (prefix,), generator=generator).tolist()
    extra = {n: torch.randint(5, 200, (n,), generator=generator).tolist() for n, _ in rows}  # equal n, equal prompt
    prompts = [shared + extra[n] for n, _ in rows]
    completions = [torch.randint(5, 200, (c,), generator=generator).tolist() for _, c in rows]
    width_p, width_c = max(map(len, prompts)), max(map(len, completions))
    ids = torch.zeros((len(rows), width_p + width_c), dtype=torch.long)
    mask = torch.zeros_like(ids)
    for i, (prompt, completion) in enumerate(zip(prompts, completions)):
        ids[i, width_p - len(prompt):width_p] = torch.tensor(prompt)
        mask[i, width_p - len(prompt):width_p] = 1
        if completion:
            ids[i, width_p:width_p + len(completion)] = torch.tensor(completion)
            mask[i, width_p:width_p + len(completion)] = 1
    return ids, mask, width_c


def trl_logps(model, ids, mask, keep):
    """GRPOTrainer._get_per_token_logps_and_entropies's computation (TRL 1.16), one chunk."""
    labels = ids.masked_fill(mask == 0, -100)
    labels[:, :-keep] = -100
    out = model(input_ids=ids, attention_mask=mask, labels=labels, fused_lm_head=True)
    return out.log_probs[:, -keep:], out.entropy[:, -keep:]


def gradients(model, logps, entropy, mask):
    model.zero_grad()
    ((logps * mask).sum() + 0.1 * (entropy * mask).sum()).backward()
    return {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}


def test_the_shared_prefix_gives_trls_values_and_gradients_on_an_attention_only_model(tiny_models, monkeypatch):
    model = lora_model(tiny_models["policy"])
    ids, mask, keep = trl_batch()
    completion_mask = mask[:, -keep:].float()
    calls = []
    forward = model.forward

    def counting(*args, **kwargs):
        calls.append(tuple(kwargs["input_ids"].shape))
        return forward(*args, **kwargs)
    monkeypatch.setattr(model, "forward", counting)
    got = shared_prefix.shared_prefix_logps(model, ids, mask, keep)
    if "qwen3.5" in str(tiny_models["policy"]).lower() or got is None:
        # a linear-attention state (Qwen3.5) cannot be expanded exactly here: TRL's path runs instead
        assert got is None and any(layer == "linear_attention" for layer in model.config.layer_types)
        return
    # the prefix ran once (its 40 tokens, capped one short of the shortest prompt), then every row's own part
    assert calls == [(1, PREFIX - 1), (len(ROWS), max(n + c for n, c in ROWS) + 1)]
    monkeypatch.undo()
    logps, entropy = got
    ref_logps, ref_entropy = trl_logps(model, ids, mask, keep)
    torch.testing.assert_close(logps * completion_mask, ref_logps * completion_mask, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(entropy * completion_mask, ref_entropy * completion_mask, rtol=1e-4, atol=1e-5)
    assert (logps[completion_mask == 0] == 0).all()
    ours, theirs = gradients(model, logps, entropy, completion_mask), gradients(model, ref_logps, ref_entropy,
                                                                              completion_mask)
    assert ours.keys() == theirs.keys() and any("lora" in name for name in ours)
    for name, grad in theirs.items():
        torch.testing.assert_close(ours[name], grad, rtol=1e-3, atol=1e-5)


def test_trls_path_runs_where_sharing_would_not_be_exact_or_would_not_pay(tiny_models):
    model = lora_model(tiny_models["policy"], dropout=0.1)
    ids, mask, keep = trl_batch()
    assert shared_prefix.dropout_active(model)
    assert shared_prefix.shared_prefix_logps(model, ids, mask, keep) is None  # one mask for every row's prefix
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
    assert not shared_prefix.dropout_active(model)
    model.config.attention_dropout = 0.1  # functional dropout in the attention, no module to see
    assert shared_prefix.dropout_active(model)
    model.eval()
    short_ids, short_mask, short_keep = trl_batch(prefix=shared_prefix.MIN_SHARED_TOKENS - 2)
    assert shared_prefix.shared_prefix_logps(model, short_ids, short_mask, short_keep) is None
    assert shared_prefix.shared_prefix_logps(model, ids[:1], mask[:1], keep) is None  # one row: nothing shared
    model.base_model.model.model.gradient_checkpointing = True  # its layers would drop the prefix's cache
    assert shared_prefix.shared_prefix_logps(model, ids, mask, keep) is None
    model.base_model.model.model.gradient_checkpointing = False
    holed = mask.clone()
    holed[0, -keep] = 0  # a hole inside a completion: positions would shift without it
    holed[0, -keep + 1] = 1
    assert shared_prefix.shared_prefix_logps(model, ids, holed, keep) is None


def test_learned_absolute_positions_take_trls_path():
    """A tiny random GPT-2 (learned absolute positions, built here): TRL's path shifts a left-padded row's positions
    by its padding and the shared prefix starts every row at 0, which only rotary attention does not see; here the
    two would differ by tenths of a nat, so the shared prefix does not run."""
    from transformers import GPT2Config, GPT2LMHeadModel
    from trl.trainer.utils import add_fused_lm_head

    from playprm.train.fused_head import score_labelled_positions_only
    from playprm.transformers_runtime import attention_only, rotary_positions

    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=256, n_positions=128, n_embd=32, n_layer=2, n_head=2,
                                       resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0))
    add_fused_lm_head(model, outputs=("log_probs", "entropy"))
    score_labelled_positions_only()
    model.eval()
    ids, mask, keep = trl_batch()
    assert attention_only(model) and not rotary_positions(model)
    assert not shared_prefix.exact_on(model)
    assert shared_prefix.shared_prefix_logps(model, ids, mask, keep) is None
    # what the check prevents: the shared prefix forced onto learned positions gives other log-probabilities
    forced, _ = shared_prefix.shared_prefix_logps(model, ids, mask, keep, exact=True)
    theirs, _ = trl_logps(model, ids, mask, keep)
    completion_mask = mask[:, -keep:].float()
    assert ((forced - theirs) * completion_mask).abs().max() > 0.05


def test_every_pass_of_a_step_takes_the_path_of_the_update(tiny_models):
    """The trainer decides on the trained model as it trains, for its update and its no-grad passes alike: a
    reference model without dropout, or the policy while TRL has turned its activation checkpointing off, still
    takes TRL's path when the update does, so the ratio and the KL compare one position scheme."""
    import contextlib

    paths = []

    class TRLPath:
        def _get_per_token_logps_and_entropies(self, model, input_ids, attention_mask, logits_to_keep,
                                               compute_entropy=False, **kwargs):
            paths.append("trl")
            return torch.zeros((input_ids.size(0), logits_to_keep)), None, None

    def trainer(policy, checkpointing: bool):
        cls = shared_prefix.shared_prefix_trainer(TRLPath)
        made = cls.__new__(cls)
        made.model, made.args = policy, SimpleNamespace(activation_checkpointing=checkpointing)
        made.accelerator = SimpleNamespace(unwrap_model=lambda model: model, autocast=contextlib.nullcontext)
        return made

    ids, mask, keep = trl_batch()
    reference = lora_model(tiny_models["policy"]).eval()  # TRL's reference model: eval mode, no dropout drawn
    if not shared_prefix.exact_on(reference):  # Qwen3.5's linear attention: TRL's path for every pass anyway
        return
    trainer(lora_model(tiny_models["policy"], dropout=0.1), False)._get_per_token_logps_and_entropies(
        reference, ids, mask, keep)
    assert paths == ["trl"]  # the update draws dropout: the reference pass does not share either
    plain = lora_model(tiny_models["policy"])  # the policy in a no-grad pass, checkpointing turned off by TRL
    trainer(plain, True)._get_per_token_logps_and_entropies(plain, ids, mask, keep)
    assert paths == ["trl", "trl"]
    trainer(plain, False)._get_per_token_logps_and_entropies(reference, ids, mask, keep)
    assert paths == ["trl", "trl"]  # where the update shares, so does the reference pass


def test_rows_are_ordered_by_prompt_only_where_the_step_stays_the_same():
    prompts = torch.tensor([[0, 7, 8], [5, 6, 9], [0, 7, 8], [5, 6, 1]])
    batch = {"prompt_ids": prompts, "prompt_mask": (prompts > 0).long(), "completion_ids": torch.arange(4)[:, None],
             "advantages": torch.tensor([0.1, 0.2, 0.3, 0.4]), "num_items_in_batch": torch.tensor(9),
             "token_advantages": [[1], [2], [3], [4]]}
    ordered = shared_prefix.order_by_prompt(batch)
    assert ordered["completion_ids"][:, 0].tolist() == [3, 1, 0, 2]  # [5,6,1] < [5,6,9] < [7,8] = [7,8]
    assert ordered["advantages"].tolist() == pytest.approx([0.4, 0.2, 0.1, 0.3])
    assert ordered["token_advantages"] == [[4], [2], [1], [3]] and int(ordered["num_items_in_batch"]) == 9
    args = SimpleNamespace(steps_per_generation=4, gradient_accumulation_steps=4, num_iterations=1, loss_type="dapo")
    assert shared_prefix.keeps_step(args)
    for change in ({"loss_type": "bnpo"}, {"num_iterations": 2}, {"steps_per_generation": 8}):
        assert not shared_prefix.keeps_step(SimpleNamespace(**{**vars(args), **change}))
    assert shared_prefix.common_prefix([[1, 2, 3], [1, 2], [1, 2, 4]]) == 2 and shared_prefix.common_prefix([]) == 0


def test_self_play_grpo_runs_its_update_through_the_shared_prefix(tiny_models, tmp_path, monkeypatch):
    """train-grpo's trainer takes the shared-prefix path for its micro-batches on the attention-only model (and
    TRL's on Qwen3.5), rows ordered by prompt; the run trains as before."""
    import json

    from grpo_games import write_relay
    from test_train_grpo import train_grpo_cli

    results, ordered = [], []
    logps = shared_prefix.shared_prefix_logps
    order = shared_prefix.order_by_prompt

    def counting(model, input_ids, *args, **kwargs):
        results.append(logps(model, input_ids, *args, **kwargs) is not None)
        return logps(model, input_ids, *args, **kwargs)

    def recording(batch):
        ordered.append(len(batch["prompt_ids"]))
        return order(batch)
    monkeypatch.setattr(shared_prefix, "shared_prefix_logps", counting)
    monkeypatch.setattr(shared_prefix, "order_by_prompt", recording)
    games = write_relay(tmp_path / "games", instances=2)
    for role, template in enumerate(sorted((games / "relay" / "resources").glob("*.template"))):
        # each player's rows open with its own long rules: only a micro-batch of one player's rows shares a prefix
        # worth running once, which TRL's shuffle would rarely make and the order by prompt makes every time
        rules = f"Rules for player {'AB'[role]}: long, as a clembench game's instructions are. " * 4
        template.write_text(rules + template.read_text())
    out = tmp_path / "self-play"
    assert train_grpo_cli(tiny_models["policy"], games, out, "--self-play",
                          "true", "--max-steps", "2", "--max-tokens", "3", "--num-generations", "4",
                          "--effective-batch-size", "8", "--per-device-train-batch-size", "4", "--lora-r", "4",
                          "--lora-alpha", "8", "--learning-rate", "1e-2", game="relay") == 0
    assert json.loads((out / "metrics.json").read_text())["global_step"] == 2
    assert len(results) == 4 and ordered == [8, 8]  # 2 steps x 2 micro-batches; each rollout ordered, not shuffled
    hybrid = "linear_attention" in json.dumps(json.loads((tiny_models["policy"] / "config.json").read_text()))
    assert not any(results) if hybrid else all(results)


def test_ordering_a_generation_batch_by_prompt_leaves_the_step_as_shuffled(card_models, tmp_path, monkeypatch):
    """One optimizer step of the same rollout, micro-batches cut from TRL's shuffle or from the order by prompt: the
    same weights up to float rounding (dapo's loss is normalised by the whole batch's tokens; SGD keeps the step
    proportional to the gradient, where Adam's first step would amplify rounding into signs)."""
    from grpo_games import write_relay
    from safetensors.torch import load_file
    from test_train_grpo import train_grpo_cli

    games = write_relay(tmp_path / "games", instances=2)
    weights = {}
    for name, keep in (("ordered", shared_prefix.keeps_step), ("shuffled", lambda args, aux_loss=False: False)):
        monkeypatch.setattr(shared_prefix, "keeps_step", keep)
        out = tmp_path / name
        assert train_grpo_cli(card_models["policy"], games, out, "--self-play", "true", "--max-steps", "1",
                              "--max-tokens", "3", "--num-generations", "4", "--effective-batch-size", "8",
                              "--per-device-train-batch-size", "2", "--lora-r", "4", "--lora-alpha", "8",
                              "--learning-rate", "1.0", "--optim", "sgd", "--warmup-steps", "0", "--lr-scheduler-type",
                              "constant", "--seed", "3", game="relay") == 0
        weights[name] = load_file(str(out / "adapter_model.safetensors"))
    moved = 0
    for key, value in weights["ordered"].items():
        torch.testing.assert_close(value, weights["shuffled"][key], rtol=1e-4, atol=1e-6)
        moved += int(key.endswith("lora_B.weight") and value.abs().sum() > 0)
    assert moved  # the step changed the adapter (its B matrices start at zero)
