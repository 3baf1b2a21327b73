"""Connections: HTTP/2 by default, HTTP/1.1 where a server needs it, shared process-wide.

What httpcore 1.0 does and does not do, and what we add (checked against httpcore 1.0.9):

* **Stream cap.** An httpcore HTTP/2 connection queues requests on a semaphore once the
  server's SETTINGS_MAX_CONCURRENT_STREAMS is reached; the pool never opens a second
  connection for the same origin. We therefore keep *lanes* per origin (each lane is one
  httpcore pool holding one HTTP/2 connection, two while a GOAWAY'd one drains) and open a new
  lane when every lane has ``max_streams`` requests in flight.
* **Early close.** Closing an unfinished HTTP/2 response in httpcore only forgets the stream: no
  RST_STREAM is sent, the server keeps generating, and the DATA it sends is never acknowledged,
  so the connection's flow-control window leaks until the connection stalls. :class:`_LaneStream`
  sends RST_STREAM(CANCEL) (RFC 9113 section 8.7) before handing the stream back; h2 then
  returns the window of any DATA still in flight for the reset stream.
* **GOAWAY.** httpcore re-queues requests whose stream id is above the GOAWAY's last-stream-id
  onto a fresh connection (those were not processed, RFC 9113 section 6.8). Errors on a reused
  connection before any response byte are retried by the client at once (``_retry.py``).
* **Idle checking.** httpcore expires HTTP/2 connections by time only and never sends PING; we
  keep connections for ``KEEPALIVE_EXPIRY_S`` and, before reusing a lane that has been idle, close
  any idle HTTP/2 connection whose socket is readable (the server sent GOAWAY or FIN while we
  were idle), which is the check httpcore itself does for HTTP/1.1.
* **h2c.** For ``http://`` origins we first use HTTP/2 with prior knowledge (RFC 9113 section
  3.3); if the server answers with something that is not HTTP/2 the origin is recorded as
  HTTP/1.1-only and the request is re-sent over HTTP/1.1 (the server could not have parsed it).
  Over TLS, ALPN chooses (RFC 7301) and the record notes what was chosen.
* **One SSL context per process** (per CA setting): building one costs ~20 ms (certifi).
"""

from __future__ import annotations

import ssl
import threading
import time
import weakref
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx

from ._logging import logger

if TYPE_CHECKING:
    import asyncio

__all__ = ["AsyncTransport", "OriginRecord", "SyncTransport", "TransportSettings", "shared_ssl_context"]

# Servers close idle connections on their own schedule (hypercorn: 5 s keep-alive by default,
# nginx 75 s); ours only bounds how long we hold a socket the server still accepts.
KEEPALIVE_EXPIRY_S = 300.0
# Default SETTINGS_MAX_CONCURRENT_STREAMS of hypercorn, nginx and most gateways; the server's
# own setting (read from the connection once known) wins when it is lower.
DEFAULT_MAX_STREAMS = 100
# Only look for dead idle connections after this much idle time (a select() per connection).
IDLE_CHECK_AFTER_S = 1.0
H1_MAX_CONNECTIONS = 100

_RST_CANCEL = 0x8  # RFC 9113 section 7, CANCEL


@dataclass(frozen=True, slots=True)
class TransportSettings:
    verify: bool | str = True  # True, False, or a CA bundle path
    http2: bool = True


_ssl_lock = threading.Lock()
_ssl_contexts: dict[bool | str, ssl.SSLContext] = {}


def shared_ssl_context(verify: bool | str = True) -> ssl.SSLContext:
    """One context per CA setting for the whole process (ALPN is set by httpcore per pool)."""
    ctx = _ssl_contexts.get(verify)
    if ctx is None:
        with _ssl_lock:
            ctx = _ssl_contexts.get(verify)
            if ctx is None:
                if isinstance(verify, str):
                    ctx = ssl.create_default_context(cafile=verify)
                else:
                    ctx = httpx.create_ssl_context(verify=verify)
                _ssl_contexts[verify] = ctx
    return ctx


@dataclass(slots=True)
class OriginRecord:
    """What we learned about one origin, probed once per process."""

    origin: str
    tls: bool
    h2: bool | None = None  # None: not yet known
    http_version: str | None = None
    lanes: list[Any] = field(default_factory=list)
    h1_lane: Any = None


