"""Cross-turn reuse: a turn that extends the last one encodes only its new tokens, and nothing else changes.

Every check plays a few multi-turn conversations twice, with reuse and without (``reuse_cache=False``, the
path that re-encodes the whole conversation each turn), on the card's Qwen3.5 layout (whose linear-attention
states are carried across turns) and on Qwen3.
"""

from __future__ import annotations

import dataclasses

import pytest

from playprm import chat
from playprm.models.hf import HFPolicy, load_causal_lm
from playprm.models.prefix_cache import PrefixStore
from playprm.models.registry import resolve_policy
from playprm.prm.scorer import PRMScorer

TURNS = 4


@pytest.fixture(scope="module")
def policies(tiny_models, one_cpu_thread):
    spec = resolve_policy(str(tiny_models["policy"]))
    model, tokenizer = load_causal_lm(spec)
    return HFPolicy(spec, model, tokenizer), HFPolicy(spec, model, tokenizer, reuse_cache=False)


def _openings(count: int) -> list[list[dict]]:
    return [[{"role": "user", "content": f"Let's play round {i}. " + "Guess a word. " * i}] for i in range(count)]


def _answer(conversation: list[dict], reply: str, turn: int) -> None:
    """The played reply and a game answer of a different length for each conversation."""
    conversation.append({"role": "assistant", "content": reply})
    conversation.append({"role": "user", "content": f"Feedback {turn}: " + "no " * (turn + len(conversation))})


def _play(policy, conversations, *, n: int, temperature: float, seed_base: int = 0):
    """Play TURNS turns; per turn the candidates of every conversation (the second candidate is played)."""
    turns = []
    for turn in range(TURNS):
        out = policy.generate(conversations, n=n, temperature=temperature, max_tokens=8 + 3 * turn,
                              seed=seed_base + turn)
        turns.append(out)
        for conversation, candidates in zip(conversations, out):
            _answer(conversation, candidates[-1].text, turn)
    return turns


def test_greedy_play_is_token_for_token_the_same_with_and_without_reuse(policies):
    reused, plain = policies
    a = _play(reused, _openings(5), n=1, temperature=0.0)
    b = _play(plain, _openings(5), n=1, temperature=0.0)
    for turn_a, turn_b in zip(a, b):
        for x, y in zip(turn_a, turn_b):
            assert [c.raw for c in x] == [c.raw for c in y]
            assert [c.num_tokens for c in x] == [c.num_tokens for c in y]
            assert x[0].logprob == pytest.approx(y[0].logprob, abs=1e-4)


def test_sampled_candidates_are_the_same_with_and_without_reuse(policies):
    reused, plain = policies
    a = _play(reused, _openings(3), n=4, temperature=0.9, seed_base=7)
    b = _play(plain, _openings(3), n=4, temperature=0.9, seed_base=7)
    assert [[[c.text for c in g] for g in t] for t in a] == [[[c.text for c in g] for g in t] for t in b]


@pytest.mark.parametrize("template_kwargs", [{}, {"enable_thinking": False}])
def test_a_turn_encodes_only_what_was_added_since_the_last(policies, template_kwargs):
    # With enable_thinking=False the template ends the prompt with an empty think block that it does not keep
    # in the history of the next turn (as Qwen3's does): the state is kept from before the generation prompt.
    reused, plain = (_with_template(p, template_kwargs) for p in policies)
    conversations = _openings(3)
    previous, prompts_before = [None] * 3, [None] * 3
    for turn in range(TURNS):
        prompts = [reused.prompt_ids(c) for c in conversations]
        history = [chat.history_length(reused.tokenizer, c, p, template_kwargs) for c, p in zip(conversations, prompts)]
        out = reused.generate(conversations, n=2, temperature=0.0, max_tokens=6)
        for i, (prompt, candidates) in enumerate(zip(prompts, out)):
            if previous[i] is None:
                expected = len(prompt)
            else:
                assert prompt[:previous[i]] == prompts_before[i][:previous[i]]  # the kept part is repeated
                expected = len(prompt) - previous[i]
            assert [c.prefill_tokens for c in candidates] == [expected] * 2
        again = plain.generate(conversations, n=1, max_tokens=6)
        assert [g[0].prefill_tokens for g in again] == [len(p) for p in prompts]
        assert [g[0].raw for g in again] == [g[0].raw for g in out]
        previous, prompts_before = history, prompts
        for conversation, candidates in zip(conversations, out):
            _answer(conversation, candidates[0].text, turn)
    if template_kwargs:
        assert all(h < len(p) for h, p in zip(previous, prompts_before))  # the think block was left out


