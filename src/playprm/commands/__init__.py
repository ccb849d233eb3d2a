"""One module per sub-command; each exposes ``register(subparsers)``. ``build_parser`` discovers them, so adding a
command never touches another file; ``playprm.cli`` runs the parsed command and the pipeline presets parse their
stages with the same parser (without importing the CLI)."""

from __future__ import annotations

import argparse
import importlib
import pkgutil

from playprm import __version__


def positive_int(raw: str) -> int:
    if not raw.isdigit() or int(raw) < 1:
        raise argparse.ArgumentTypeError(f"{raw!r} is not a positive whole number")
    return int(raw)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="playprm",
        description="PRM-guided policies for clembench dialogue games: collect, train, search, report.",
    )
    parser.add_argument("--version", action="version", version=f"playprm {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    parser.add_argument("--threads", type=positive_int, metavar="N",
                        help="CPU threads for every model this command runs (every stage of a pipeline); default: "
                             "chosen per stage by the model's size and the cores idle when it starts "
                             "(OMP_NUM_THREADS, where set, is the same setting)")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{module_info.name}")
        module.register(subparsers)
    return parser
