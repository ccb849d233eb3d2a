"""SFT dataset from clemcore results: the winning episodes, one chat sample per LLM player.

Positive-only, as the model card's recipe: a sample is the whole dialogue one LLM player saw and said in a
successful episode (both sides of a two-player game are separate samples), alternating user / assistant,
starting with the user and ending with the player's last reply. With a tokenizer, samples longer than
``max_length`` tokens lose their oldest context from the left (the first, instruction, message and every
assistant turn stay); samples that do not fit even so are dropped and named in the card, never cut silently.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from playprm.atomic import write_text
from playprm.data.card import (
    MAX_LISTED,
    front_matter,
    markdown_table,
    outcome_table,
    skipped_section,
    split_note,
    split_table,
)
from playprm.data.records import episode_meta, instance_of, write_jsonl
from playprm.data.split import split_by_instance
from playprm.results import OUTCOMES, Episode, ResultsScan

TRUNCATION_MARK = "[...]"  # replaces the cut-off start of a shortened context message


@dataclass
class LengthCheck:
    """What fitting samples to ``max_length`` tokens of ``tokenizer`` did."""

    tokenizer: str
    max_length: int
    within: int = 0
    truncated: int = 0
    dropped: list[str] = field(default_factory=list)  # "game/experiment/episode player (N tokens)"


@dataclass
class SftDataset:
    """The samples of one ``sft-data`` run and what the card reports about them."""

    train: list[dict]
    validation: list[dict]
    scan: ResultsScan
    sides_without_reply: int = 0
    length: LengthCheck | None = None

    @property
    def episodes_by_outcome(self) -> Counter:
        return Counter(episode.outcome for episode in self.scan.episodes)


def sft_samples(episodes: Sequence[Episode]) -> tuple[list[dict], int]:
    """``(samples, sides_without_reply)``: a ``{"messages", "meta"}`` sample per (successful episode, LLM
    player that replied at least once), and how many LLM players of successful episodes never replied."""
    samples, sides_without_reply = [], 0
    for episode in episodes:
        if episode.outcome != "success":
            continue
        for player in episode.llm_players():
            messages = episode.dialogue(player.name)
            while messages and messages[-1]["role"] == "user":  # the GM's closing words teach nothing
                messages.pop()
            if not messages:
                sides_without_reply += 1
                continue
            samples.append({"messages": messages, "meta": episode_meta(episode, player)})
    return samples, sides_without_reply


def fit_to_length(
    messages: list[dict], max_length: int, count_tokens: Callable[[list[dict]], int]
) -> tuple[list[dict], int] | None:
    """``(messages, shortened)`` fitting ``max_length`` tokens as ``count_tokens`` counts them, or None.

    Messages that fit are returned unchanged with ``shortened == 0``. Otherwise the user messages after the
    first are cut from the oldest on: emptied to ``TRUNCATION_MARK``, the last one cut only as far as
    needed (its most recent text kept). The first user message and all assistant messages are never
    touched, and roles keep alternating. None when those alone exceed ``max_length``.
    """
    if count_tokens(messages) <= max_length:
        return messages, 0
    fitted = copy.deepcopy(messages)
    user_indices = [index for index, message in enumerate(fitted) if message["role"] == "user"]
    for shortened, index in enumerate(user_indices[1:], start=1):
        content = fitted[index]["content"]
        fitted[index]["content"] = TRUNCATION_MARK
        if count_tokens(fitted) > max_length:
            continue
        # keep as much of this message's end as fits: binary search on the characters kept
        low, high = 0, len(content)
        while low < high:
            middle = (low + high + 1) // 2
            fitted[index]["content"] = TRUNCATION_MARK + content[-middle:]
            if count_tokens(fitted) <= max_length:
                low = middle
            else:
                high = middle - 1
        fitted[index]["content"] = TRUNCATION_MARK + (content[-low:] if low else "")
        return fitted, shortened
    return None


def chat_token_counter(tokenizer) -> Callable[[list[dict]], int]:
    """Count the tokens of a conversation rendered by ``tokenizer``'s chat template."""
    def count(messages: list[dict]) -> int:
        text = tokenizer.apply_chat_template(messages, tokenize=False)
        return len(tokenizer(text, add_special_tokens=False)["input_ids"])

    return count


