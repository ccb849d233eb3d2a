"""Turn-level weighted SFT data from rollout trees (``sft-data --weights``): value-weighted SFT, or advantage-weighted
regression in reinforcement-learning terms.

One example per policy turn of the trees that ``collect --branch-factor`` writes (``turns.jsonl``), losing episodes'
turns included: ``{"prompt": [the messages the player saw, ending with a user turn], "completion": [{"role":
"assistant", "content": its reply}], "weight", "value", "advantage", "n_rollouts", "meta"}``, TRL's conversational
prompt-completion format; ``train-sft`` trains on the completion only, its loss scaled by ``weight``.

``value`` (V) is the reply's Monte-Carlo value, the share of won leaves below it (``data.rollout_tree``), over
``n_rollouts`` leaves; ``advantage`` (A) is V minus the mean V of every reply to the same context, the reply itself
included (``data.prm.sibling_advantages``, what ``prm-data --labels advantage`` labels), null where the context has
no different reply (A is then taken as 0: nothing separates the reply from the policy's own average). The rules
(``WeightRule``):

- ``advantage``: min(exp(A / beta), max_weight), advantage-weighted regression (Peng et al. 2019);
- ``filtered``: 1 where A > 0, else 0, filtered behaviour cloning;
- ``value``: V itself, reward-weighted regression (CityUoL's "SFT weighted by each turn's value").

Turns a prover played (``collect --prover``) are not the policy's and give no example; nodes with no finished leaf
below have no value and give none. The split is by instance (``data.split``), as every other dataset of the runs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from playprm.atomic import write_json, write_jsonl, write_text
from playprm.data import card
from playprm.data.playpen import PLAYPEN_OUTCOMES
from playprm.data.prm import sibling_advantages, tree_records
from playprm.data.sft import (
    SUMMARY_FILE,
    SampleFilter,
    SftDataset,
    finish_samples,
    left_out_section,
    length_section,
    sft_summary,
)
from playprm.results import OUTCOMES, ResultsScan

WEIGHT_RULES = ("advantage", "filtered", "value")
DEFAULT_RULE = "value"  # the best on the small preset's validation splits (docs/training.md)
DEFAULT_BETA = 0.5  # a won against a lost sibling (A = +0.5 / -0.5): weights e and 1/e, 7.4 times apart
DEFAULT_MAX_WEIGHT = 20.0  # AWR's clip (Peng et al. 2019): no single turn outweighs twenty average ones


@dataclass(frozen=True)
class WeightRule:
    """How a turn's value V and advantage A become its weight (module doc); ``beta`` and ``max_weight`` are the
    ``advantage`` rule's temperature and clip."""

    name: str = DEFAULT_RULE
    beta: float = DEFAULT_BETA
    max_weight: float = DEFAULT_MAX_WEIGHT

    def weight(self, value: float, advantage: float) -> float:
        if self.name == "advantage":
            return min(math.exp(advantage / self.beta), self.max_weight)
        if self.name == "filtered":
            return 1.0 if advantage > 0 else 0.0
        return value

    def parameters(self) -> dict:
        """The rule and its parameters, as the card and ``dataset_summary.json`` record them."""
        if self.name == "advantage":
            return {"rule": self.name, "beta": self.beta, "max_weight": self.max_weight}
        return {"rule": self.name}

    def formula(self) -> str:
        return {"advantage": f"min(exp(A / {self.beta:g}), {self.max_weight:g})", "filtered": "1 if A > 0 else 0",
                "value": "V"}[self.name]

    def flags(self) -> str:
        """The ``sft-data`` flags that choose this rule."""
        extra = f" --beta {self.beta:g} --max-weight {self.max_weight:g}" if self.name == "advantage" else ""
        return f"--weights {self.name}{extra}"


@dataclass
class TreeCounts:
    """What the card reports about the rollout trees read."""

    trees: list[Path] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # unreadable turns.jsonl lines
    unfinished_nodes: int = 0
    unknown_leaves: int = 0
    provers: set = field(default_factory=set)
    without_siblings: int = 0  # turns whose context has no different reply: A = 0


