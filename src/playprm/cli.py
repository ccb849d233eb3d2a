"""The ``playprm`` command line: parse, validate, hand over to the parts that do the work.

Every sub-command lives in its own module under ``playprm.commands`` and exposes
``register(subparsers)``; ``commands.build_parser`` discovers them, so adding a command never touches this file.
Command modules import heavy libraries (torch, transformers) inside their run functions, which keeps
``--help`` and input validation fast.
"""

from __future__ import annotations

import logging
import os
import sys
import warnings
from pathlib import Path

from playprm.commands import build_parser
from playprm.errors import UsageError
from playprm.redact import install_log_redaction, redact


class _Console(logging.StreamHandler):
    """A handler that writes to whatever ``sys.stderr`` is when a record comes (tests and tqdm swap it)."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value):
        pass


CLEMBENCH_LOG = "clembench.log"


class _RunLog(logging.FileHandler):
    """clemcore's ``clembench.log`` (its format, INFO and up), in the folder of the run a command plays: opened at
    the first record only (a command that logs nothing leaves no file) and its folder made then."""

    def __init__(self, folder: Path):
        super().__init__(Path(folder) / CLEMBENCH_LOG, encoding="utf8", delay=True)
        self.setFormatter(logging.Formatter("%(asctime)s - %(name)s - %(levelname)s - %(message)s"))

    def _open(self):
        Path(self.baseFilename).parent.mkdir(parents=True, exist_ok=True)
        return super()._open()


def _move_clembench_log(run_folder: Path | None, created: bool) -> None:
    # clemcore's logging.yaml opens clembench.log in the working directory on import, for every command: the file
    # handler goes, and the empty file it made goes where this process made it; a command that plays a run (its
    # parser's ``run_log`` names the argument holding the run's folder) logs there instead
    root = logging.getLogger()
    for handler in list(root.handlers):
        if isinstance(handler, logging.FileHandler) and Path(handler.baseFilename).name == CLEMBENCH_LOG:
            root.removeHandler(handler)
            handler.close()
            path = Path(handler.baseFilename)
            if created and not isinstance(handler, _RunLog) and path.is_file() and path.stat().st_size == 0:
                path.unlink()
    if run_folder is not None:
        root.addHandler(_RunLog(run_folder))


class _DropNotice(logging.Filter):
    """Drops the records whose message starts with ``start``; every other record passes."""

    def __init__(self, start: str):
        super().__init__()
        self.start = start

    def filter(self, record):
        return not record.getMessage().startswith(self.start)


DEEPSPEED_CPU_NOTICE = "Setting accelerator to CPU"


def quiet_library_notices() -> None:
    """Silence, by source and message, two notices every stage printed that a user can do nothing about: DeepSpeed's
    "Setting accelerator to CPU ..." when it is imported on a machine without CUDA (the trainers say what they do
    on CPU in their own line), and transformers' FutureWarning that ``is_gradient_checkpointing`` is deprecated,
    which TRL and PEFT read, not playprm. Needs none of these libraries imported; idempotent."""
    warnings.filterwarnings("ignore", message="`is_gradient_checkpointing` is deprecated", category=FutureWarning,
                            module=r"transformers\.modeling_utils")
    deepspeed = logging.getLogger("DeepSpeed")  # deepspeed.utils.logging's logger, the one its notice goes to
    if not any(isinstance(f, _DropNotice) and f.start == DEEPSPEED_CPU_NOTICE for f in deepspeed.filters):
        deepspeed.addFilter(_DropNotice(DEEPSPEED_CPU_NOTICE))


def configure_logging(verbose: bool, run_folder: Path | None = None) -> None:
    """Warnings (every record with -v) to stderr with API keys masked, and clemcore's ``clembench.log`` in
    ``run_folder`` (the run a command plays; None: no log file)."""
    log_existed = Path(CLEMBENCH_LOG).exists()
    imported = "clemcore" in sys.modules
    import clemcore  # noqa: F401 - importing it replaces the root handlers (its logging.yaml), so it goes first

    _move_clembench_log(run_folder, created=not imported and not log_existed)
    install_log_redaction()
    quiet_library_notices()
    root = logging.getLogger()
    console = next((h for h in root.handlers if isinstance(h, _Console)), None)
    if console is None:  # main() may run more than once in a process (tests): one console handler
        console = _Console()
        console.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        root.addHandler(console)
    console.setLevel(logging.DEBUG if verbose else logging.WARNING)
    if verbose:
        root.setLevel(logging.DEBUG)
    for logger in list(logging.Logger.manager.loggerDict.values()):  # clemcore's dictConfig disabled them
        if isinstance(logger, logging.Logger) and logger.name.startswith("playprm"):
            logger.disabled = False


def close_process_group() -> None:
    """Destroy torch.distributed's process group if a command (a trainer under torchrun) left one open: a rank that
    exits with gloo's group still alive can abort at interpreter shutdown ("terminate called without an active
    exception", SIGABRT) after its work is done. Looks torch up only if the command imported it."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.distributed.is_available() and torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    if args.threads:  # choose_cpu_threads reads it in every stage, as the user's own OMP_NUM_THREADS
        os.environ["OMP_NUM_THREADS"] = str(args.threads)
    run_log = getattr(args, "run_log", None)  # a command that plays names the argument holding its run's folder
    configure_logging(args.verbose, getattr(args, run_log) if run_log else None)
    if not args.verbose:  # clemcore logs every game load at INFO to the console
        for name in ("clemcore", "clemcore.run", "clemcore.cli"):
            logging.getLogger(name).setLevel(logging.WARNING)
    try:
        result = args.func(args)
        close_process_group()
    except UsageError as error:
        print(f"playprm {args.command}: error: {redact(str(error))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"playprm {args.command}: interrupted; rerun the same command to resume", file=sys.stderr)
        return 130
    return int(result or 0)


if __name__ == "__main__":
    sys.exit(main())
