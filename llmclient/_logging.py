"""The SDK's logger: every record carries ``trace_id`` of the call it was logged in.

The call's trace id lives in a ContextVar (set by the client around each call, visible to
async tasks spawned inside it), and a Filter copies it onto each record, so a handler can
use ``%(trace_id)s`` in its format. Headers and free text are logged through
``_redact`` (:func:`redact_headers`, :func:`redact_text`): API keys and URL userinfo never
reach a log.
"""

from __future__ import annotations

import logging
import os
from contextvars import ContextVar

from ._redact import redact_headers, redact_text

__all__ = ["current_trace_id", "get_logger", "logger", "redact_headers", "redact_text"]

current_trace_id: ContextVar[str | None] = ContextVar("llmclient_trace_id", default=None)

class TraceIdFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "trace_id"):
            record.trace_id = current_trace_id.get() or "-"
        return True


class RedactFilter(logging.Filter):
    """Masks secrets (``_redact.redact_text``) in a record's message and traceback, whatever
    was passed as arguments: an exception from a library below (redis, sqlite3, httpx) can
    carry a URL with its password. Logger filters do not apply to child loggers, so every
    llmclient logger gets one (:func:`get_logger`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = redact_text(message)
        if clean is not message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            record.exc_text = redact_text(logging.Formatter().formatException(record.exc_info))
        return True


_REDACT = RedactFilter()


def get_logger(name: str) -> logging.Logger:
    """An llmclient logger (``llmclient`` or a child) that never writes a secret."""
    log = logging.getLogger(name)
    if _REDACT not in log.filters:
        log.addFilter(_REDACT)
    return log


def _make_logger() -> logging.Logger:
    log = get_logger("llmclient")
    log.addFilter(TraceIdFilter())
    # Same switch as the official client's OPENAI_LOG (values "debug" / "info").
    level = os.environ.get("LLMCLIENT_LOG") or os.environ.get("OPENAI_LOG")
    if level in ("debug", "info") and not log.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(
            logging.Formatter("[%(asctime)s %(levelname)s %(name)s trace_id=%(trace_id)s] %(message)s")
        )
        handler.addFilter(TraceIdFilter())
        log.addHandler(handler)
        log.setLevel(logging.DEBUG if level == "debug" else logging.INFO)
    return log


logger = _make_logger()
