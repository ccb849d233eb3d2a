"""The transformers policy: n candidates per context, one prefill per context, seeded determinism."""

from __future__ import annotations

import pytest
import torch

from playprm.models.hf import HFPolicy, load_causal_lm
from playprm.models.registry import resolve_policy

CONTEXTS = [
    [{"role": "user", "content": "Let's play wordle. Reply with GUESS: <word>"}],
    [{"role": "user", "content": "Describe the grid."}, {"role": "assistant", "content": "EXPRESSION: x"},
     {"role": "user", "content": "Now once more, shorter please."}],
    [{"role": "user", "content": "hi"}],
]


@pytest.fixture(scope="module")
def policy(tiny_models):
    return HFPolicy(resolve_policy(str(tiny_models["policy"])))


def test_generate_returns_n_candidates_per_context(policy):
    out = policy.generate(CONTEXTS, n=4, temperature=1.0, max_tokens=8, seed=3)
    assert [len(c) for c in out] == [4, 4, 4]
    for candidates in out:
        for c in candidates:
            assert 1 <= c.num_tokens <= 8
            assert c.logprob < 0
        assert len({c.text for c in candidates}) > 1  # sampled, not copies


def test_same_seed_gives_same_candidates(policy):
    a = policy.generate(CONTEXTS, n=3, temperature=0.9, max_tokens=10, seed=11)
    b = policy.generate(CONTEXTS, n=3, temperature=0.9, max_tokens=10, seed=11)
    c = policy.generate(CONTEXTS, n=3, temperature=0.9, max_tokens=10, seed=12)
    texts = lambda out: [[x.text for x in group] for group in out]  # noqa: E731
    assert texts(a) == texts(b)
    assert texts(a) != texts(c)


def _reference_greedy(model, tokenizer, policy, context, max_tokens):
    """transformers' own generate, one context at a time, no padding: the plain path."""
    ids = torch.tensor([policy.prompt_ids(context)])
    out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=max_tokens, do_sample=False,
                         eos_token_id=policy.stop_ids, pad_token_id=tokenizer.pad_token_id)
    return tokenizer.decode(out[0, ids.shape[1]:].tolist(), skip_special_tokens=False)  # decoded as clemcore does


def test_batched_greedy_with_shared_prefill_equals_plain_generate(policy):
    # n=3 at temperature 0 must give three copies of what transformers' generate gives for each context
    # (on Qwen3.5 the repeated cache holds gated delta-net convolution and recurrent states besides keys/values)
    out = policy.generate(CONTEXTS, n=3, temperature=0.0, max_tokens=12)
    for context, candidates in zip(CONTEXTS, out):
        expected = _reference_greedy(policy.model, policy.tokenizer, policy, context, 12)
        assert [c.raw for c in candidates] == [expected] * 3


def test_left_padding_does_not_leak_into_the_state(policy):
    # contexts of very different lengths in one batch give the tokens (and log-probabilities) of each alone
    contexts = [[{"role": "user", "content": "word " * 300}], *CONTEXTS]
    batched = policy.generate(contexts, n=2, temperature=0.0, max_tokens=10)
    for context, together in zip(contexts, batched):
        alone = policy.generate([context], n=1, temperature=0.0, max_tokens=10)[0][0]
        assert [c.text for c in together] == [alone.text] * 2
        assert together[0].logprob == pytest.approx(alone.logprob, abs=1e-4)
    lengths = [len(policy.prompt_ids(c)) for c in contexts]
    assert max(lengths) > 20 * min(lengths)


def test_the_card_layout_is_qwen3_5_hybrid_attention(card_models):
    # what make-tiny writes by default is laid out as Qwen/Qwen3.5-27B on the hub
    import json

    config = json.loads((card_models["policy"] / "config.json").read_text())
    assert config["architectures"] == ["Qwen3_5ForConditionalGeneration"] and config["model_type"] == "qwen3_5"
    assert "vision_config" in config
    assert config["text_config"]["layer_types"] == ["linear_attention"] * 3 + ["full_attention"]
    policy = HFPolicy(resolve_policy(str(card_models["policy"])))
    assert type(policy.model).__name__ == "Qwen3_5ForCausalLM"  # the text stack; no vision tower loaded
    ids = torch.tensor([policy.prompt_ids(CONTEXTS[0])])
    cache = policy.model(ids, use_cache=True).past_key_values
    assert [type(layer).__name__ for layer in cache.layers] == ["LinearAttentionLayer"] * 3 + ["DynamicLayer"]
    greedy = policy.generate(CONTEXTS, n=1, temperature=0.0, max_tokens=12)
    assert len({group[0].text for group in greedy}) == len(CONTEXTS)  # greedy tests above compare real text


def test_chat_template_kwargs_reach_the_template(tiny_models):
    spec = resolve_policy(str(tiny_models["policy"]))
    model, tokenizer = load_causal_lm(spec)
    spec.chat_template_kwargs = {"enable_thinking": False}
    no_think = HFPolicy(spec, model, tokenizer).prompt_ids(CONTEXTS[0])
    spec.chat_template_kwargs = {}
    plain = HFPolicy(spec, model, tokenizer).prompt_ids(CONTEXTS[0])
    think_id = tokenizer.convert_tokens_to_ids("<think>")
    assert think_id in no_think and think_id not in plain


def test_generation_stops_on_a_stop_token_and_keeps_it_for_eos_to_cull(policy):
    first = policy.generate(CONTEXTS[:1], n=1, temperature=0.0, max_tokens=6)[0][0]
    first_token = policy.tokenizer(first.raw, add_special_tokens=False).input_ids[0]
    saved = policy.stop_ids
    policy.stop_ids = sorted(set(saved) | {first_token})  # the very first greedy token now ends the turn
    try:
        stopped = policy.generate(CONTEXTS[:1], n=2, temperature=0.0, max_tokens=6)[0]
    finally:
        policy.stop_ids = saved
    word = policy.tokenizer.decode([first_token])
    assert [(c.raw, c.num_tokens, c.finished) for c in stopped] == [(word, 1, True)] * 2
    # as in clemcore, the stop token's text stays in the reply unless eos_to_cull matches it (an ordinary word here)
    assert [c.text for c in stopped] == [word.strip()] * 2
    assert first.num_tokens == 6 and not first.finished  # without the stop it ran to max_tokens


def test_greedy_first_decodes_the_greedy_reply_beside_the_samples_from_one_prefill(policy):
    # anchored best-of-n: row 0 of each context is the greedy reply, the others are sampled as usual
    greedy = policy.generate(CONTEXTS, n=1, temperature=0.0, max_tokens=10)
    anchored = policy.generate(CONTEXTS, n=4, temperature=1.0, max_tokens=10, seed=5, greedy_first=True)
    assert [group[0].raw for group in anchored] == [group[0].raw for group in greedy]
    assert all(len({c.text for c in group}) > 1 for group in anchored)
