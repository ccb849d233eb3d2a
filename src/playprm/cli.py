"""The ``playprm`` command line: parse, validate, hand over to the parts that do the work.

Every sub-command lives in its own module under ``playprm.commands`` and exposes
``register(subparsers)``; this file only discovers them, so adding a command never touches it.
Command modules import heavy libraries (torch, transformers) inside their run functions, which keeps
``--help`` and input validation fast.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import pkgutil
import sys

from playprm import __version__, commands
from playprm.errors import UsageError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="playprm",
        description="PRM-guided policies for clembench dialogue games: collect, train, search, report.",
    )
    parser.add_argument("--version", action="version", version=f"playprm {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{commands.__name__}.{module_info.name}")
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    if not args.verbose:  # clemcore logs every game load at INFO to the console
        for name in ("clemcore", "clemcore.run", "clemcore.cli"):
            logging.getLogger(name).setLevel(logging.WARNING)
    try:
        result = args.func(args)
    except UsageError as error:
        print(f"playprm {args.command}: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"playprm {args.command}: interrupted; rerun the same command to resume", file=sys.stderr)
        return 130
    return int(result or 0)


if __name__ == "__main__":
    sys.exit(main())
