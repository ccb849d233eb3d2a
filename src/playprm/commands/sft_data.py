"""``playprm sft-data``: winning episodes of clemcore results or of Playpen's dataset -> a chat SFT dataset, split
by instance; with ``--weights``, every policy turn of rollout trees with a weight (value-weighted SFT)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

from playprm.data.playpen import HUB_CONFIG, PLAYPEN_OUTCOMES
from playprm.data.weighted_sft import DEFAULT_BETA, DEFAULT_MAX_WEIGHT, DEFAULT_RULE, WEIGHT_RULES
from playprm.errors import UsageError


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "sft-data",
        help="build OUT/train.jsonl, OUT/validation.jsonl and a card from successful episodes",
        description="One chat sample per (successful episode, LLM player) of clemcore results of either "
                    "generation, or per successful record of Playpen's dataset (--dataset); train and "
                    "validation never share a game instance. --weights: one example per policy turn of the "
                    "rollout trees of `playprm collect --branch-factor` (turns.jsonl), losing episodes' turns "
                    "included, each with a weight from its Monte-Carlo value (value-weighted SFT, for train-sft). "
                    "See docs/training.md.",
    )
    inputs = parser.add_mutually_exclusive_group(required=True)
    inputs.add_argument("--results-dir", nargs="+", type=Path, metavar="DIR",
                        help="clemcore results folders or model folders (several allowed)")
    inputs.add_argument("--dataset", metavar="SOURCE",
                        help="Playpen-format records: a hub id (colab-potsdam/playpen-data), a JSONL or Parquet "
                             "file, or a datasets.save_to_disk folder")
    parser.add_argument("--dataset-config", default=HUB_CONFIG,
                        help=f"config of a hub --dataset (default {HUB_CONFIG})")
    parser.add_argument("--split", default="train", help="split of a hub or save_to_disk --dataset (default train)")
    parser.add_argument("--outcome", nargs="+", choices=PLAYPEN_OUTCOMES, default=None,
                        help="keep episodes with these outcomes (Playpen's words; default success; not with "
                             "--weights, which keeps every turn)")
    parser.add_argument("--weights", choices=WEIGHT_RULES, default=None,
                        help="one weighted example per policy turn of the rollout trees in --results-dir: advantage "
                             "(min(exp(A/beta), max-weight), A = the reply's Monte-Carlo value minus its siblings' "
                             "mean), filtered (1 where A > 0, else 0) or value (the Monte-Carlo value itself); "
                             f"the presets use {DEFAULT_RULE}, the best on their validation splits")
    parser.add_argument("--beta", type=float, default=None,
                        help=f"temperature of --weights advantage (default {DEFAULT_BETA:g})")
    parser.add_argument("--max-weight", type=float, default=None,
                        help=f"clip of --weights advantage (default {DEFAULT_MAX_WEIGHT:g})")
    parser.add_argument("--model", nargs="+", default=[], metavar="NAME",
                        help="keep only samples whose meta model is one of these (as Playpen's SFT example)")
    parser.add_argument("--game", nargs="+", default=[], metavar="NAME", help="keep only these games")
    parser.add_argument("--role", nargs="+", default=[], metavar="ROLE",
                        help="keep only these game roles (meta game_role, e.g. 'Word Guesser')")
    parser.add_argument("--out", required=True, type=Path, help="folder for train.jsonl, validation.jsonl, README.md")
    parser.add_argument("--tokenizer", default=None,
                        help="local Hugging Face tokenizer folder (or hub id) whose chat template measures length")
    parser.add_argument("--max-length", type=int, default=1024,
                        help="token limit per sample with --tokenizer (default 1024)")
    parser.add_argument("--val-fraction", type=float, default=0.1,
                        help="share of instances held out for validation (default 0.1)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the instance split (default 0)")
    parser.set_defaults(func=run)


def run(args) -> int:
    from playprm.data.sources import check_dataset_inputs, read_sources

    check_dataset_inputs(args.results_dir or [], args.out, args.val_fraction)
    if args.max_length < 1:
        raise UsageError(f"--max-length must be a positive number of tokens, got {args.max_length}")
    rule = weight_rule(args)
    tokenizer = load_chat_tokenizer(args.tokenizer) if args.tokenizer else None
    if rule is not None:
        return run_weighted(args, rule, tokenizer)
    args.outcome = args.outcome or ["success"]

    from playprm.data.sft import SampleFilter, build_record_dataset, build_sft_dataset, write_sft_dataset

    sample_filter = SampleFilter(outcomes=tuple(args.outcome), models=tuple(args.model), games=tuple(args.game),
                                 roles=tuple(args.role))
    length = {"tokenizer": tokenizer, "tokenizer_name": str(args.tokenizer or ""), "max_length": args.max_length}
    if args.dataset:
        from playprm.data.playpen import read_playpen

        found = read_playpen(args.dataset, config=args.dataset_config, split=args.split)
        for reason, count in found.left_out.items():
            print(f"left out {count} records: {reason} (first at {found.examples[reason]})", file=sys.stderr)
        dataset = build_record_dataset(found, sample_filter=sample_filter, val_fraction=args.val_fraction,
                                       seed=args.seed, **length)
        where = args.dataset
        seen = f"{found.seen} records read ({len(found.records)} usable)"
    else:
        scan = read_sources(args.results_dir)
        dataset = build_sft_dataset(scan, sources=args.results_dir, sample_filter=sample_filter,
                                    val_fraction=args.val_fraction, seed=args.seed, **length)
        where = ", ".join(map(str, args.results_dir))
        seen = f"{len(scan.episodes)} episodes seen, {len(scan.skipped)} skipped"
        from playprm.data.card import no_outcome_line

        gaps = no_outcome_line(scan.episodes)
        if gaps:
            print(gaps, file=sys.stderr)
    write_sft_dataset(dataset, args.out, val_fraction=args.val_fraction, seed=args.seed)
    kept = sum(dataset.outcomes_seen[word] for word in dataset.kept_outcome_words)
    wanted = "successful" if sample_filter.outcomes == ("success",) else f"{'/'.join(sample_filter.outcomes)}"
    seen += f", {kept} {wanted}"
    if not dataset.train and not dataset.validation:
        if not kept:
            why = f"no {wanted} {dataset.unit}"
        elif dataset.filtering[-1][1] == 0:
            why = "no sample with an LLM reply passes the filters"
        else:
            why = f"no sample fits --max-length {args.max_length}"
        print(f"{why} in {where}: {seen}; wrote empty train.jsonl and validation.jsonl to {args.out}")
        return 0
    print(f"wrote {len(dataset.train)} train and {len(dataset.validation)} validation samples to {args.out} "
          f"({seen})")
    if dataset.length and (dataset.length.truncated or dataset.length.dropped):
        print(f"{dataset.length.truncated} samples shortened and {len(dataset.length.dropped)} dropped to fit "
              f"--max-length {args.max_length}; see {args.out / 'README.md'}")
    return 0


def weight_rule(args):
    """The ``WeightRule`` that ``--weights`` (with ``--beta``, ``--max-weight``) names, None without ``--weights``;
    flags that do not fit it are a ``UsageError``."""
    from playprm.data.weighted_sft import WeightRule

    if args.weights is None:
        for flag, value in (("--beta", args.beta), ("--max-weight", args.max_weight)):
            if value is not None:
                raise UsageError(f"{flag} sets --weights advantage; add --weights advantage or drop {flag}")
        return None
    if args.dataset:
        raise UsageError("--weights needs rollout trees (turns.jsonl), which Playpen's records do not hold; give "
                         "--results-dir of a `playprm collect --branch-factor` run instead of --dataset")
    if args.outcome:
        raise UsageError("--outcome does not apply with --weights: every policy turn is kept, losing episodes' turns "
                         "with their low weight; drop --outcome")
    if args.weights != "advantage" and (args.beta is not None or args.max_weight is not None):
        raise UsageError(f"--beta and --max-weight set --weights advantage, not --weights {args.weights}; drop them")
    rule = WeightRule(args.weights, DEFAULT_BETA if args.beta is None else args.beta,
                      DEFAULT_MAX_WEIGHT if args.max_weight is None else args.max_weight)
    if not (rule.beta > 0 and math.isfinite(rule.beta)):
        raise UsageError(f"--beta must be a positive number, got {rule.beta}; e.g. {DEFAULT_BETA:g}")
    if not rule.max_weight > 0:
        raise UsageError(f"--max-weight must be positive, got {rule.max_weight}; e.g. {DEFAULT_MAX_WEIGHT:g}")
    return rule


def run_weighted(args, rule, tokenizer) -> int:
    """``sft-data --weights``: the weighted turn records of the rollout trees in ``--results-dir``."""
    from playprm.data.prm import find_rollout_trees
    from playprm.data.sft import SampleFilter
    from playprm.data.sources import read_sources
    from playprm.data.weighted_sft import build_weighted_dataset, write_weighted_dataset

    folders = ", ".join(map(str, args.results_dir))
    trees = find_rollout_trees(args.results_dir)
    if not trees:
        raise UsageError(f"--weights needs a rollout tree, but no turns.jsonl is in {folders} or its model folders; "
                         "`playprm collect --branch-factor 2` writes <results>/<model-pair>/turns.jsonl")
    scan = read_sources(args.results_dir, require_episodes=False)  # a tree alone can be valued
    sample_filter = SampleFilter(outcomes=PLAYPEN_OUTCOMES, models=tuple(args.model), games=tuple(args.game),
                                 roles=tuple(args.role))
    dataset, counts = build_weighted_dataset(
        scan, trees=trees, sources=args.results_dir, rule=rule, sample_filter=sample_filter,
        val_fraction=args.val_fraction, seed=args.seed, tokenizer=tokenizer, tokenizer_name=str(args.tokenizer or ""),
        max_length=args.max_length)
    write_weighted_dataset(dataset, counts, rule, args.out, val_fraction=args.val_fraction, seed=args.seed)
    for where, reason in counts.skipped:
        print(f"skipped {where}: {reason}", file=sys.stderr)
    records = dataset.train + dataset.validation
    if not records:
        print(f"no policy turn with a Monte-Carlo value in {folders} passes the filters; wrote empty train.jsonl and "
              f"validation.jsonl to {args.out}")
        return 0
    zero = sum(record["weight"] == 0 for record in records)
    mean = sum(record["weight"] for record in records) / len(records)
    print(f"wrote {len(dataset.train)} train and {len(dataset.validation)} validation turns to {args.out} "
          f"({rule.flags()}: mean weight {mean:.3f}, {zero} of weight 0; {len(trees)} rollout trees, "
          f"{len(scan.episodes)} episodes seen)")
    if dataset.length and (dataset.length.truncated or dataset.length.dropped):
        print(f"{dataset.length.truncated} turns shortened and {len(dataset.length.dropped)} dropped to fit "
              f"--max-length {args.max_length}; see {args.out / 'README.md'}")
    return 0


def load_chat_tokenizer(name: str):
    """A tokenizer with a chat template, or ``UsageError`` saying why it cannot be used."""
    from transformers import AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(name)
    except (OSError, ValueError) as error:
        raise UsageError(f"--tokenizer {name} cannot be loaded ({str(error).splitlines()[0]}); pass a local "
                         "Hugging Face model or tokenizer folder, e.g. the policy/ written by make-tiny") from None
    if not getattr(tokenizer, "chat_template", None):
        raise UsageError(f"--tokenizer {name} has no chat template; pass the tokenizer of the chat model "
                         "you will fine-tune")
    return tokenizer
