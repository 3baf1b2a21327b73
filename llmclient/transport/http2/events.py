"""What the HTTP/2 state machine reports: one typed event per thing that happened, in order.

:meth:`~llmclient.transport.http2.state.H2State.receive` returns these for the bytes it was given (as h2
does); :meth:`~llmclient.transport.http2.state.H2State.fail` and ``connection_lost`` return the
:class:`StreamFailed` / :class:`ConnectionFailed` they cause. Every event has a ``stream_id``,
0 for the connection's own, so a driver wakes whoever waits on that stream without asking
what kind of event it was. The state has already acted on each one (buffered the data, queued
the SETTINGS or PING acknowledgement, failed the streams): events inform, they ask nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "ConnectionFailed",
    "ConnectionTerminated",
    "DataReceived",
    "Event",
    "InformationalResponseReceived",
    "PingAcknowledged",
    "PingReceived",
    "ResponseReceived",
    "SettingsAcknowledged",
    "SettingsReceived",
    "StreamEnded",
    "StreamFailed",
    "StreamReset",
    "TrailersReceived",
    "WindowUpdated",
]


class Event:
    """Base of every event: ``stream_id`` is the stream it concerns, 0 for the connection."""

    __slots__ = ()
    stream_id: int


# -- a stream's response ------------------------------------------------------------------------


@dataclass(slots=True)
class ResponseReceived(Event):
    """The response's header block (``:status`` first), after any 1xx."""

    stream_id: int
    headers: list[tuple[bytes, bytes]]


@dataclass(slots=True)
class InformationalResponseReceived(Event):
    """A 1xx response (RFC 9110 section 15.2): the final one follows on the same stream."""

    stream_id: int
    headers: list[tuple[bytes, bytes]]


@dataclass(slots=True)
class DataReceived(Event):
    """A DATA frame: ``data`` without its padding; ``flow_controlled_length`` is what it took
    from the flow-control windows (the whole frame payload, padding included)."""

    stream_id: int
    data: bytes
    flow_controlled_length: int


@dataclass(slots=True)
class TrailersReceived(Event):
    """A header block after the response's data (it ends the stream)."""

    stream_id: int
    headers: list[tuple[bytes, bytes]]


@dataclass(slots=True)
class StreamEnded(Event):
    """The server sent END_STREAM: the response is complete."""

    stream_id: int


@dataclass(slots=True)
class StreamReset(Event):
    """The server sent RST_STREAM(``error_code``) on an open stream."""

    stream_id: int
    error_code: int


@dataclass(slots=True)
class StreamFailed(Event):
    """The stream is over with ``error`` (what its reader gets): reset by the server, a
    malformed response, above a GOAWAY's last-stream-id, or its connection failed."""

    stream_id: int
    error: Exception


@dataclass(slots=True)
class WindowUpdated(Event):
    """WINDOW_UPDATE: we may send ``delta`` more bytes on the stream (0: the connection)."""

    stream_id: int
    delta: int


# -- the connection -----------------------------------------------------------------------------


@dataclass(slots=True)
class SettingsReceived(Event):
    """The server's SETTINGS (already acknowledged): identifier -> value, as sent."""

    changed: dict[int, int]
    stream_id: int = 0


@dataclass(slots=True)
class SettingsAcknowledged(Event):
    """The server acknowledged our SETTINGS."""

    stream_id: int = 0


@dataclass(slots=True)
class PingReceived(Event):
    """The server's PING (already answered)."""

    data: bytes
    stream_id: int = 0


@dataclass(slots=True)
class PingAcknowledged(Event):
    """The answer to one of our PINGs."""

    data: bytes
    stream_id: int = 0


@dataclass(slots=True)
class ConnectionTerminated(Event):
    """The server's GOAWAY: streams above ``last_stream_id`` were not processed (each gets a
    :class:`StreamFailed`); those at or below it are answered as usual."""

    error_code: int
    last_stream_id: int
    additional_data: bytes
    stream_id: int = 0


@dataclass(slots=True)
class ConnectionFailed(Event):
    """The connection is over: a protocol error (we sent GOAWAY), a peer that does not speak
    HTTP/2, a closed socket, or the driver's own failure. ``error`` is what new requests get."""

    error: Exception
    stream_id: int = 0
