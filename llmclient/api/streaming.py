"""Streamed responses: ``Stream`` and ``AsyncStream``, the face's iterators over a stream's events.

Written once as coroutines in ``api/_async/streaming.py`` (the sync twin is generated); the
reading itself, without I/O, is ``pipeline/stream_session.py``'s ``StreamSession``: a stream is
complete only when every choice it carried got a finish_reason (a Responses stream: at its final
event), anything else raises ``IncompleteStreamError``; a stream without an event for
``stream_idle_timeout`` seconds ends with ``APITimeoutError`` (``pipeline/watchdog.py``); a stream
that ends early, cut or stalled, raises with what it delivered so far as ``.partial``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..pipeline.stream_session import unfinished_message
from ._sync.streaming import Stream

if TYPE_CHECKING:
    from ._async.streaming import AsyncStream

__all__ = ["AsyncStream", "Stream", "unfinished_message"]


def __getattr__(name: str) -> Any:
    if name == "AsyncStream":
        # the async client's stream: loaded with it, not by `import llmclient`
        from ._async.streaming import AsyncStream

        return AsyncStream
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
