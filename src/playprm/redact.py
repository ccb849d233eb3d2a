"""Keep API keys out of everything playprm writes: error files, log files, console messages.

A server that echoes the bearer key in its error body (some OpenAI-compatible servers do, on a 401) would
otherwise put the key into ``error.json`` and ``clembench.log``. ``redact`` replaces, in any text, every key a
backend registered with ``remember_secret``, the values of environment variables named like keys
(``*_API_KEY``, ``*_TOKEN``, ``*_SECRET``, ``*_PASSWORD``) and whatever follows ``Authorization:``,
``api_key=`` or ``Bearer``. ``install_log_redaction`` passes every log record through ``redact`` as it is
created, so no handler (the console, clemcore's ``clembench.log``, one added later) ever sees a key.
"""

from __future__ import annotations

import logging
import os
import re

MASK = "[REDACTED]"
_MIN_SECRET = 8  # shorter values ("EMPTY", "1") are placeholders, and masking them would garble every text

_registered: set[str] = set()
_SECRET_ENV = re.compile(r"(?:^|_)(?:API_?KEY|TOKEN|SECRET|PASSWORD)$", re.IGNORECASE)
_LABELLED = re.compile(  # Authorization: Bearer x / "api_key": "x" / x-api-key=x (not one already masked)
    r"""(?i)(\b(?:proxy-)?authorization|\bx-api-key|\bapi[_-]?key)(["']?\s*[:=]\s*["']?)"""
    r"""(?!(?:(?:bearer|basic|token)\s+)?\[REDACTED\])(?:(?:bearer|basic|token)\s+)?[^\s"',;}\]]+""")
_BEARER = re.compile(r"\b(Bearer\s+)[\w.~+/=-]{8,}")


def remember_secret(value: str | None) -> None:
    """Mask ``value`` (an API key a backend just read) wherever it appears from now on."""
    if value and len(value) >= _MIN_SECRET:
        _registered.add(value)


def _secrets() -> list[str]:
    from_env = {value for name, value in os.environ.items() if _SECRET_ENV.search(name) and len(value) >= _MIN_SECRET}
    return sorted(_registered | from_env, key=len, reverse=True)  # longest first: a key inside another


def redact(text: str) -> str:
    """``text`` with every known key and every Authorization / Bearer / api_key value replaced by ``MASK``."""
    for secret in _secrets():
        text = text.replace(secret, MASK)
    text = _LABELLED.sub(lambda match: f"{match[1]}{match[2]}{MASK}", text)
    return _BEARER.sub(lambda match: f"{match[1]}{MASK}", text)


def redact_record(record: logging.LogRecord) -> logging.LogRecord:
    """Mask keys in a log record's message and traceback (left as it is when there is nothing to mask)."""
    try:
        message = record.getMessage()
    except Exception:  # a malformed record: let the handler report it as logging always does
        return record
    clean = redact(message)
    if clean != message:
        record.msg, record.args = clean, None
    if record.exc_info and not record.exc_text:
        record.exc_text = logging.Formatter().formatException(record.exc_info)
    if record.exc_text:
        record.exc_text = redact(record.exc_text)
    if record.stack_info:
        record.stack_info = redact(record.stack_info)
    return record


def install_log_redaction() -> None:
    """Redact every log record as it is created, whichever logger and handler it goes to (idempotent).

    A record factory rather than a handler filter: clemcore replaces the root handlers when it is imported
    (its ``logging.yaml``), and libraries add their own; the factory sees every record before any of them.
    """
    factory = logging.getLogRecordFactory()
    if getattr(factory, "redacts", False):
        return

    def redacting_factory(*args, **kwargs):
        return redact_record(factory(*args, **kwargs))

    redacting_factory.redacts = True  # type: ignore[attr-defined]
    logging.setLogRecordFactory(redacting_factory)
