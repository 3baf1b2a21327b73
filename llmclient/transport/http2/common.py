"""What the sync and async drivers share: httpx's face of the protocol.

An :class:`httpx.Request` becomes an HTTP/2 header list, a stream's response becomes an
:class:`httpx.Response`, and the state's typed errors (:mod:`.errors`) reach httpx's callers as
:class:`HTTP2ProtocolError`, an ``httpx.RemoteProtocolError`` (so the client maps them like
every other transport failure) that carries the original in ``error`` and its
``unprocessed`` flag: the retry rules read that flag, never the text.
"""

from __future__ import annotations

from collections.abc import Callable, KeysView
from typing import TYPE_CHECKING, Any, Final, NoReturn

import httpx

from .errors import ConnectionUnusable, H2Error, NotHTTP2, StreamCancelled

if TYPE_CHECKING:
    from .state import H2State, Stream

__all__ = ["ConnectionFacts", "HTTP2ProtocolError", "make_response", "origin", "public", "raise_public",
           "raise_unusable", "request_headers"]

# Connection-specific headers that HTTP/2 forbids (RFC 9113 section 8.2.2); Host becomes
# :authority.
_DROPPED_HEADERS: Final = frozenset(
    {b"host", b"connection", b"keep-alive", b"proxy-connection", b"transfer-encoding", b"upgrade"}
)


class HTTP2ProtocolError(httpx.RemoteProtocolError):
    """An HTTP/2 failure as httpx's callers see it. ``error`` is the typed original (a
    :class:`~.errors.GoAwayError` with its ``last_stream_id``, a
    :class:`~.errors.StreamResetError` with its ``code`` ...); ``unprocessed`` is True only
    where the protocol guarantees the server did not process the request."""

    def __init__(self, error: H2Error) -> None:
        super().__init__(str(error))
        self.error = error
        self.unprocessed = error.unprocessed


def public(exc: Exception) -> Exception:
    """What a driver raises for a stream's or connection's ``exc``: the state's errors in httpx's
    classes (a stream we reset reads as ``httpx.StreamClosed``); the drivers' own (timeouts,
    write errors, a hedge's cancellation) unchanged."""
    if isinstance(exc, StreamCancelled):
        return httpx.StreamClosed()
    if isinstance(exc, H2Error):
        return HTTP2ProtocolError(exc)
    return exc


def raise_public(exc: Exception) -> NoReturn:
    err = public(exc)
    if err is exc:
        raise exc
    raise err from exc


def raise_unusable(state: H2State) -> NoReturn:
    """A request came to a connection that can no longer take a stream: nothing of it was
    written, so the error says ``unprocessed`` and the lanes place it elsewhere at once. A
    server that turned out not to speak HTTP/2 stays that error (the lanes fall back to
    HTTP/1.1 on it)."""
    if isinstance(state.error, NotHTTP2):
        raise_public(state.error)
    raise HTTP2ProtocolError(ConnectionUnusable(state.unusable_reason() or "closed"))


def request_headers(request: httpx.Request) -> list[tuple[bytes, bytes]]:
    """The request's header list: the four pseudo-headers first, then its own, lowercased,
    without the connection-specific ones."""
    url = request.url
    headers = [
        (b":method", request.method.encode("ascii")),
        (b":authority", url.netloc),
        (b":scheme", url.scheme.encode("ascii")),
        (b":path", url.raw_path),
    ]
    for name, value in request.headers.raw:
        name = name.lower()
        if name not in _DROPPED_HEADERS:
            headers.append((name, value))
    return headers


# httpx.Headers keeps each header as (raw name, lower-case name, value) bytes in ``_list`` (httpx
# 0.18 to 0.28 and this 0.29, as layers/request.py's _RAW_HEADERS checks); given a list of byte
# pairs it makes exactly those triples, checking nothing a bytes pair could fail. Made here, an
# answer's headers skip two helper calls per header (about 8 us an answer of 15 headers, measured
# with benchmarks/client_overhead); where a version keeps them otherwise, httpx makes them.
_RAW_HEADERS: Final = isinstance(getattr(httpx.Headers({"a": "b"}), "_list", None), list) and \
    httpx.Headers([(b"A", b"b")])._list == [(b"A", b"a", b"b")]