@dataclass(slots=True)
class _Lane:
    transport: Any  # httpx.HTTPTransport | httpx.AsyncHTTPTransport
    h2: bool
    inflight: int = 0
    last_used: float = 0.0


class _TransportBase:
    """Lane selection and per-origin records: decisions shared by the sync and async sides."""

    _transport_cls: type[Any]

    def __init__(self, settings: TransportSettings) -> None:
        self.settings = settings
        self._origins: dict[str, OriginRecord] = {}

    def origin_record(self, url: httpx.URL) -> OriginRecord:
        key = f"{url.scheme}://{url.netloc.decode('ascii')}"
        rec = self._origins.get(key)
        if rec is None:
            rec = self._origins.setdefault(key, OriginRecord(key, url.scheme == "https"))
            if not self.settings.http2:
                rec.h2 = False
        return rec

    def _new_transport(self, rec: OriginRecord, h2: bool) -> Any:
        ctx = shared_ssl_context(self.settings.verify) if rec.tls else _plain_context()
        if rec.tls:
            # Over TLS, ALPN decides. Every pool offers the same ALPN list because httpcore
            # writes it into the (shared) SSL context before each handshake.
            protocols = {"http1": True, "http2": self.settings.http2}
        elif h2:
            protocols = {"http1": False, "http2": True}  # h2c, prior knowledge
        else:
            protocols = {"http1": True, "http2": False}
        limits = httpx.Limits(
            max_connections=2 if h2 else H1_MAX_CONNECTIONS,
            max_keepalive_connections=2 if h2 else H1_MAX_CONNECTIONS,
            keepalive_expiry=KEEPALIVE_EXPIRY_S,
        )
        return self._transport_cls(verify=ctx, limits=limits, **protocols)

    def pick_lane(self, rec: OriginRecord) -> _Lane:
        """The HTTP/2 lane with a free stream slot (a new lane when all are full), or the h1 pool."""
        if rec.h2 is False:  # HTTP/1.1 origin (h2c refused, ALPN chose http/1.1, or http2=False)
            if rec.h1_lane is None:
                rec.h1_lane = _Lane(self._new_transport(rec, h2=False), h2=False)
            lane: _Lane = rec.h1_lane
        else:
            for lane in rec.lanes:
                if lane.inflight < _max_streams(lane):
                    break
            else:
                lane = _Lane(self._new_transport(rec, h2=self.settings.http2), h2=self.settings.http2)
                rec.lanes.append(lane)
                if len(rec.lanes) > 1:
                    logger.debug("origin %s: all lanes at their stream cap, opening lane %d",
                                 rec.origin, len(rec.lanes))
        now = time.monotonic()
        if lane.inflight == 0 and now - lane.last_used > IDLE_CHECK_AFTER_S:
            _close_dead_idle_connections(lane.transport)
        lane.inflight += 1
        lane.last_used = now
        return lane

    @staticmethod
    def release(lane: _Lane) -> None:
        lane.inflight -= 1

    @staticmethod
    def note_response(rec: OriginRecord, response: httpx.Response) -> None:
        version = response.http_version
        if rec.http_version != version:
            rec.http_version = version
            rec.h2 = version == "HTTP/2"
            logger.debug("origin %s speaks %s", rec.origin, version)

    @staticmethod
    def should_fall_back(rec: OriginRecord, lane: _Lane, exc: Exception) -> bool:
        """A cleartext origin not yet known to speak h2c failed the prior-knowledge attempt."""
        # rec.h2 may already be False: concurrent first calls all probed, one failed first.
        if rec.tls or rec.h2 is True or not lane.h2:
            return False
        return isinstance(exc, (httpx.ProtocolError, httpx.ReadError, httpx.WriteError))


_plain_ctx: ssl.SSLContext | None = None


def _plain_context() -> ssl.SSLContext:
    # httpx builds (and loads certifi into) a context for every transport unless given one;
    # cleartext origins never use it, so one bare context is enough.
    global _plain_ctx
    if _plain_ctx is None:
        _plain_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    return _plain_ctx


def _pool_connections(transport: Any) -> list[Any]:
    pool = getattr(transport, "_pool", None)
    return list(getattr(pool, "_connections", ()))


