"""``playprm make-tiny``: a tiny random-weight policy and PRM for offline CPU runs and tests."""

from __future__ import annotations

from pathlib import Path

from playprm.atomic import check_output_path
from playprm.errors import UsageError


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "make-tiny", help="write a tiny random-weight policy (DIR/policy) and PRM (DIR/prm)"
    )
    parser.add_argument("--out", required=True, type=Path, help="directory to write policy/ and prm/ into")
    parser.add_argument("--arch", choices=("qwen3.5", "qwen3"), default="qwen3.5",
                        help="qwen3.5 (default): the model card's layout, a multimodal checkpoint whose layers "
                             "repeat 3 linear-attention + 1 full-attention; qwen3: plain softmax attention")
    parser.add_argument("--layers", type=int, help="transformer layers (default 4 for qwen3.5, 2 for qwen3)")
    parser.add_argument("--hidden", type=int, default=64, help="hidden size (default 64)")
    parser.add_argument("--heads", type=int, default=4, help="attention heads (default 4)")
    parser.add_argument("--seed", type=int, default=0, help="weight initialisation seed")
    parser.add_argument("--tokenizer-data", type=Path, nargs="+", metavar="JSONL",
                        help="train the tokenizer on these chat files (records with 'messages', e.g. sft-data's "
                             "train.jsonl) instead of English words: lines of the games' prompts and grid rows "
                             "become single tokens (a model trained from scratch on those texts)")
    parser.add_argument("--tokenizer-pieces", metavar="REGEX|wordle|mastermind|guessthenumber",
                        help="with --tokenizer-data: pieces of text the tokenizer keeps apart from their neighbours "
                             "(a regular expression, or 'wordle': each word and each letter's feedback, such as "
                             "' r=yellow', its own piece), so that no token spans one and its context")
    parser.set_defaults(func=run)


def run(args) -> int:
    if (args.layers is not None and args.layers < 1) or args.hidden < 8 or args.heads < 1 or args.hidden % args.heads:
        raise UsageError("--layers and --heads must be >= 1 and --hidden a multiple of --heads (>= 8)")
    check_output_path(args.out, "--out")
    corpus = read_corpus(args.tokenizer_data) if args.tokenizer_data else None
    pieces = tokenizer_pieces(args.tokenizer_pieces, corpus)
    from playprm.models.tiny import TinySize
    from playprm.prm.tiny import make_tiny

    kv_heads = max(1, args.heads // 2)
    paths = make_tiny(
        args.out, TinySize(layers=args.layers, hidden=args.hidden, heads=args.heads, kv_heads=kv_heads, arch=args.arch),
        seed=args.seed, corpus=corpus, pieces=pieces,
    )
    print(f"policy: {paths['policy']} ({args.arch})\nprm:    {paths['prm']}")
    return 0


def tokenizer_pieces(value: str | None, corpus: list[str] | None) -> str | None:
    """The regular expression of ``--tokenizer-pieces`` (``wordle``: the game's own), checked before any model is
    written; ``UsageError`` without ``--tokenizer-data`` or for a pattern that does not compile."""
    if value is None:
        return None
    if corpus is None:
        raise UsageError("--tokenizer-pieces needs --tokenizer-data: it splits the texts the tokenizer is trained on")
    if value in ("wordle", "mastermind", "guessthenumber"):  # the game's own pieces (rules.TOKEN_PIECES of its folder)
        import importlib

        return importlib.import_module(f"playprm.games.builtin.{value}.rules").TOKEN_PIECES
    from tokenizers import Regex

    try:
        Regex(value)
    except Exception as error:  # noqa: BLE001 - the tokenizers library raises its own exception type
        raise UsageError(f"--tokenizer-pieces {value!r} is not a regular expression: {error}") from None
    return value


def read_corpus(paths: list[Path]) -> list[str]:
    """The message texts of chat JSONL files, or ``UsageError`` naming the file and line that is not one."""
    import json

    texts = []
    for path in paths:
        if not path.is_file():
            raise UsageError(f"--tokenizer-data {path} is not a file; pass JSONL chat files such as sft-data/train.jsonl")
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            try:
                texts += [m["content"] for m in json.loads(line)["messages"] if isinstance(m.get("content"), str)]
            except (ValueError, KeyError, TypeError, AttributeError):
                raise UsageError(f"--tokenizer-data {path} line {number} is not a chat record "
                                 '({"messages": [{"role": ..., "content": ...}, ...]})') from None
    if not texts:
        raise UsageError(f"--tokenizer-data {' '.join(map(str, paths))} holds no message text")
    return texts