class AnswerHeaders(httpx.Headers):
    """An answer's headers: httpx.Headers whose reads (``[name]``, ``get``, ``keys``) look the
    name up in a dict made on the first read, instead of lowercasing and scanning every header
    for each (a call reads six or seven of them: about 5 us a call, measured with
    benchmarks/client_overhead's Anthropic arm). The dict is what httpx's own reads would give
    (values of a repeated name joined with ", "); it is made only for an all-ASCII list (the
    encoding httpx would pick is then ascii), and made again after any change: the setters
    drop it, and it is kept only while ``_list`` and ``_encoding`` are the ones it was made
    from. Anything else (another encoding, a key that is not ASCII text) goes to httpx."""

    _index: tuple[list[tuple[bytes, bytes, bytes]], int, str | None, dict[str, str] | None] | None = None

    def _names(self) -> dict[str, str] | None:
        idx = self._index
        items = self._list
        if idx is not None and idx[0] is items and idx[1] == len(items) and idx[2] == self._encoding:
            return idx[3]
        if self._encoding not in (None, "ascii"):
            return None
        try:  # a name is ASCII when its lower-case form is
            names = {name.decode("ascii"): value.decode("ascii") for _, name, value in items}
        except UnicodeDecodeError:
            self._index = (items, len(items), self._encoding, None)  # httpx's reads, without trying again
            return None
        if len(names) != len(items):  # a repeated name: its values joined, as httpx joins them
            names = {}
            for _, name, value in items:
                key = name.decode("ascii")
                names[key] = names[key] + ", " + value.decode("ascii") if key in names else value.decode("ascii")
        self._encoding = "ascii"  # what httpx's ``encoding`` finds for an all-ASCII list
        self._index = (items, len(items), "ascii", names)
        return names

    def __getitem__(self, key: str) -> str:
        names = self._names() if type(key) is str and key.isascii() else None
        if names is None:
            return super().__getitem__(key)
        value = names.get(key.lower())
        if value is None:
            raise KeyError(key)
        return value

    def get(self, key: str, default: Any = None) -> Any:
        names = self._names() if type(key) is str and key.isascii() else None
        if names is None:
            return super().get(key, default)
        return names.get(key.lower(), default)

    def keys(self) -> KeysView[str]:
        names = self._names()
        return super().keys() if names is None else dict.fromkeys(names).keys()

    def __repr__(self) -> str:  # httpx's, as it reads for httpx.Headers
        return "Headers" + super().__repr__()[len(type(self).__name__):]

    def __setitem__(self, key: str, value: str) -> None:
        self._index = None
        super().__setitem__(key, value)

    def __delitem__(self, key: str) -> None:
        self._index = None
        super().__delitem__(key)

    def update(self, headers: Any = None) -> None:  # type: ignore[override]
        self._index = None
        super().update(headers)


def response_headers(headers: list[tuple[bytes, bytes]]) -> httpx.Headers | list[tuple[bytes, bytes]]:
    """An answer's decoded header block, without its pseudo-headers, as httpx.Headers would
    hold it (or the pairs, for httpx to make it)."""
    if not _RAW_HEADERS:
        return [(n, v) for n, v in headers if not n.startswith(b":")]
    out = AnswerHeaders()
    out._list = [(n, n.lower(), v) for n, v in headers if not n.startswith(b":")]
    return out


def make_response(stream: Stream, body: Any) -> httpx.Response:
    headers = stream.headers or []
    status = int(headers[0][1])
    answer = response_headers(headers)
    if not isinstance(answer, AnswerHeaders):
        return httpx.Response(status, headers=answer, stream=body,
                              extensions={"http_version": b"HTTP/2", "stream_id": stream.id})
    response = httpx.Response(status, stream=body, extensions={"http_version": b"HTTP/2", "stream_id": stream.id})
    response.headers = answer  # httpx.Response(headers=) would copy them into a plain httpx.Headers
    return response


def origin(url: httpx.URL) -> tuple[str, int, bool]:
    """(host, port, TLS) of a request's URL."""
    tls = url.scheme == "https"
    return url.host, url.port or (443 if tls else 80), tls


class ConnectionFacts:
    """What a pool asks of a connection, sync or async."""

    state: H2State
    last_used: float
    peer: tuple[str, str] | None = None  # (address, "IPv4" | "IPv6") this socket connected to
    # Set by the pool when the connection joins it (aging.retire_at): when it stops taking
    # new streams, and whether that was logged.
    opened: float = 0.0
    retire_at: float = float("inf")
    retired: bool = False
    # Set by the pool (idle.ServerIdle.observe): told the idle time at which the server closed
    # this connection with no GOAWAY, when the driver sees it.
    on_idle_close: Callable[[float], None] | None = None

    @property
    def usable(self) -> bool:
        return self.state.usable

    @property
    def idle(self) -> bool:
        return not self.state.streams

    @property
    def closed(self) -> bool:
        return self.state.error is not None
