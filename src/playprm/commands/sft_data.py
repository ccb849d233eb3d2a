"""``playprm sft-data``: winning episodes of clemcore results -> a chat SFT dataset, split by instance."""

from __future__ import annotations

from pathlib import Path

from playprm.errors import UsageError


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "sft-data",
        help="build OUT/train.jsonl, OUT/validation.jsonl and a card from successful episodes",
        description="One chat sample per (successful episode, LLM player) of clemcore results of either "
                    "generation; train and validation never share a game instance.",
    )
    parser.add_argument("--results-dir", required=True, nargs="+", type=Path, metavar="DIR",
                        help="clemcore results folders or model folders (several allowed)")
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

    check_dataset_inputs(args.results_dir, args.out, args.val_fraction)
    if args.max_length < 1:
        raise UsageError(f"--max-length must be a positive number of tokens, got {args.max_length}")
    tokenizer = load_chat_tokenizer(args.tokenizer) if args.tokenizer else None
    scan = read_sources(args.results_dir)

    from playprm.data.sft import build_sft_dataset, write_sft_dataset

    dataset = build_sft_dataset(scan, val_fraction=args.val_fraction, seed=args.seed, tokenizer=tokenizer,
                                tokenizer_name=str(args.tokenizer or ""), max_length=args.max_length)
    write_sft_dataset(dataset, args.out, sources=args.results_dir, val_fraction=args.val_fraction,
                      seed=args.seed)
    outcomes = dataset.episodes_by_outcome
    seen = f"{len(scan.episodes)} episodes seen ({outcomes['success']} successful), {len(scan.skipped)} skipped"
    if not dataset.train and not dataset.validation:
        why = "no successful episodes with an LLM reply" if not outcomes["success"] else \
            f"no sample fits --max-length {args.max_length}"
        print(f"{why} in {', '.join(map(str, args.results_dir))}: {seen}; "
              f"wrote empty train.jsonl and validation.jsonl to {args.out}")
        return 0
    print(f"wrote {len(dataset.train)} train and {len(dataset.validation)} validation samples to {args.out} "
          f"({seen})")
    if dataset.length and (dataset.length.truncated or dataset.length.dropped):
        print(f"{dataset.length.truncated} samples shortened and {len(dataset.length.dropped)} dropped to fit "
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
