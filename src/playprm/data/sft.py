"""SFT dataset from clemcore results or Playpen's dataset: the winning episodes, one chat sample per LLM player.

Positive-only, as the model card's recipe: a sample is the whole dialogue one LLM player saw and said in a
successful episode (both sides of a two-player game are separate samples), alternating user / assistant,
starting with the user and ending with the player's last reply. The same samples come from results folders and
from Playpen's records of the same episodes (``playprm.data.playpen``); ``SampleFilter`` narrows them by outcome,
model, game and role as Playpen's SFT example does, and every sample carries Playpen's meta keys. With a tokenizer, samples longer than
``max_length`` tokens lose their oldest context from the left (the first, instruction, message and every
assistant turn stay); samples that do not fit even so are dropped and named in the card, never cut silently.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from playprm.atomic import write_json, write_jsonl, write_text
from playprm.data.card import (
    MAX_LISTED,
    front_matter,
    markdown_table,
    outcome_counts_table,
    skipped_section,
    split_note,
    split_table,
)
from playprm.data.playpen import PLAYPEN_OUTCOMES, PlaypenRecords
from playprm.data.records import CLEMCORE_TO_PLAYPEN_OUTCOME, instance_of, playpen_meta
from playprm.data.split import split_by_instance
from playprm.results import OUTCOMES, EpisodeRecord, ResultsScan, alternating

TRUNCATION_MARK = "[...]"  # replaces the cut-off start of a shortened context message
SUMMARY_FILE = "dataset_summary.json"  # the card's numbers, for the model card of a run trained on the data


@dataclass
class LengthCheck:
    """What fitting samples to ``max_length`` tokens of ``tokenizer`` did."""

    tokenizer: str
    max_length: int
    within: int = 0
    truncated: int = 0
    dropped: list[str] = field(default_factory=list)  # "game/experiment/episode player (N tokens)"


@dataclass(frozen=True)
class SampleFilter:
    """Which samples ``sft-data`` keeps, by their (Playpen) meta, as Playpen's SFT example filters its dataset
    (``meta["outcome"] == "success" and meta["model"] == ...``); an empty tuple keeps every value."""

    outcomes: tuple[str, ...] = ("success",)  # Playpen's words: success, failure, aborted
    models: tuple[str, ...] = ()
    games: tuple[str, ...] = ()
    roles: tuple[str, ...] = ()  # meta game_role

    def as_dict(self) -> dict[str, list[str]]:
        """``{meta key: allowed values}`` (``outcome``, ``model``, ``game``, ``game_role``)."""
        return {"outcome": list(self.outcomes), "model": list(self.models), "game": list(self.games),
                "game_role": list(self.roles)}


@dataclass
class SftDataset:
    """The samples of one ``sft-data`` run and what the card reports about them.

    ``unit`` is what was read: ``episodes`` (results folders) or ``records`` (Playpen's dataset, one per player and
    episode); ``seen`` holds ``(game, outcome)`` per unit read, the outcome in ``outcome_words`` (clemcore's for
    episodes, Playpen's for records) or None; ``left_out`` ``(where, why)`` per unreadable episode or unusable
    record; ``filtering`` ``(what a step keeps, samples left after it)``.
    """

    train: list[dict]
    validation: list[dict]
    source: dict
    unit: str
    outcome_words: tuple[str, ...]
    seen: list[tuple[str, str | None]]
    left_out: list[tuple[str, str]]
    sample_filter: SampleFilter = SampleFilter()
    sides_without_reply: int = 0
    filtering: list[tuple[str, int]] = field(default_factory=list)
    length: LengthCheck | None = None

    @property
    def outcomes_seen(self) -> Counter:
        return Counter(outcome for _, outcome in self.seen)

    @property
    def kept_outcome_words(self) -> list[str]:
        """The outcomes of ``outcome_words`` that the filter keeps."""
        return [word for word in self.outcome_words if _playpen_word(word) in self.sample_filter.outcomes]


def _playpen_word(outcome: str | None) -> str | None:
    return CLEMCORE_TO_PLAYPEN_OUTCOME.get(outcome, outcome)


def reply_dialogue(messages: list[dict]) -> list[dict]:
    """``messages`` as an SFT sample: alternating roles (same-role neighbours merged as clemcore does), from the
    first user message to the last assistant reply; empty when the player never replied to anything."""
    messages = alternating(messages)
    while messages and messages[0]["role"] == "assistant":  # a reply to nothing has no context to learn from
        messages.pop(0)
    while messages and messages[-1]["role"] == "user":  # the GM's closing words teach nothing
        messages.pop()
    return messages


def sft_samples(episodes: Sequence[EpisodeRecord], outcomes: Sequence[str] = ("success",)) -> tuple[list[dict], int]:
    """``(samples, sides_without_reply)``: a ``{"messages", "meta"}`` sample per (episode whose outcome, in
    Playpen's words, is in ``outcomes``; LLM player that replied at least once), and how many LLM players of
    those episodes never replied."""
    samples, sides_without_reply = [], 0
    for episode in episodes:
        if _playpen_word(episode.outcome) not in outcomes:
            continue
        for player in episode.llm_players():
            messages = reply_dialogue(episode.dialogue(player.name))
            if not messages:
                sides_without_reply += 1
                continue
            samples.append({"messages": messages, "meta": playpen_meta(episode, player)})
    return samples, sides_without_reply


def record_samples(records: Sequence[dict], outcomes: Sequence[str] = ("success",)) -> tuple[list[dict], int]:
    """``sft_samples`` for Playpen records (checked by ``playprm.data.playpen``): their meta is kept as it is."""
    samples, sides_without_reply = [], 0
    for record in records:
        if record["meta"]["outcome"] not in outcomes:
            continue
        messages = reply_dialogue(record["messages"])
        if not messages:
            sides_without_reply += 1
            continue
        samples.append({"messages": messages, "meta": dict(record["meta"])})
    return samples, sides_without_reply


def keep_matching(samples: list[dict], sample_filter: SampleFilter) -> tuple[list[dict], list[tuple[str, int]]]:
    """The samples whose meta model, game and game_role are allowed by ``sample_filter``, and the steps taken
    ``(what the step keeps, samples left)``."""
    steps = []
    for key, allowed in sample_filter.as_dict().items():
        if key == "outcome" or not allowed:
            continue
        samples = [sample for sample in samples if str(sample["meta"].get(key)) in allowed]
        steps.append((f"{key} in {', '.join(allowed)}", len(samples)))
    return samples, steps


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
    """The samples fitted to ``check.max_length`` (meta gains ``shortened_messages``, other keys are kept); tallies
    in ``check``."""
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
        kept.append({**sample, "messages": messages, "meta": {**sample["meta"], "shortened_messages": shortened}})
    return kept


def build_sft_dataset(
    scan: ResultsScan, *, sources: Sequence[Path] = (), sample_filter: SampleFilter = SampleFilter(),
    val_fraction: float, seed: int, tokenizer=None, tokenizer_name: str = "", max_length: int = 1024,
) -> SftDataset:
    """Samples of the episodes in ``scan`` that ``sample_filter`` keeps (the successful ones by default), fitted
    to ``max_length`` when a ``tokenizer`` (with a chat template) is given, split by instance."""
    samples, sides_without_reply = sft_samples(scan.episodes, sample_filter.outcomes)
    dataset = SftDataset(
        train=[], validation=[], source={"kind": "results-dir", "paths": [str(path) for path in sources]},
        unit="episodes", outcome_words=OUTCOMES, seen=[(e.game, e.outcome) for e in scan.episodes],
        left_out=[(str(path), reason) for path, reason in scan.skipped], sample_filter=sample_filter,
        sides_without_reply=sides_without_reply)
    return finish_samples(dataset, samples, val_fraction=val_fraction, seed=seed, tokenizer=tokenizer,
                   tokenizer_name=tokenizer_name, max_length=max_length)


def build_record_dataset(
    found: PlaypenRecords, *, sample_filter: SampleFilter = SampleFilter(), val_fraction: float, seed: int,
    tokenizer=None, tokenizer_name: str = "", max_length: int = 1024,
) -> SftDataset:
    """``build_sft_dataset`` for Playpen records (``playprm.data.playpen.read_playpen``)."""
    samples, sides_without_reply = record_samples(found.records, sample_filter.outcomes)
    left_out = [(found.examples[reason], f"{reason} ({count} records)") for reason, count in found.left_out.items()]
    dataset = SftDataset(
        train=[], validation=[], unit="records", outcome_words=PLAYPEN_OUTCOMES,
        source={"kind": found.kind, "paths": [found.source], "config": found.config, "split": found.split,
                "description": found.describe()},
        seen=[(str(r["meta"]["game"]), r["meta"]["outcome"]) for r in found.records], left_out=left_out,
        sample_filter=sample_filter, sides_without_reply=sides_without_reply)
    dataset.source["left_out_records"] = sum(found.left_out.values())
    return finish_samples(dataset, samples, val_fraction=val_fraction, seed=seed, tokenizer=tokenizer,
                   tokenizer_name=tokenizer_name, max_length=max_length)


def finish_samples(dataset: SftDataset, samples: list[dict], *, val_fraction: float, seed: int, tokenizer,
            tokenizer_name: str, max_length: int, found: str | None = None) -> SftDataset:
    """Filter, fit to length and split ``samples`` into ``dataset``; ``found`` names the first filtering step (what
    the samples are), by default the outcome filter's."""
    found = found or f"outcome in {', '.join(dataset.sample_filter.outcomes)}, with a reply"
    dataset.filtering = [(found, len(samples))]
    samples, steps = keep_matching(samples, dataset.sample_filter)
    dataset.filtering += steps
    if tokenizer is not None:
        dataset.length = LengthCheck(tokenizer=tokenizer_name, max_length=max_length)
        samples = fit_samples(samples, dataset.length, chat_token_counter(tokenizer))
    dataset.train, dataset.validation = split_by_instance(samples, instance_of, val_fraction=val_fraction,
                                                          seed=seed)
    return dataset


def write_sft_dataset(dataset: SftDataset, out: Path, *, val_fraction: float, seed: int) -> None:
    """Write ``out/train.jsonl``, ``out/validation.jsonl``, the ``out/README.md`` card and its numbers
    (``out/dataset_summary.json``, read by model cards), each atomically."""
    write_jsonl(out / "train.jsonl", dataset.train, allow_nan=False)
    write_jsonl(out / "validation.jsonl", dataset.validation, allow_nan=False)
    write_text(out / "README.md", sft_card(dataset, val_fraction=val_fraction, seed=seed))
    write_json(out / SUMMARY_FILE, sft_summary(dataset, val_fraction=val_fraction, seed=seed))


def sft_summary(dataset: SftDataset, *, val_fraction: float, seed: int) -> dict:
    """The card's numbers as data: source, what was seen per game and outcome, filters, samples, split, length."""
    seen: dict[str, Counter] = {}
    for game, outcome in dataset.seen:
        seen.setdefault(game, Counter())[outcome or "unknown"] += 1
    samples: dict[str, dict[str, int]] = {}
    for split, records in (("train", dataset.train), ("validation", dataset.validation)):
        for record in records:
            samples.setdefault(str(record["meta"]["game"]), {"train": 0, "validation": 0})[split] += 1
    length = dataset.length
    return {
        "dataset": "sft", "built_by": "playprm sft-data", "source": dataset.source, "unit": dataset.unit,
        "outcome_words": list(dataset.outcome_words), "kept_outcomes": dataset.kept_outcome_words,
        "seen": {game: dict(sorted(counts.items())) for game, counts in sorted(seen.items())},
        "left_out": len(dataset.left_out) if dataset.unit == "episodes" else dataset.source["left_out_records"],
        "filter": dataset.sample_filter.as_dict(), "filtering": [list(step) for step in dataset.filtering],
        "sides_without_reply": dataset.sides_without_reply,
        "samples": dict(sorted(samples.items())),
        "split": {"seed": seed, "val_fraction": val_fraction, "train": len(dataset.train),
                  "validation": len(dataset.validation), "train_instances": len(_instances(dataset.train)),
                  "validation_instances": len(_instances(dataset.validation))},
        "length": None if length is None else {"tokenizer": length.tokenizer, "max_length": length.max_length,
                                               "within": length.within, "shortened": length.truncated,
                                               "dropped": len(length.dropped)},
    }


def _instances(records: Sequence[dict]) -> set:
    return {instance_of(record) for record in records}


def sft_card(dataset: SftDataset, *, val_fraction: float, seed: int) -> str:
    """The dataset card: sources, episodes (or records) seen and filtered, samples per split, length handling."""
    outcomes = dataset.outcomes_seen
    kept = dataset.kept_outcome_words
    filtered = ", ".join(f"{outcomes[word]} {word}" for word in dataset.outcome_words if word not in kept)
    unit = dataset.unit
    if dataset.source["kind"] == "results-dir":
        origin = ", ".join(f"`{path}`" for path in dataset.source["paths"])
        what = ("One sample per (episode kept, LLM player): the dialogue the player saw and said, `messages` "
                "alternating user / assistant and ending with the player's last reply; `meta` holds Playpen's keys "
                "(game, experiment, game_id, player_name, game_role, model, outcome in Playpen's words, i.e. "
                "`failure` for clemcore's lose) and playprm's (episode, player, model_folder, game_id_source).")
        unknown = f" and {outcomes[None]} with no known outcome (unscored or ended with an error)"
    else:
        origin = dataset.source["description"]
        what = ("Playpen records, one per player and episode; a sample is a record's `messages` with same-role "
                "neighbours merged, from the first user message to the player's last reply, and its `meta` as it "
                "came (game, experiment, game_id, player_name, game_role, model, outcome).")
        unknown = ""
    parts = [
        front_matter({"train": "train.jsonl", "validation": "validation.jsonl"}),
        "# SFT dataset from clemcore game episodes",
        f"Built by `playprm sft-data` from {origin}. {what} The files load in Playpen as they are: "
        '`episode["meta"]["outcome"] == "success"` and `episode["meta"]["model"]` filter them as its dataset.',
        f"## {unit.capitalize()} seen",
        outcome_counts_table(dataset.seen, dataset.outcome_words, unit),
        f"Kept by outcome ({', '.join(kept) or 'none'}): {sum(outcomes[word] for word in kept)} {unit}. "
        f"Filtered out by outcome: {filtered}{unknown}. "
        f"LLM players of kept {unit} that never replied (no sample): {dataset.sides_without_reply}.",
        left_out_section(dataset),
        "## Filters",
        markdown_table(["step", "samples left"], dataset.filtering),
        "## Samples",
        split_table(dataset.train, dataset.validation),
        split_note(dataset.train, dataset.validation, seed=seed, val_fraction=val_fraction),
        length_section(dataset.length),
    ]
    return "\n\n".join(parts) + "\n"


def left_out_section(dataset: SftDataset) -> str:
    """Unreadable episodes (results folders) or unusable records (Playpen's dataset), counted and named."""
    if dataset.unit == "episodes":
        return skipped_section([(Path(where), why) for where, why in dataset.left_out])
    total = dataset.source["left_out_records"]
    lines = [f"Left out as unusable: {total} records."]
    lines += [f"- {why}, first at `{where}`" for where, why in dataset.left_out]
    return "\n".join(lines)


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