def test_fresh_prompts_of_two_lengths_encode_one_call_each_and_only_the_last_logits(policies, monkeypatch):
    """Prompts encoded from scratch go one left-padded call per length group (``length_groups``), and a prefill
    computes the vocabulary head at its last position only; the replies are those of the plain path, which
    encodes all of them in one batch."""
    from playprm.transformers_runtime import length_groups

    reused, plain = policies
    conversations = [[{"role": "user", "content": f"Round {i}. " + "Guess a word. " * (1 if i < 3 else 30)}]
                     for i in range(6)]
    lengths = [len(reused.prompt_ids(c)) for c in conversations]
    assert sorted(map(sorted, length_groups(lengths))) == [[0, 1, 2], [3, 4, 5]]
    calls = []
    forward = reused.model.forward

    def recording(*args, **kwargs):
        out = forward(*args, **kwargs)
        fresh = kwargs.get("past_key_values", kwargs.get("cache")) is None
        calls.append((tuple(kwargs["input_ids"].shape), out.logits.shape[1], fresh))
        return out
    monkeypatch.setattr(reused.model, "forward", recording)
    got = reused.generate(conversations, max_tokens=4)
    assert [shape[0] for shape, _, fresh in calls if fresh] == [3, 3]
    assert {kept for shape, kept, _ in calls if shape[1] > 1} == {1}  # every prefill, the continued ones too
    monkeypatch.undo()
    assert [g[0].raw for g in got] == [g[0].raw for g in plain.generate(conversations, max_tokens=4)]


def test_prompts_that_open_alike_encode_their_shared_prefix_once(policies, monkeypatch):
    """A game's episodes open with the same instructions: their common prefix runs once (one row), each prompt
    continues from it, a repeated prompt is the prefix itself; the replies are the plain path's, and the tokens
    counted as encoded are what ran."""
    from playprm.models import prefix_cache

    reused, plain = policies
    rules = "Guess a word. " * 20
    conversations = [[{"role": "user", "content": rules + tail}] for tail in ("Round one.", "Round two, longer.",
                                                                             "Round one.", "Other.")]
    prompts = [reused.prompt_ids(c) for c in conversations]
    shared = prefix_cache.common_prefix(prompts)
    assert shared >= prefix_cache.SHARED_PREFIX_TOKENS
    fresh_rows = []
    encode_full = prefix_cache._encode_full

    def recording(model, rows, pad, device):
        fresh_rows.append([len(r) for r in rows])
        return encode_full(model, rows, pad, device)
    monkeypatch.setattr(prefix_cache, "_encode_full", recording)
    before = dataclasses.replace(reused.prefix_store.stats)
    got = reused.generate(conversations, max_tokens=6)
    monkeypatch.undo()
    if "linear_attention" in (getattr(reused.model.config, "layer_types", None) or []):
        # Qwen3.5: rows continued from one state go one call per number of new tokens; not shared (not measured)
        assert reused.prefix_store.stats.shared == before.shared and sum(map(len, fresh_rows)) == 4
    else:
        assert fresh_rows == [[shared]]  # the one shared prefix, nothing else from scratch
        assert reused.prefix_store.stats.shared - before.shared == 4
        assert sum(g[0].prefill_tokens for g in got) == shared + sum(len(p) - shared for p in prompts)
    assert [g[0].raw for g in got] == [g[0].raw for g in plain.generate(conversations, max_tokens=6)]


def test_shared_prefixes_group_rows_that_open_alike():
    from playprm.models.prefix_cache import shared_prefixes

    a, b = [1] * 40 + [2, 3], [1] * 40 + [4]
    other = [9] * 50
    assert shared_prefixes([a, other, b, None, a], 32) == [(40, [0, 4, 2])]  # sorted by tokens: a, a, b
    assert shared_prefixes([a, a], 32) == [(42, [0, 1])] and shared_prefixes([a, other], 32) == []


def test_length_groups_bound_the_padding_and_keep_every_index_once():
    from playprm.transformers_runtime import length_groups

    real = [151, 156, 157, 163, 277, 280, 285, 290]  # clembench's matchit_ascii and referencegame prompts
    assert [sorted(g) for g in length_groups(real)] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert length_groups([5, 5, 5]) == [[0, 1, 2]] and length_groups([]) == []
    lengths = [(i * 37) % 101 + 1 for i in range(60)]
    groups = length_groups(lengths)
    assert sorted(i for g in groups for i in g) == list(range(60))
    for group in groups:
        assert len(group) * max(lengths[i] for i in group) <= 1.2 * sum(lengths[i] for i in group)


def _with_template(policy: HFPolicy, template_kwargs: dict) -> HFPolicy:
    """The same model and tokenizer with other chat-template arguments and an empty store."""
    spec = dataclasses.replace(policy.spec, chat_template_kwargs=template_kwargs)
    return HFPolicy(spec, policy.model, policy.tokenizer, reuse_cache=policy.prefix_store is not None)


def test_a_context_that_rewrites_history_is_encoded_in_full_and_counted(policies):
    reused, plain = policies
    conversation = _openings(1)[0]
    reused.generate([conversation], max_tokens=4)
    before = reused.prefix_store.stats.full
    rewritten = [{"role": "system", "content": "A new system prompt."}, *conversation,
                 {"role": "assistant", "content": "x"}, {"role": "user", "content": "again"}]
    got = reused.generate([rewritten], max_tokens=8)[0][0]
    assert reused.prefix_store.stats.full == before + 1
    assert got.prefill_tokens == len(reused.prompt_ids(rewritten))
    assert got.raw == plain.generate([rewritten], max_tokens=8)[0][0].raw


