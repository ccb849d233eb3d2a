"""What clemcore's backends do to a decoded reply before the game sees it, mirrored once for every playprm mode.

A game's outcome depends on the exact string it receives: clemcore's ``huggingface_local`` backend strips the
reply and cuts the end-of-sequence text with the entry's ``eos_to_cull`` regex, its OpenAI backends strip it.
playprm decodes replies itself (transformers, vLLM) or takes a server's text, so each policy keeps the decoded
text as ``Candidate.raw`` and hands ``reply_rule(spec, tokenizer)(raw)`` to the PRM and the game as
``Candidate.text`` — in greedy, best-of-N, beam search, DVTS and lookahead-free beam alike, because all of them
get their candidates from the policy. Read from clemcore 3.7.2 (``clemcore.backends.huggingface_local_api``,
``clemcore.backends.openai_api``); the registry's entries follow the same clemcore version range.

``move`` and ``repeats`` say when two replies are the same move: the episode logs candidates that repeat a reply
the game rejected, and best-of-n's selection skips them.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from playprm.errors import UsageError
from playprm.models.base import Candidate, PolicySpec, printable

ReplyRule = Callable[[str], str]


def huggingface_local(raw: str, *, eos_to_cull: str, pad_token: str | None,
                      output_split_prefix: str | None = None) -> str:
    """The reply text clemcore's ``huggingface_local`` sends to the game for a decoded reply ``raw``.

    Mirrors ``split_and_clean_batch_outputs`` (clemcore 3.7.2, huggingface_local_api.py), step by step and in
    its order: strip; keep what follows the last ``output_split_prefix``; drop every pad-token string when the
    reply starts or ends with one; then ``re.sub(eos_to_cull, "", ...)`` with no strip after it. ``raw`` is
    what clemcore's ``batch_decode`` of the generated tokens gives (special tokens kept, the end-of-sequence
    token included when it was generated). clemcore pads a batch's finished rows with pad tokens, which makes
    its own pad rule depend on the batch in one case (a pad-token string generated inside a reply); this is
    the batch-of-one answer.
    """
    text = raw.strip()
    if output_split_prefix and output_split_prefix in text:
        text = text.rsplit(output_split_prefix, maxsplit=1)[1]
    if pad_token and (text.startswith(pad_token) or text.endswith(pad_token)):
        text = text.replace(pad_token, "")
    return re.sub(eos_to_cull, "", text)


def openai_compatible(raw: str) -> str:
    """clemcore's OpenAI backends (``openai``, ``openai_compatible``): ``(message.content or "").strip()``
    (``OpenAI.generate_response``, clemcore 3.7.2, openai_api.py)."""
    return (raw or "").strip()


def unchanged(raw: str) -> str:
    """Scripted policies write the game's own format: nothing to mirror."""
    return raw


def default_eos_to_cull(tokenizer) -> str:
    """The cull pattern for a model given by path (no registry entry): the texts generation stops on, which
    clemcore's registry entries spell as e.g. ``<\\|im_end\\|>``."""
    from playprm import chat

    texts = {chat.end_of_turn_text(tokenizer), tokenizer.eos_token or ""} - {""}
    return "|".join(re.escape(text) for text in sorted(texts, key=lambda t: (-len(t), t))) or "$^"


def reply_rule(spec: PolicySpec, tokenizer=None) -> ReplyRule:
    """The post-processing of the clemcore backend ``spec`` stands for: ``huggingface_local`` for the
    transformers and vLLM engines, the OpenAI backends' strip for servers, nothing for scripted policies.

    ``eos_to_cull`` and ``output_split_prefix`` come from the registry entry's ``model_config``; an entry
    without ``eos_to_cull`` (clemcore itself would fail on it) and a model given by path cull what generation
    stops on (``default_eos_to_cull``).
    """
    if spec.backend == "scripted":
        return unchanged
    if spec.backend == "openai":
        return openai_compatible
    config = dict((spec.registry_entry or {}).get("model_config") or {})
    if config.get("cot_output"):
        raise UsageError(f"model {spec.name!r}: model_config.cot_output (clemcore's reasoning split) is not "
                         f"mirrored by playprm; drop it or play this model with `clem run`")
    eos_to_cull = config.get("eos_to_cull")
    if eos_to_cull is None:
        if tokenizer is None:
            raise ValueError("reply_rule needs the tokenizer when the entry has no eos_to_cull")
        eos_to_cull = default_eos_to_cull(tokenizer)
    try:
        re.compile(eos_to_cull)
    except (re.error, TypeError) as error:
        raise UsageError(f"model {spec.name!r}: model_config.eos_to_cull {eos_to_cull!r} is not a regular "
                         f"expression ({error})") from None
    pad_token = getattr(tokenizer, "pad_token", None) if tokenizer is not None else None
    prefix = config.get("output_split_prefix")

    def rule(raw: str) -> str:
        return huggingface_local(raw, eos_to_cull=eos_to_cull, pad_token=pad_token, output_split_prefix=prefix)

    return rule


def finish(outputs: list[list[Candidate]], rule: ReplyRule) -> list[list[Candidate]]:
    """Every candidate's ``raw`` set (the decoded text, printable) and its ``text`` replaced by ``rule(raw)``."""
    for group in outputs:
        for candidate in group:
            candidate.raw = printable(candidate.text if candidate.raw is None else candidate.raw)
            candidate.text = printable(rule(candidate.raw))
    return outputs


def move(text: str) -> str:
    """What makes two replies the same move, for the guard against rejected replies and for pooling: the text
    without outer spaces."""
    return text.strip()


def repeats(texts: list[str], rejected: list[str] | None) -> list[int]:
    """Indices of ``texts`` that repeat one of the ``rejected`` replies (the episode logs them; selection
    skips them)."""
    refused = {move(text) for text in rejected or ()}
    return [i for i, text in enumerate(texts) if move(text) in refused]