def weighted_turn_samples(trees: Sequence[Path], scan: ResultsScan, rule: WeightRule,
                          counts: TreeCounts) -> list[dict]:
    """One sample per valued policy turn of ``trees``: ``messages`` (the context and the reply as the last assistant
    message, so the length fitting of ``data.sft`` applies), ``weight``, ``value``, ``advantage``, ``n_rollouts`` and
    the tree's ``meta``; grouped by context, in the order the trees first show them."""
    samples = []
    for tree in trees:
        found = tree_records(tree, scan, counts.skipped)
        counts.trees.append(tree)
        counts.unfinished_nodes += found.unfinished_nodes
        counts.unknown_leaves += found.unknown_leaves
        counts.provers |= found.provers
        for members, advantages in sibling_advantages(found.records):
            if advantages is None:
                counts.without_siblings += len(members)
            for index, record in enumerate(members):
                advantage = None if advantages is None else advantages[index]
                reply = {"role": "assistant", "content": record["response"]}
                samples.append({"messages": [*record["messages"], reply],
                                "weight": rule.weight(record["label"], advantage or 0.0), "value": record["label"],
                                "advantage": advantage, "n_rollouts": record["n_rollouts"], "meta": record["meta"]})
    return samples


def prompt_completion(sample: dict) -> dict:
    """A fitted sample as the record written (module doc): its last message becomes the completion."""
    return {"prompt": sample["messages"][:-1], "completion": sample["messages"][-1:],
            **{key: value for key, value in sample.items() if key != "messages"}}


def build_weighted_dataset(
    scan: ResultsScan, *, trees: Sequence[Path], sources: Sequence[Path], rule: WeightRule,
    sample_filter: SampleFilter = SampleFilter(outcomes=PLAYPEN_OUTCOMES), val_fraction: float, seed: int,
    tokenizer=None, tokenizer_name: str = "", max_length: int = 1024,
) -> tuple[SftDataset, TreeCounts]:
    """The weighted turn records of ``trees`` (``scan`` gives leaves without an outcome of their own theirs), kept by
    ``sample_filter``'s model, game and role, fitted to ``max_length`` when a ``tokenizer`` is given, split by
    instance."""
    counts = TreeCounts()
    samples = weighted_turn_samples(trees, scan, rule, counts)
    dataset = SftDataset(
        train=[], validation=[], source={"kind": "results-dir", "paths": [str(path) for path in sources]},
        unit="episodes", outcome_words=OUTCOMES, seen=[(e.game, e.outcome) for e in scan.episodes],
        left_out=[(str(path), reason) for path, reason in scan.skipped], sample_filter=sample_filter)
    finish_samples(dataset, samples, val_fraction=val_fraction, seed=seed, tokenizer=tokenizer,
                   tokenizer_name=tokenizer_name, max_length=max_length,
                   found="policy turns with a Monte-Carlo value")
    dataset.train = [prompt_completion(sample) for sample in dataset.train]
    dataset.validation = [prompt_completion(sample) for sample in dataset.validation]
    return dataset, counts


STATISTICS = ("mean", "min", "q25", "median", "q75", "max")  # of the weights, beside "examples" and "zero"


def weight_statistics(records: Sequence[dict]) -> dict:
    """``examples``, ``zero`` (how many weigh 0) and the ``STATISTICS`` of the records' weights (only ``examples``
    where there are none)."""
    weights = sorted(record["weight"] for record in records)
    if not weights:
        return {"examples": 0}

    def quantile(q: float) -> float:
        return weights[min(len(weights) - 1, int(q * len(weights)))]

    return {"examples": len(weights), "mean": sum(weights) / len(weights), "min": weights[0], "q25": quantile(0.25),
            "median": quantile(0.5), "q75": quantile(0.75), "max": weights[-1],
            "zero": sum(weight == 0 for weight in weights)}


def weights_summary(dataset: SftDataset, rule: WeightRule, counts: TreeCounts) -> dict:
    """The ``weights`` block of ``dataset_summary.json``: the rule, its parameters and the weights' spread."""
    return {**rule.parameters(), "formula": rule.formula(), "without_siblings": counts.without_siblings,
            "train": weight_statistics(dataset.train), "validation": weight_statistics(dataset.validation)}


