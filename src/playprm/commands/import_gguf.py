"""``playprm import-gguf``: a llama.cpp ``.gguf`` checkpoint as a normal Hugging Face model folder.

Every command also takes the ``.gguf`` file itself; the folder is for what loads a model by folder: clemcore's
``clem run``, vLLM without GGUF support, other tools, and repeated runs that should not de-quantise each time.
"""

from __future__ import annotations

from pathlib import Path

from playprm.models import gguf


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "import-gguf", help="write a .gguf checkpoint as a Hugging Face model folder (de-quantised weights, "
                            "tokenizer, chat template)")
    parser.add_argument("file", type=Path, metavar="FILE", help="the .gguf file")
    parser.add_argument("--out", required=True, type=Path, help="the new model folder (must not exist or be empty)")
    parser.add_argument("--dtype", choices=gguf.DTYPES, default="fp32",
                        help="weight dtype of the folder: fp32 (default: what playprm runs on CPU) or bf16 "
                             "(half the size; what it runs on GPU)")
    parser.set_defaults(func=run)


def run(args) -> int:
    source = gguf.check_file(args.file, flag="FILE")
    gguf.check_out(args.out)
    out = gguf.import_folder(source, args.out, dtype=args.dtype)
    print(f"model folder: {out} ({args.dtype}, from {source.name}); use it as --policy-model / --model {out}")
    return 0
