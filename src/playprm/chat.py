"""Chat formatting shared by the policy, the PRM and the trainers, so that all of them see the same tokens.

A turn is scored and generated as ``prompt_ids(context) + response tokens + end-of-turn tokens``, where the prompt is
the model's own chat template applied with ``add_generation_prompt=True`` and ``chat_template_kwargs`` (e.g.
``{"enable_thinking": False}`` for Qwen3.5).
"""

from __future__ import annotations

_SENTINEL = "\u2063PLAYPRM_SENTINEL\u2063"


def clemcore_messages(messages: list[dict]) -> list[dict]:
    """The messages as clemcore's backends pass them to a model: an empty leading system message dropped and
    consecutive messages of one role joined by a blank line (``ensure_alternating_roles``, which every clemcore
    backend applies; a game's ``initial_prompt`` reaches the model this way, merged with the first context)."""
    plain = [{"role": m["role"], "content": m["content"]} for m in messages]
    leading_empty_system = bool(plain) and plain[0]["role"] == "system" and not plain[0]["content"]
    if not leading_empty_system and all(a["role"] != b["role"] for a, b in zip(plain, plain[1:])):
        return plain  # what clemcore returns for these; not importing it keeps it off the GPU benchmarks' path
    from clemcore.backends.utils import ensure_alternating_roles

    return ensure_alternating_roles(plain)


def prompt_text(tokenizer, messages: list[dict], chat_template_kwargs: dict | None = None) -> str:
    """The template-rendered context (as ``clemcore_messages``), ending with the generation prompt of the
    assistant."""
    return tokenizer.apply_chat_template(
        clemcore_messages(messages),
        tokenize=False,
        add_generation_prompt=True,
        **(chat_template_kwargs or {}),
    )


def prompt_ids(tokenizer, messages: list[dict], chat_template_kwargs: dict | None = None) -> list[int]:
    """Token ids of ``prompt_text``; special tokens come from the template, none are added."""
    return tokenizer(prompt_text(tokenizer, messages, chat_template_kwargs), add_special_tokens=False).input_ids


def history_length(tokenizer, messages: list[dict], prompt: list[int], chat_template_kwargs: dict | None = None) -> int:
    """How many leading tokens of ``prompt`` (``prompt_ids`` of ``messages``) the next turn's prompt repeats: the
    context rendered without the generation prompt, where that is a token prefix of ``prompt`` (else all of it).
    Templates may render the generation prompt differently once a reply follows it (Qwen3's empty think block
    with ``enable_thinking=False``), so the part after this point is not a safe prefix of the next turn."""
    history = tokenizer(
        tokenizer.apply_chat_template(clemcore_messages(messages), tokenize=False, add_generation_prompt=False,
                                      **(chat_template_kwargs or {})),
        add_special_tokens=False,
    ).input_ids
    return len(history) if 0 < len(history) <= len(prompt) and prompt[:len(history)] == history else len(prompt)


def end_of_turn_text(tokenizer) -> str:
    """What the template writes right after an assistant message (e.g. ``<|im_end|>``), found by rendering one."""
    try:
        rendered = tokenizer.apply_chat_template(
            [{"role": "user", "content": "x"}, {"role": "assistant", "content": _SENTINEL}], tokenize=False
        )
        suffix = rendered.split(_SENTINEL, 1)[1]
        end = suffix.split("\n", 1)[0].strip()
        if end:
            return end
    except Exception:  # templates that reject this probe fall back to the eos token
        pass
    return tokenizer.eos_token or ""


def end_of_turn_ids(tokenizer) -> list[int]:
    """Token ids that close an assistant turn; generation stops on the last of them."""
    return tokenizer(end_of_turn_text(tokenizer), add_special_tokens=False).input_ids


def response_ids(tokenizer, response: str) -> list[int]:
    """A reply as the policy would have produced it: its text tokens followed by the end-of-turn tokens."""
    return tokenizer(response, add_special_tokens=False).input_ids + end_of_turn_ids(tokenizer)