def _max_streams(lane: _Lane) -> int:
    if not lane.h2:
        return H1_MAX_CONNECTIONS
    best = DEFAULT_MAX_STREAMS
    for conn in _pool_connections(lane.transport):
        inner = getattr(conn, "_connection", None)
        h2_state = getattr(inner, "_h2_state", None)
        if h2_state is not None and getattr(inner, "_sent_connection_init", False):
            # The server's SETTINGS_MAX_CONCURRENT_STREAMS (RFC 9113 section 6.5.2).
            best = min(best, h2_state.remote_settings.max_concurrent_streams or best)
    return best


def _close_dead_idle_connections(transport: Any) -> None:
    for conn in _pool_connections(transport):
        inner = getattr(conn, "_connection", None)
        if inner is None or not conn.is_idle() or not hasattr(inner, "_h2_state"):
            continue
        stream = getattr(inner, "_network_stream", None)
        try:
            readable = bool(stream.get_extra_info("is_readable")) if stream is not None else False
        except Exception:
            readable = False
        if readable:  # an idle HTTP/2 connection has nothing to read unless it is going away
            logger.debug("dropping idle HTTP/2 connection the server has closed or GOAWAY'd")
            # Marked closed, the pool removes it on its next pass. Sync sockets are closed here;
            # async ones need an await, so the garbage collector closes them.
            inner._state = _closed_state(inner)
            close = getattr(inner._network_stream, "close", None)
            if close is not None:
                try:
                    close()
                except Exception:
                    pass


def _closed_state(inner: Any) -> Any:
    return type(inner._state).CLOSED


def _find_h2_stream(stream: Any) -> Any:
    """Walk httpx/httpcore stream wrappers down to httpcore's HTTP/2 stream, if any."""
    for _ in range(6):
        if stream is None:
            return None
        if hasattr(stream, "_stream_id") and hasattr(stream, "_connection"):
            return stream
        stream = (
            getattr(stream, "_httpcore_stream", None)
            or getattr(stream, "_stream", None)
            or getattr(stream, "stream", None)
        )
    return None


def _h2_stream_open(conn: Any, stream_id: int) -> bool:
    """Whether the server may still send on this stream. httpcore closes its side of an
    abandoned stream without telling the server (no RST_STREAM), so its own flag is no guide;
    the h2 state machine knows whether the stream ended."""
    h2_state = getattr(conn, "_h2_state", None)
    stream = getattr(h2_state, "streams", {}).get(stream_id) if h2_state is not None else None
    return stream is not None and not stream.closed


def _reset_h2_stream_sync(stream: Any) -> None:
    h2s = _find_h2_stream(stream)
    conn = h2s._connection if h2s is not None else None
    if conn is None or not _h2_stream_open(conn, h2s._stream_id):
        return
    # h2's state machine is not thread-safe: httpcore only feeds it received data under its
    # read lock. A stream closed from another thread while some thread reads the connection
    # (a prefetch cancelled by the app's call) is left to httpcore, which drops it quietly,
    # rather than racing that reader.
    read_lock = getattr(getattr(conn, "_read_lock", None), "_lock", None)
    if read_lock is not None and not read_lock.acquire(blocking=False):
        logger.debug("RST_STREAM not sent: the connection is being read by another thread")
        return
    try:
        conn._h2_state.reset_stream(h2s._stream_id, error_code=_RST_CANCEL)
        conn._write_outgoing_data(h2s._request)
    except Exception as exc:  # the stream or connection already ended: nothing to cancel
        logger.debug("RST_STREAM not sent: %r", exc)
    finally:
        if read_lock is not None:
            read_lock.release()


async def _reset_h2_stream_async(stream: Any) -> None:
    h2s = _find_h2_stream(stream)
    conn = h2s._connection if h2s is not None else None
    if conn is None or not _h2_stream_open(conn, h2s._stream_id):
        return
    try:
        conn._h2_state.reset_stream(h2s._stream_id, error_code=_RST_CANCEL)
        await conn._write_outgoing_data(h2s._request)
    except Exception as exc:
        logger.debug("RST_STREAM not sent: %r", exc)


class _LaneStream(httpx.SyncByteStream):
    """Counts bytes, gives the lane its slot back on close, cancels unfinished HTTP/2 streams."""

    def __init__(self, inner: Any, owner: _TransportBase, lane: _Lane | None) -> None:
        self._inner = inner
        self._owner = owner
        self._lane = lane
        self._done = False
        self.bytes_received = 0

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._inner:
            self.bytes_received += len(chunk)
            yield chunk
        self._done = True

    def close(self) -> None:
        if not self._done:
            _reset_h2_stream_sync(self._inner)
            self._done = True
        self._inner.close()
        if self._lane is not None:
            self._owner.release(self._lane)
            self._lane = None


