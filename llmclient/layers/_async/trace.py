"""The outermost layer: the call's trace id on every log line written while it runs
(``_logging.current_trace_id``), and its OpenTelemetry span (``features/otel.py``) when the app
configured a provider; a stream's span ends with the stream. Always in the chain.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..._logging import current_trace_id
from ...features import otel as _otel

if TYPE_CHECKING:
    from ...pipeline.call import Call
    from ...pipeline.reply import Reply
    from ..context import Context
    from ..options import CallOptions

__all__ = ["Layer", "Trace", "wanted"]


def wanted(ctx: Context, options: CallOptions) -> bool:
    return True


class Trace:
    __slots__ = ("_inner",)

    def __init__(self, inner: Any, ctx: Context) -> None:
        self._inner = inner

    async def __call__(self, call: Call) -> Reply:
        span = _otel.start(call)  # None unless OpenTelemetry is configured (the otel extra)
        if span is not None:
            call.make, call.stream_make = span.wrap(call.make, call.stream_make)
        token = current_trace_id.set(call.trace.trace_id)
        try:
            reply: Reply = await self._inner(call)
            if span is not None and call.stream and reply.result is None:
                span.stream = True  # a live stream: ends when the stream does (api/streaming.py)
            return reply
        except BaseException as exc:
            if span is not None:
                span.end(call, exc)
            raise
        finally:
            current_trace_id.reset(token)
            if span is not None and not span.stream:
                span.end(call, None)


Layer = Trace
