"""The SDK's logger: every record carries ``trace_id`` of the call it was logged in.

The call's trace id lives in a ContextVar (set by the client around each call, visible to
async tasks spawned inside it), and a Filter copies it onto each record, so a handler can
use ``%(trace_id)s`` in its format. Headers are logged through :func:`redact_headers`:
API keys never reach a log.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from contextvars import ContextVar

__all__ = ["current_trace_id", "logger", "redact_headers"]

current_trace_id: ContextVar[str | None] = ContextVar("llmclient_trace_id", default=None)

_SECRET_HEADERS = frozenset({"authorization", "api-key", "x-api-key", "proxy-authorization", "cookie"})


class TraceIdFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "trace_id"):
            record.trace_id = current_trace_id.get() or "-"
        return True


def redact_headers(headers: Mapping[str, str]) -> dict[str, str]:
    return {k: ("<redacted>" if k.lower() in _SECRET_HEADERS else v) for k, v in headers.items()}


def _make_logger() -> logging.Logger:
    log = logging.getLogger("llmclient")
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
