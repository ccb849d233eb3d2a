"""The one exception type a user sees: a single line, exit code 2, raised before any model loads."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

logger = logging.getLogger(__name__)


class UsageError(Exception):
    """Bad input from the user (a flag, a file, a registry entry).

    The CLI prints ``playprm: error: <message>`` on one line and exits with code 2; the message should say
    what is wrong and how to fix it.
    """


@contextlib.contextmanager
def one_line_errors(what: str) -> Iterator[None]:
    """Turn any exception inside the block into ``UsageError("<what>: <type>: <first line>")``.

    For loading models: the traceback of a corrupt checkpoint runs through transformers' internals and says
    less than its last line. The full traceback is logged at debug level (``playprm -v``).
    """
    try:
        yield
    except UsageError:
        raise
    except Exception as error:
        from playprm.redact import redact

        logger.debug("%s", what, exc_info=True)
        lines = [line.strip() for line in str(error).splitlines() if line.strip()]
        cause = f"{type(error).__name__}: {lines[0][:300]}" if lines else type(error).__name__
        raise UsageError(redact(f"{what}: {cause}; rerun with -v for the traceback")) from error
