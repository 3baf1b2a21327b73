"""W3C Trace Context (https://www.w3.org/TR/trace-context/) for every request.

Each call gets a ``traceparent``. It continues, in order of preference: a ``traceparent`` the
caller passed in ``extra_headers``; the active OpenTelemetry span, but only when the caller's
program has already imported ``opentelemetry`` (we look in ``sys.modules`` so that
``import llmclient`` never pays for OpenTelemetry); else a fresh trace.

``X-Request-ID`` is the trace id in a UUID's text form (RFC 9562 section 4: 8-4-4-4-12 hex
digits): request-id middlewares commonly accept only UUIDs and answer anything else with 400
(llama-cpp-python's server does, with an empty body). A fresh trace id is made a version-4
UUID (122 random bits), so it passes validators that also check the version; a trace id
inherited from the caller keeps its 128 bits as they are. Calls that continue one caller's
trace therefore share an ``X-Request-ID``; the ``traceparent``'s span id tells them apart.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from typing import Any

__all__ = ["TraceContext", "new_trace_context", "new_trace_id", "request_id_of"]

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
        """Our ``X-Request-ID``: the trace id as a UUID (``request_id_of``)."""
        return request_id_of(self.trace_id)

    def headers(self) -> dict[str, str]:
        out = {"traceparent": self.traceparent, "x-request-id": self.request_id}
        if self.tracestate:
            out["tracestate"] = self.tracestate
        return out


def request_id_of(trace_id: str) -> str:
    """The ``X-Request-ID`` sent for a trace id: its 32 hex digits as UUID text, 8-4-4-4-12.

    ``uuid.UUID(request_id).hex == trace_id``, so either form finds the other in logs.
    """
    t = trace_id
    return f"{t[:8]}-{t[8:12]}-{t[12:16]}-{t[16:20]}-{t[20:]}"


def new_trace_id() -> str:
    """A fresh W3C trace id that is also a version-4 UUID (RFC 9562 section 5.4).

    Random but for the six version and variant bits; the right-most 7 bytes, which W3C
    Trace Context level 2 asks to be random, stay untouched.
    """
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
    raw[8] = (raw[8] & 0x3F) | 0x80  # variant 10xx
    return raw.hex()


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
        return TraceContext(new_trace_id(), span_id)
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