class _AsyncLaneStream(httpx.AsyncByteStream):
    def __init__(self, inner: Any, owner: _TransportBase, lane: _Lane | None) -> None:
        self._inner = inner
        self._owner = owner
        self._lane = lane
        self._done = False
        self.bytes_received = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            self.bytes_received += len(chunk)
            yield chunk
        self._done = True

    async def aclose(self) -> None:
        if not self._done:
            await _reset_h2_stream_async(self._inner)
            self._done = True
        await self._inner.aclose()
        if self._lane is not None:
            self._owner.release(self._lane)
            self._lane = None


class SyncTransport(_TransportBase):
    _transport_cls = httpx.HTTPTransport

    def __init__(self, settings: TransportSettings) -> None:
        super().__init__(settings)
        self._lock = threading.Lock()

    def send(self, request: httpx.Request) -> httpx.Response:
        rec = self.origin_record(request.url)
        with self._lock:
            lane = self.pick_lane(rec)
        try:
            response = lane.transport.handle_request(request)
        except Exception as exc:
            self.release(lane)
            if not self.should_fall_back(rec, lane, exc):
                raise
            if rec.h2 is None:
                logger.info("origin %s does not speak h2c (%r): using HTTP/1.1", rec.origin, exc)
            rec.h2 = False
            return self.send(request)
        self.note_response(rec, response)
        response.stream = _LaneStream(response.stream, self, lane)
        response.request = request
        return response

    def release(self, lane: _Lane) -> None:  # type: ignore[override]
        with self._lock:
            lane.inflight -= 1

    def close(self) -> None:
        for rec in list(self._origins.values()):
            for lane in [*rec.lanes, rec.h1_lane]:
                if lane is not None:
                    lane.transport.close()
        self._origins.clear()


class AsyncTransport(_TransportBase):
    _transport_cls = httpx.AsyncHTTPTransport

    async def send(self, request: httpx.Request) -> httpx.Response:
        rec = self.origin_record(request.url)
        lane = self.pick_lane(rec)
        try:
            response = await lane.transport.handle_async_request(request)
        except Exception as exc:
            self.release(lane)
            if not self.should_fall_back(rec, lane, exc):
                raise
            if rec.h2 is None:
                logger.info("origin %s does not speak h2c (%r): using HTTP/1.1", rec.origin, exc)
            rec.h2 = False
            return await self.send(request)
        self.note_response(rec, response)
        response.stream = _AsyncLaneStream(response.stream, self, lane)
        response.request = request
        return response

    async def aclose(self) -> None:
        for rec in list(self._origins.values()):
            for lane in [*rec.lanes, rec.h1_lane]:
                if lane is not None:
                    await lane.transport.aclose()
        self._origins.clear()


_sync_lock = threading.Lock()
_sync_transports: dict[TransportSettings, SyncTransport] = {}
# Async connections belong to the event loop that opened them: one transport per loop.
_async_transports: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[TransportSettings, AsyncTransport]] = (
    weakref.WeakKeyDictionary()
)


def shared_sync_transport(settings: TransportSettings) -> SyncTransport:
    transport = _sync_transports.get(settings)
    if transport is None:
        with _sync_lock:
            transport = _sync_transports.setdefault(settings, SyncTransport(settings))
    return transport


def shared_async_transport(settings: TransportSettings) -> AsyncTransport:
    import asyncio  # imported here, not at module level, to keep `import llmclient` light

    loop = asyncio.get_running_loop()
    per_loop = _async_transports.get(loop)
    if per_loop is None:
        per_loop = _async_transports[loop] = {}
    transport = per_loop.get(settings)
    if transport is None:
        transport = per_loop[settings] = AsyncTransport(settings)
    return transport


def close_all() -> None:
    """Close every connection the sync clients of this process share (e.g. at shutdown or
    before ``fork``). Clients stay usable: the next call opens a fresh connection."""
    with _sync_lock:
        transports = list(_sync_transports.values())
        _sync_transports.clear()
    for transport in transports:
        transport.close()


async def aclose_all() -> None:
    """Close every connection the async clients on the running event loop share."""
    import asyncio

    per_loop = _async_transports.pop(asyncio.get_running_loop(), None) or {}
    for transport in per_loop.values():
        await transport.aclose()
