"""Streamed responses: ``Stream`` and ``AsyncStream``, the face's iterators over a stream's events.

Written once as coroutines in ``api/_async/streaming.py`` (the sync twin is generated); the
reading itself, without I/O, is ``pipeline/stream_session.py``'s ``StreamSession``: a stream is
complete only when every choice it carried got a finish_reason (a Responses stream: at its final
event), anything else raises ``IncompleteStreamError``; a stream without an event for
``stream_idle_timeout`` seconds ends with ``APITimeoutError`` (``pipeline/watchdog.py``); a stream
that ends early, cut or stalled, raises with what it delivered so far as ``.partial``.
"""

from __future__ import annotations

from .. import _official
from ..pipeline.stream_session import unfinished_message
from ._async.streaming import AsyncStream
from ._sync.streaming import Stream

__all__ = ["AsyncStream", "Stream", "unfinished_message"]

# With ``openai`` imported, ``isinstance(stream, openai.Stream)`` holds too (``_official``).
_official.register(Stream, AsyncStream, hide=True)
