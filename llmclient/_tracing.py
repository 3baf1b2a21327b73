"""W3C Trace Context (https://www.w3.org/TR/trace-context/) for every request.

Each call gets a ``traceparent``. It continues, in order of preference: a ``traceparent`` the
caller passed in ``extra_headers``; the active OpenTelemetry span, but only when the caller's
program has already imported ``opentelemetry`` (we look in ``sys.modules`` so that
``import llmclient`` never pays for OpenTelemetry); else a fresh trace.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from typing import Any

__all__ = ["TraceContext", "new_trace_context"]

# traceparent = version "-" trace-id "-" parent-id "-" trace-flags (section 3.2.2)
_TRACEPARENT_RE = re.compile(r"^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")
_ZERO_TRACE = "0" * 32
_ZERO_SPAN = "0" * 16


@dataclass(frozen=True, slots=True)
class TraceContext:
    trace_id: str
    span_id: str
    parent_span_id: str | None = None
    flags: str = "01"
    tracestate: str | None = None

    @property
    def traceparent(self) -> str:
        return f"00-{self.trace_id}-{self.span_id}-{self.flags}"

    @property
    def request_id(self) -> str:
        """Our ``X-Request-ID``: unique per call, and greppable by trace id."""
        return f"{self.trace_id}-{self.span_id}"

    def headers(self) -> dict[str, str]:
        out = {"traceparent": self.traceparent, "x-request-id": self.request_id}
        if self.tracestate:
            out["tracestate"] = self.tracestate
        return out


def parse_traceparent(value: str) -> tuple[str, str, str] | None:
    """(trace_id, parent_id, flags) of a valid traceparent, else None (section 3.2.2.x rules)."""
    match = _TRACEPARENT_RE.match(value.strip().lower())
    if not match or match.group(1) == "ff":
        return None
    _, trace_id, parent_id, flags = match.groups()
    if trace_id == _ZERO_TRACE or parent_id == _ZERO_SPAN:
        return None
    return trace_id, parent_id, flags


def new_trace_context(
    traceparent: str | None = None, tracestate: str | None = None
) -> TraceContext:
    """A child span of the caller's trace (header, then OpenTelemetry), or a new root."""
    span_id = os.urandom(8).hex()
    parent = parse_traceparent(traceparent) if traceparent else None
    if parent is None and "opentelemetry.trace" in sys.modules:
        parent = _otel_parent()
    if parent is None:
        return TraceContext(os.urandom(16).hex(), span_id)
    trace_id, parent_id, flags = parent
    return TraceContext(trace_id, span_id, parent_id, flags, tracestate)


def _otel_parent() -> tuple[str, str, str] | None:
    # Only called once the app imported OpenTelemetry (the optional "otel" extra): we never
    # import it ourselves, so `import llmclient` stays light.
    trace: Any = sys.modules.get("opentelemetry.trace")
    if trace is None or not hasattr(trace, "get_current_span"):
        return None
    ctx = trace.get_current_span().get_span_context()
    if not ctx.is_valid:
        return None
    return f"{ctx.trace_id:032x}", f"{ctx.span_id:016x}", f"{int(ctx.trace_flags):02x}"