def test_prm_scores_are_the_same_with_and_without_reuse(tiny_models, policies, one_cpu_thread):
    reused_scorer = PRMScorer.from_path(tiny_models["prm"])
    plain_scorer = PRMScorer.from_path(tiny_models["prm"])
    plain_scorer.prefix_store = None
    policy = policies[0]
    conversations = _openings(3)
    for turn in range(TURNS):
        out = policy.generate(conversations, n=3, temperature=0.9, max_tokens=8, seed=turn)
        candidates = [[c.text for c in group] for group in out]
        a = reused_scorer.score(conversations, candidates)
        b = plain_scorer.score(conversations, candidates)
        assert [x for g in a for x in g] == pytest.approx([x for g in b for x in g], abs=1e-5)
        for conversation, group in zip(conversations, out):
            _answer(conversation, group[0].text, turn)
    assert reused_scorer.prefix_store.stats.continued == 3 * (TURNS - 1)
    assert reused_scorer.stats.context_tokens < plain_scorer.stats.context_tokens / 2


def test_the_prm_shares_a_prefix_only_where_its_backbone_is_attention_only(tiny_models, one_cpu_thread):
    """The PRM has no config of its own: whether every layer is full attention is read from its backbone's, so a
    hybrid (Qwen3.5) PRM is not attention-only and even its first scoring call shares no prefix, as its policy's
    does not; a Qwen3 PRM shares the instructions its contexts open with."""
    import json

    from playprm.transformers_runtime import attention_only

    hybrid = "linear_attention" in json.dumps(json.loads((tiny_models["policy"] / "config.json").read_text()))
    scorer = PRMScorer.from_path(tiny_models["prm"])
    assert attention_only(scorer.model) == (not hybrid)
    rules = "Guess a word. " * 20
    contexts = [[{"role": "user", "content": rules + tail}] for tail in ("Round one.", "Round two, longer.", "Other.")]
    scorer.score(contexts, [["a word", "another"]] * len(contexts))
    assert (scorer.prefix_store.stats.shared > 0) == (not hybrid)


def test_the_store_keeps_one_state_per_conversation_and_stays_under_its_cap(tiny_models, one_cpu_thread):
    spec = resolve_policy(str(tiny_models["policy"]))
    model, tokenizer = load_causal_lm(spec)
    policy = HFPolicy(spec, model, tokenizer)
    conversations = _openings(4)
    for turn in range(3):
        out = policy.generate(conversations, n=2, temperature=0.0, max_tokens=4)
        assert len(policy.prefix_store.entries) == 4  # the extended turn replaced the one before it
        for conversation, group in zip(conversations, out):
            _answer(conversation, group[0].text, turn)
    # conversations that stop being played leave once they have not been used for `keep_calls` calls
    store = policy.prefix_store
    for _ in range(store.keep_calls):
        policy.generate(_openings(1), max_tokens=2)
    last = policy.prompt_ids(_openings(1)[0])
    assert list(store.entries) == [tuple(last[:chat.history_length(policy.tokenizer, _openings(1)[0], last)])]
    # beyond the token cap the least recently used go first
    capped = HFPolicy(spec, model, tokenizer)
    capped.prefix_store = PrefixStore(max_tokens=len(policy.prompt_ids(_openings(3)[2])) + 1)
    capped.generate(_openings(3), max_tokens=2)
    assert capped.prefix_store.tokens <= capped.prefix_store.max_tokens
    assert len(capped.prefix_store.entries) == 1


def test_vllm_reports_the_prompt_tokens_its_prefix_cache_did_not_hold(monkeypatch, tokenizer):
    # vLLM is not installable here: a stand-in module and engine with vLLM's RequestOutput fields
    import sys
    import types

    from playprm.models.base import PolicySpec
    from playprm.models.vllm_policy import VLLMPolicy

    monkeypatch.setitem(sys.modules, "vllm", types.SimpleNamespace(SamplingParams=lambda **kwargs: kwargs))
    reply = types.SimpleNamespace(token_ids=[5, 6], cumulative_logprob=-1.0, finish_reason="stop")

    class Engine:
        def generate(self, prompts, params, **kwargs):
            return [types.SimpleNamespace(outputs=[reply] * params["n"], num_cached_tokens=cached)
                    for cached in (0, 16)]

    policy = object.__new__(VLLMPolicy)
    policy.spec, policy.llm, policy.tokenizer, policy.lora = PolicySpec("v", "vllm", "m"), Engine(), tokenizer, None
    policy.reply_rule = lambda raw: raw
    policy.sampling_defaults = {}  # the engine's generation_config defaults (none for this stand-in)
    contexts = _openings(2)
    out = policy.generate(contexts, n=2)
    lengths = [len(chat.prompt_ids(tokenizer, c)) for c in contexts]
    assert [[c.prefill_tokens for c in group] for group in out] == [[lengths[0]] * 2, [lengths[1] - 16] * 2]
