"""Tiny random-weight chat models, built locally so that everything runs offline on CPU in seconds.

``write_tiny_policy(folder)`` writes a causal LM with a byte-level BPE tokenizer trained here and a Qwen-style
chat template that understands ``enable_thinking`` (``playprm.prm.tiny`` adds a PRM on a second tiny backbone
of the same config, the pair ``make-tiny`` writes). The default architecture is the model card's: **Qwen3.5**, laid out as the hub's
Qwen/Qwen3.5-27B checkpoint is — ``Qwen3_5ForConditionalGeneration`` (a tiny vision tower beside the language
model), ``layer_types`` repeating 3 x ``linear_attention`` (gated delta-net) + 1 x ``full_attention``, partial
rotary embeddings with an interleaved multimodal RoPE. ``arch="qwen3"`` writes the plain softmax-attention
Qwen3 of earlier releases.

The tokenizer is trained here, as a model trained from scratch trains its own: by default on English words
(split at spaces, byte-level), or with ``corpus`` on the model's training texts (``make-tiny --tokenizer-data``).
A corpus-trained tokenizer splits text into lines and keeps a run of single characters separated by spaces (a
grid row such as ``X ▢ ▢ X X``) as one piece, so frequent lines of the games' prompts and each grid row become
single tokens: sequences shrink about sixfold and a grid row reads the same in a grid and in an expression.
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
# Qwen3.5's vision placeholders: the multimodal config names their ids, so the tokenizer must have them
VISION_TOKENS = ["<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>"]

ARCHS = ("qwen3.5", "qwen3")
FULL_ATTENTION_INTERVAL = 4  # Qwen3.5-27B: every 4th of its 64 layers is full attention, the others linear


@dataclass
class TinySize:
    """Shape of a tiny model; the defaults train and play in seconds on two CPU cores."""

    layers: int | None = None  # None: 4 for qwen3.5 (one 3:1 block of its layer pattern), 2 for qwen3
    hidden: int = 64
    heads: int = 4
    kv_heads: int = 2
    vocab: int = 2048  # target size of the locally trained BPE vocabulary
    arch: str = "qwen3.5"  # one of ARCHS

    def __post_init__(self):
        if self.arch not in ARCHS:
            raise ValueError(f"arch {self.arch!r} is not one of {', '.join(ARCHS)}")
        if self.layers is None:
            self.layers = FULL_ATTENTION_INTERVAL if self.arch == "qwen3.5" else 2

    @property
    def layer_types(self) -> list[str]:
        """Qwen3.5's pattern cut to ``layers``: linear, linear, linear, full, ... (the last layer is always full
        attention, so even a 1-layer model keeps a softmax-attention cache)."""
        types = ["full_attention" if (i + 1) % FULL_ATTENTION_INTERVAL == 0 else "linear_attention"
                 for i in range(self.layers)]
        types[-1] = "full_attention"
        return types


def english_words() -> list[str]:
    """The English words (gcide, lower case, letters only) the tiny tokenizers are trained on."""
    from english_words import get_english_words_set

    return sorted(get_english_words_set(["gcide"], lower=True, alpha=True))


def _tokenizer_corpus(words: list[str] | None = None) -> list[str]:
    """Text the tokenizer is trained on: game-like prompts and many words (default: ``english_words()``)."""
    words = english_words() if words is None else words
    lines = [" ".join(words[i : i + 40]) for i in range(0, len(words), 40)]
    lines += [
        "GUESS: house EXPLANATION: common letters",
        "CLUE: a place to live. GUESS: home",
        "Answer: first grid. Expression: the grid with an X in the corner",
        "Let's play a game. You are the guesser. Reply with one word.",
        "□ ▢ X ▢ □ 1 2 3 4 5 6 7 8 9 0 . , : ; ! ? ' \" ( ) [ ] { } - _ + = * / \\ # @ $ % & < > |",
    ] * 20
    return lines


# pieces of a corpus-trained tokenizer: a line break, or a run of single characters separated by single spaces
CORPUS_PIECES = r"(?<!\S)\S(?: \S)+(?!\S)|\n"


def build_tokenizer(vocab_size: int, extra_special: list[str] = (), corpus: list[str] | None = None,
                    words: list[str] | None = None, pieces: str | None = None):
    """Train a byte-level BPE tokenizer here (no download) and wrap it for transformers: on English words split
    at spaces, or with ``corpus`` on those texts (and the words) split into ``CORPUS_PIECES``. ``words`` replaces
    the English words (the GPU benchmarks pass made-up ones, so they run without the english-words package).
    ``pieces``: a regular expression of more pieces the corpus tokenizer keeps apart from their neighbours, so
    that no token spans one and its context (wordle's words and letter feedback, ``rules.TOKEN_PIECES``: without
    them a feedback line merges into a few opaque tokens)."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    if corpus is None:
        tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    else:
        tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(f"{pieces}|{CORPUS_PIECES}" if pieces else CORPUS_PIECES),
                                 behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ])
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS + list(extra_special),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    # with pieces, the texts alone (and the generic game lines): the English word list's words would also be pieces,
    # and their merges would crowd the game's own words out of the vocabulary
    words = [] if pieces and words is None else words
    tokenizer.train_from_iterator([*(corpus or []), *_tokenizer_corpus(words)], trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=SPECIAL_TOKENS[1:] + list(extra_special),
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.padding_side = "left"
    return fast


def tiny_config(tokenizer, size: TinySize):
    """The model config of ``size.arch``: a ``Qwen3Config``, or a multimodal ``Qwen3_5Config`` whose
    ``text_config`` follows Qwen3.5-27B's proportions at tiny scale."""
    common = dict(
        vocab_size=len(tokenizer), hidden_size=size.hidden, intermediate_size=size.hidden * 2,
        num_hidden_layers=size.layers, num_attention_heads=size.heads, num_key_value_heads=size.kv_heads,
        max_position_embeddings=8192, tie_word_embeddings=True, bos_token_id=None,
        eos_token_id=tokenizer.convert_tokens_to_ids("<|im_end|>"), pad_token_id=tokenizer.pad_token_id,
    )
    if size.arch == "qwen3":
        from transformers import Qwen3Config

        return Qwen3Config(head_dim=size.hidden // size.heads, **common)
    from transformers import Qwen3_5Config

    head_dim = max(16, 2 * size.hidden // size.heads)  # 27B: head_dim 256 at hidden 5120 / 24 heads
    rotary_half = head_dim // 8  # partial_rotary_factor 0.25 -> head_dim / 4 rotary dims, half of them per section
    text = dict(
        common, head_dim=head_dim, layer_types=size.layer_types, linear_conv_kernel_dim=4, tie_word_embeddings=False,
        linear_key_head_dim=max(8, size.hidden // size.heads), linear_value_head_dim=max(8, size.hidden // size.heads),
        linear_num_key_heads=max(1, size.kv_heads), linear_num_value_heads=max(1, size.heads),
        rope_parameters={"rope_type": "default", "rope_theta": 10_000_000.0, "partial_rotary_factor": 0.25,
                         "mrope_section": [rotary_half - 2 * (rotary_half // 3), rotary_half // 3, rotary_half // 3],
                         "mrope_interleaved": True},
    )
    vision = dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=size.hidden,
                  patch_size=16, spatial_merge_size=2, temporal_patch_size=2, num_position_embeddings=64)
    ids = {name: tokenizer.convert_tokens_to_ids(token) for name, token in (
        ("vision_start_token_id", "<|vision_start|>"), ("vision_end_token_id", "<|vision_end|>"),
        ("image_token_id", "<|image_pad|>"), ("video_token_id", "<|video_pad|>"))}
    return Qwen3_5Config(text_config=text, vision_config=vision, tie_word_embeddings=False, **ids)


def write_tiny_policy(folder: str | Path, size: TinySize | None = None, seed: int = 0,
                      corpus: list[str] | None = None, pieces: str | None = None):
    """Write a random-weight causal LM of ``size.arch`` into ``folder``, with a tokenizer trained on ``corpus``
    when given (see ``build_tokenizer``) and ``playprm_tiny.json`` naming its size; returns its config and
    tokenizer, from which a PRM of the same shape is built."""
    import torch
    from transformers import GenerationConfig

    size = size or TinySize()
    folder = Path(folder)
    tokenizer = build_tokenizer(size.vocab, VISION_TOKENS if size.arch == "qwen3.5" else [], corpus, pieces=pieces)
    config = tiny_config(tokenizer, size)

    torch.manual_seed(seed)
    if size.arch == "qwen3":
        from transformers import Qwen3ForCausalLM as model_class
    else:  # the hub's layout: the multimodal class, language model under model.language_model
        from transformers import Qwen3_5ForConditionalGeneration as model_class
    policy = model_class(config)
    text = config.get_text_config()
    policy.generation_config = GenerationConfig(
        eos_token_id=text.eos_token_id, pad_token_id=text.pad_token_id, do_sample=False
    )
    policy.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    (folder / "playprm_tiny.json").write_text(json.dumps(size.__dict__, indent=2))
    return config, tokenizer