def fit_samples(samples: list[dict], check: LengthCheck, count_tokens: Callable[[list[dict]], int]) -> list[dict]:
    """The samples fitted to ``check.max_length`` (meta gains ``shortened_messages``); tallies in ``check``."""
    kept = []
    for sample in samples:
        fitted = fit_to_length(sample["messages"], check.max_length, count_tokens)
        if fitted is None:
            meta = sample["meta"]
            check.dropped.append(f"{meta['game']}/{meta['experiment']}/{meta['episode']} {meta['player']} "
                                 f"({count_tokens(sample['messages'])} tokens)")
            continue
        messages, shortened = fitted
        if shortened:
            check.truncated += 1
        else:
            check.within += 1
        kept.append({"messages": messages, "meta": {**sample["meta"], "shortened_messages": shortened}})
    return kept


def build_sft_dataset(
    scan: ResultsScan, *, val_fraction: float, seed: int, tokenizer=None, tokenizer_name: str = "",
    max_length: int = 1024,
) -> SftDataset:
    """Samples of the successful episodes in ``scan``, fitted to ``max_length`` when a ``tokenizer`` (with a
    chat template) is given, split by instance."""
    samples, sides_without_reply = sft_samples(scan.episodes)
    length = None
    if tokenizer is not None:
        length = LengthCheck(tokenizer=tokenizer_name, max_length=max_length)
        samples = fit_samples(samples, length, chat_token_counter(tokenizer))
    train, validation = split_by_instance(samples, instance_of, val_fraction=val_fraction, seed=seed)
    return SftDataset(train=train, validation=validation, scan=scan, sides_without_reply=sides_without_reply,
                      length=length)


def write_sft_dataset(dataset: SftDataset, out: Path, *, sources: Sequence[Path], val_fraction: float,
                      seed: int) -> None:
    """Write ``out/train.jsonl``, ``out/validation.jsonl`` and the ``out/README.md`` card, each atomically."""
    write_jsonl(out / "train.jsonl", dataset.train)
    write_jsonl(out / "validation.jsonl", dataset.validation)
    write_text(out / "README.md", sft_card(dataset, sources=sources, val_fraction=val_fraction, seed=seed))


def sft_card(dataset: SftDataset, *, sources: Sequence[Path], val_fraction: float, seed: int) -> str:
    """The dataset card: sources, episodes seen and filtered, samples per split, length handling."""
    outcomes = dataset.episodes_by_outcome
    filtered = ", ".join(f"{outcomes[name]} {name}" for name in OUTCOMES[1:])
    parts = [
        front_matter({"train": "train.jsonl", "validation": "validation.jsonl"}),
        "# SFT dataset from clemcore game episodes",
        "Built by `playprm sft-data` from " + ", ".join(f"`{source}`" for source in sources) + ". "
        "One sample per (successful episode, LLM player): the dialogue the player saw and said, "
        "`messages` alternating user / assistant and ending with the player's last reply; `meta` names the "
        "game, experiment, game_id, episode, player, game_role, model and outcome.",
        "## Episodes seen",
        outcome_table(dataset.scan.episodes),
        f"Kept: {outcomes['success']} successful episodes. Filtered out by outcome: {filtered} and "
        f"{outcomes[None]} with no known outcome (unscored or ended with an error). "
        f"LLM players of successful episodes that never replied (no sample): {dataset.sides_without_reply}.",
        skipped_section(dataset.scan.skipped),
        "## Samples",
        split_table(dataset.train, dataset.validation),
        split_note(dataset.train, dataset.validation, seed=seed, val_fraction=val_fraction),
        length_section(dataset.length),
    ]
    return "\n\n".join(parts) + "\n"


def length_section(check: LengthCheck | None) -> str:
    """The card's account of samples longer than ``max_length`` and what was done with them."""
    if check is None:
        return ("## Length\n\nNo tokenizer was given (`--tokenizer`), so sample lengths were not checked; a "
                "trainer with a maximum length may cut long samples.")
    rows = [
        ["within max-length", check.within],
        ["over max-length, fitted by shortening the oldest context", check.truncated],
        ["over max-length even with only the first user message and all assistant turns: dropped",
         len(check.dropped)],
    ]
    lines = [
        "## Length",
        f"Tokens counted with the chat template of `{check.tokenizer}`, max-length {check.max_length}.",
        markdown_table(["samples", "count"], rows),
        f"Shortening empties (or, for the last one needed, cuts from the left) the user messages after the "
        f"first, oldest first, marking each with `{TRUNCATION_MARK}`; `meta.shortened_messages` counts them. "
        "The first user message (the instructions) and every assistant turn are kept whole.",
    ]
    if check.dropped:
        lines.append("Dropped samples (raise `--max-length` to keep them):\n" + "\n".join(
            f"- {name}" for name in check.dropped[:MAX_LISTED]))
        if len(check.dropped) > MAX_LISTED:
            lines.append(f"- … and {len(check.dropped) - MAX_LISTED} more")
    return "\n\n".join(lines)
