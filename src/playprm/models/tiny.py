"""Tiny random-weight chat models, built locally so that everything runs offline on CPU in seconds.

``make_tiny(out)`` writes ``out/policy`` (a Qwen3-architecture causal LM with a byte-level BPE tokenizer
trained here and a Qwen-style chat template that understands ``enable_thinking``) and ``out/prm`` (a
process reward model on a second tiny backbone with the same tokenizer).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

# A Qwen-style template: ChatML turns, ``enable_thinking=False`` inserts an empty think block after the
# generation prompt (as Qwen3 does), and ``{% generation %}`` marks assistant text for TRL's
# assistant-only loss.
CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{%- if message['role'] == 'assistant' %}"
    "{{- '<|im_start|>assistant\\n' }}{% generation %}{{- message['content'] + '<|im_end|>' }}{% endgeneration %}"
    "{{- '\\n' }}"
    "{%- else %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}"
    "{{- '<|im_start|>assistant\\n' }}"
    "{%- if enable_thinking is defined and enable_thinking is false %}{{- '<think>\\n\\n</think>\\n\\n' }}{%- endif %}"
    "{%- endif %}"
)

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"]


@dataclass
class TinySize:
    """Shape of a tiny model; the defaults train and play in seconds on two CPU cores."""

    layers: int = 2
    hidden: int = 64
    heads: int = 4
    kv_heads: int = 2
    vocab: int = 2048  # target size of the locally trained BPE vocabulary


def _tokenizer_corpus() -> list[str]:
    """Text the tokenizer is trained on: game-like prompts and many English words."""
    from english_words import get_english_words_set

    words = sorted(get_english_words_set(["gcide"], lower=True, alpha=True))
    lines = [" ".join(words[i : i + 40]) for i in range(0, len(words), 40)]
    lines += [
        "GUESS: house EXPLANATION: common letters",
        "CLUE: a place to live. GUESS: home",
        "Answer: first grid. Expression: the grid with an X in the corner",
        "Let's play a game. You are the guesser. Reply with one word.",
        "□ ▢ X ▢ □ 1 2 3 4 5 6 7 8 9 0 . , : ; ! ? ' \" ( ) [ ] { } - _ + = * / \\ # @ $ % & < > |",
    ] * 20
    return lines


def build_tokenizer(vocab_size: int):
    """Train a byte-level BPE tokenizer here (no download) and wrap it for transformers."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(_tokenizer_corpus(), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=SPECIAL_TOKENS[1:],
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.padding_side = "left"
    return fast


def tiny_config(tokenizer, size: TinySize):
    from transformers import Qwen3Config

    return Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=size.hidden,
        intermediate_size=size.hidden * 2,
        num_hidden_layers=size.layers,
        num_attention_heads=size.heads,
        num_key_value_heads=size.kv_heads,
        head_dim=size.hidden // size.heads,
        max_position_embeddings=8192,
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=tokenizer.convert_tokens_to_ids("<|im_end|>"),
        pad_token_id=tokenizer.pad_token_id,
    )


def make_tiny(out: str | Path, size: TinySize | None = None, seed: int = 0) -> dict[str, Path]:
    """Write ``out/policy`` and ``out/prm``; returns their paths."""
    import torch
    from transformers import GenerationConfig, Qwen3ForCausalLM

    from playprm.prm.model import ProcessRewardModel

    size = size or TinySize()
    out = Path(out)
    tokenizer = build_tokenizer(size.vocab)
    config = tiny_config(tokenizer, size)

    torch.manual_seed(seed)
    policy_dir = out / "policy"
    policy = Qwen3ForCausalLM(config)
    policy.generation_config = GenerationConfig(
        eos_token_id=config.eos_token_id, pad_token_id=config.pad_token_id, do_sample=False
    )
    policy.save_pretrained(policy_dir)
    tokenizer.save_pretrained(policy_dir)
    (policy_dir / "playprm_tiny.json").write_text(json.dumps(size.__dict__, indent=2))

    torch.manual_seed(seed + 1)
    prm_dir = out / "prm"
    prm = ProcessRewardModel.from_config(config)
    prm.save(prm_dir, tokenizer=tokenizer, base_model=None)
    return {"policy": policy_dir, "prm": prm_dir}