def write_weighted_dataset(dataset: SftDataset, counts: TreeCounts, rule: WeightRule, out: Path, *,
                           val_fraction: float, seed: int) -> None:
    """``out/train.jsonl``, ``out/validation.jsonl``, the ``out/README.md`` card and ``out/dataset_summary.json``
    (the card's numbers, with a ``weights`` block), each written atomically."""
    write_jsonl(out / "train.jsonl", dataset.train, allow_nan=False)
    write_jsonl(out / "validation.jsonl", dataset.validation, allow_nan=False)
    write_text(out / "README.md", weighted_card(dataset, counts, rule, val_fraction=val_fraction, seed=seed))
    summary = sft_summary(dataset, val_fraction=val_fraction, seed=seed)
    summary.update(dataset="sft-weighted", built_by=f"playprm sft-data {rule.flags()}",
                   weights=weights_summary(dataset, rule, counts))
    write_json(out / SUMMARY_FILE, summary)


def weights_table(dataset: SftDataset) -> str:
    """The weights' spread per split."""
    rows = []
    for split, records in (("train", dataset.train), ("validation", dataset.validation)):
        stats = weight_statistics(records)
        spread = [f"{stats[name]:.3f}" for name in STATISTICS] if records else ["–"] * len(STATISTICS)
        rows.append([split, stats["examples"], *spread, stats.get("zero", 0)])
    return card.markdown_table(["split", "examples", "mean weight", "min", "25 %", "median", "75 %", "max",
                                "weight 0"], rows)


def weighted_card(dataset: SftDataset, counts: TreeCounts, rule: WeightRule, *, val_fraction: float,
                  seed: int) -> str:
    """The dataset card: the rule and its parameters, the weights' spread, trees, episodes, samples, length."""
    origin = ", ".join(f"`{path}`" for path in dataset.source["paths"])
    trees = ", ".join(f"`{tree}`" for tree in counts.trees) or "no turns.jsonl"
    rules = {"advantage": "advantage-weighted regression (Peng et al. 2019): replies better than their siblings "
                          "count more, worse ones less, none is dropped",
             "filtered": "filtered behaviour cloning: only replies better than the mean of their siblings are "
                         "trained on, each with weight 1",
             "value": "reward-weighted regression: each reply counts by its own chance of winning"}
    parts = [
        card.front_matter({"train": "train.jsonl", "validation": "validation.jsonl"}),
        "# Value-weighted SFT dataset from rollout trees",
        f"Built by `playprm sft-data {rule.flags()}` from {origin}. One example per policy turn, losing episodes' "
        "turns included: `prompt` (the messages the player saw), `completion` (its reply, one assistant message), "
        "`weight` (what `train-sft` scales the reply's loss by), `value` (V: the reply's Monte-Carlo value, the share "
        "of won leaves below it, over `n_rollouts` leaves), `advantage` (A: V minus the mean V of every reply to the "
        "same context, the reply itself included; null where the context has no different reply) and `meta`.",
        "## Weights",
        f"Rule `{rule.name}`, {rules[rule.name]}: weight = {rule.formula()}"
        + (f" (beta {rule.beta:g}, max-weight {rule.max_weight:g})" if rule.name == "advantage" else "") + ". "
        f"Turns whose context has no different reply take A = 0: {counts.without_siblings}.",
        weights_table(dataset),
        "## Rollout trees",
        f"Read from {trees}. Nodes without a finished leaf below (no value, no example): {counts.unfinished_nodes}. "
        f"Leaves with no known outcome (not counted): {counts.unknown_leaves}. Unreadable turns.jsonl lines: "
        f"{len(counts.skipped)}.",
        *[f"- `{where}`: {reason}" for where, reason in counts.skipped[:card.MAX_LISTED]],
    ]
    if counts.provers:
        parts.append("Turns played by " + ", ".join(f"`{name}`" for name in sorted(counts.provers))
                     + " (`collect --prover`) are not the policy's: they give no example, and every value is a "
                       "reply's chance of winning when that prover continues.")
    parts += [
        "## Episodes seen",
        card.outcome_counts_table(dataset.seen, dataset.outcome_words, dataset.unit),
        left_out_section(dataset),
        "## Filters",
        card.markdown_table(["step", "samples left"], dataset.filtering),
        "## Samples",
        card.split_table(dataset.train, dataset.validation),
        card.split_note(dataset.train, dataset.validation, seed=seed, val_fraction=val_fraction),
        length_section(dataset.length),
    ]
    return "\n\n".join(parts) + "\n"
