"""The HTTP/2 state machine's errors: typed, so that callers read attributes, never text.

::

    H2Error                 unprocessed: the server did not process the request (re-send at once)
     ├── NotHTTP2           the peer does not speak HTTP/2 (unprocessed)
     ├── PeerProtocolError  the server broke RFC 9113; we sent GOAWAY(code)
     ├── GoAwayError        the server's GOAWAY: stream_id above last_stream_id (unprocessed)
     ├── StreamResetError   RST_STREAM(code); REFUSED_STREAM is unprocessed
     ├── StreamCancelled    we reset the stream (read after an early close)
     ├── ConnectionLost     the connection closed before the response ended
     └── ConnectionUnusable the connection could not take the stream: nothing was sent (unprocessed)

These are the package's own (plain ``Exception`` subclasses): the drivers hand httpx's callers
the same failures as ``httpx.RemoteProtocolError`` subclasses of the same names
(:mod:`llmclient.transport.http2._common`), carrying the original in ``error``.
"""

from __future__ import annotations

from .frames import REFUSED_STREAM, code_name

__all__ = [
    "ConnectionLost",
    "ConnectionUnusable",
    "GoAwayError",
    "H2Error",
    "NotHTTP2",
    "PeerProtocolError",
    "StreamCancelled",
    "StreamResetError",
]


class H2Error(Exception):
    """An HTTP/2 connection or stream failed. ``unprocessed`` is True only where the protocol
    guarantees the server did not process the request, so it may be sent again at once."""

    unprocessed: bool = False


class NotHTTP2(H2Error):
    """The peer does not speak HTTP/2 (ALPN chose http/1.1, or h2c was answered in HTTP/1.x):
    it could not have read our request as one."""

    unprocessed = True


class PeerProtocolError(H2Error):
    """The server broke RFC 9113 (or flooded us): we sent GOAWAY(``code``) and closed."""

    def __init__(self, code: int, why: str) -> None:
        super().__init__(f"HTTP/2 protocol error from the server ({code_name(code)}): {why}")
        self.code = code


class GoAwayError(H2Error):
    """The server sent GOAWAY and will not process this stream (it is above last-stream-id;
    RFC 9113 section 6.8: such a request "can be safely retried")."""

    unprocessed = True

    def __init__(self, stream_id: int, last_stream_id: int, code: int) -> None:
        super().__init__(f"server sent GOAWAY ({code_name(code)}, last_stream_id:{last_stream_id}): "
                         f"stream {stream_id} was not processed")
        self.stream_id, self.last_stream_id, self.code = stream_id, last_stream_id, code


class StreamResetError(H2Error):
    """The stream was reset: by the server (RST_STREAM), or by us for a malformed response.
    REFUSED_STREAM means it was not processed (RFC 9113 section 8.7)."""

    def __init__(self, stream_id: int, code: int, why: str = "") -> None:
        detail = why or ("not processed" if code == REFUSED_STREAM else "")
        super().__init__(f"the server reset stream {stream_id} ({code_name(code)}"
                         f"{': ' + detail if detail else ''})")
        self.stream_id, self.code = stream_id, code
        self.unprocessed = code == REFUSED_STREAM


class StreamCancelled(H2Error):
    """We reset the stream (RST_STREAM CANCEL: its response was closed early, or abandoned);
    nothing more will be read from it."""

    def __init__(self, stream_id: int) -> None:
        super().__init__(f"stream {stream_id} was reset by the client")
        self.stream_id = stream_id


class ConnectionLost(H2Error):
    """The connection closed (or broke) before the stream's response ended."""


class ConnectionUnusable(H2Error):
    """The connection could no longer take a new stream when the request came to it (its
    GOAWAY had been read, its SETTINGS_MAX_CONCURRENT_STREAMS reached, a read timed out on it,
    it was closing): no byte of the request was written, so it goes to another connection.
    ``reason`` says which (``"goaway"``, ``"max_streams"``, ``"stale"``, ``"closed"``)."""

    unprocessed = True

    def __init__(self, reason: str) -> None:
        super().__init__(f"the HTTP/2 connection could not take a new stream ({reason}): nothing was sent")
        self.reason = reason
