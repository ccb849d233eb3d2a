"""The reply format shared by the built-in games: one ``TAG: value`` line per field.

Parsing is lenient about what language models add around the answer (case, spaces, Markdown bold, a leading
``<think>…</think>`` block) and strict about the answer itself: a required tag that is missing or given twice
is a ``ParseError``, which the games treat as an abort, as clembench does.
"""

from __future__ import annotations

import re

from clemcore.clemgame import ParseError

_REASONING = re.compile(r"<think>.*?</think>", re.IGNORECASE | re.DOTALL)
_EDGE_PUNCTUATION = " \t.,;:!?\"'`*_()[]{}<>"


def strip_reasoning(response: str) -> str:
    """The response without ``<think>…</think>`` blocks (and without anything before a lone ``</think>``)."""
    text = _REASONING.sub("", response)
    if (
        "</think>" in text.lower()
    ):  # a template that opened the block in the prompt leaves only the closing tag
        text = text[text.lower().rindex("</think>") + len("</think>") :]
    return text


def tagged_values(response: str, tag: str) -> list[str]:
    """Values of every line of the form ``TAG: value`` (any case, Markdown emphasis and bullets tolerated)."""
    pattern = re.compile(
        rf"^[ \t>*_#`-]*{re.escape(tag)}[ \t*_`]*:[ \t*_`]*(.*?)[ \t*_`]*$", re.IGNORECASE | re.MULTILINE
    )
    return [match.group(1).strip() for match in pattern.finditer(strip_reasoning(response))]


def parse_tagged(response: str, tag: str) -> str:
    """The value of the one ``TAG:`` line of ``response``.

    Raises:
        ParseError: when there is no such line, more than one, or its value is empty.
    """
    values = tagged_values(response, tag)
    if not values:
        raise ParseError(f"the reply has no line starting with '{tag}:'", response, key="missing tag")
    if len(values) > 1:
        raise ParseError(
            f"the reply has {len(values)} lines starting with '{tag}:'; give exactly one",
            response,
            key="repeated tag",
        )
    if not values[0]:
        raise ParseError(f"the '{tag}:' line is empty", response, key="empty value")
    return values[0]


def clean_word(value: str) -> str:
    """``value`` lowercased and stripped of surrounding quotes, brackets and punctuation.

    ``'"Crane."'`` -> ``crane``.
    """
    return value.strip(_EDGE_PUNCTUATION).lower()
