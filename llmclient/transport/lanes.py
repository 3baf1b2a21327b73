"""Connections: HTTP/2 by default, HTTP/1.1 where a server needs it, shared process-wide.

Both protocols run on our own connections (the _http2 package and _h1.py: each a sans-I/O
protocol core with thin sync and asyncio drivers).
What this layer adds:

* **Lanes.** Each origin has lanes of HTTP/2 connections; a lane opens another connection only
  when the server's SETTINGS_MAX_CONCURRENT_STREAMS is reached on it, or to replace one that
  got GOAWAY (its streams finish there while new ones go to the fresh one).
* **Early close.** Closing an unfinished HTTP/2 response sends RST_STREAM(CANCEL) (RFC 9113
  section 8.7): the server stops generating, and the flow-control credit of DATA still in
  flight is returned, so the connection stays healthy.
* **GOAWAY.** Streams above the server's last-stream-id were not processed; streams at or
  below it are read to their end (RFC 9113 section 6.8), never re-sent for free.
* **Never sent, placed again.** A request that provably never reached the server goes to
  another connection at once, inside :meth:`SyncTransport.send` / :meth:`AsyncTransport.send`,
  without using a retry: the connection could no longer take it when it came (its GOAWAY read,
  its stream cap, closing: ``http2.ConnectionUnusable``; an HTTP/1.1 server's FIN, a first
  write refused: ``http1.ClosedBeforeSent``), a stream above GOAWAY's last-stream-id
  (``GoAwayError``), RST_STREAM(REFUSED_STREAM). The errors say so in ``unprocessed`` (typed:
  the text is never read); at most :data:`MAX_REPLACEMENTS` times per request, after which the
  error goes up with ``replaced`` set, so the pipeline's own free re-sends
  (``pipeline.retry.free_retry``) count them. Everything else is the caller's ``max_retries``.
* **Age.** Every connection is retired at its age (``TransportSettings.max_connection_age``,
  300 s +/- 10 % by default: ``aging``): new requests go to a new connection while its own
  finish there.
* **Idle checking.** Connections are kept ``KEEPALIVE_EXPIRY_S``; before reusing a lane that has
  been idle, a connection the server closed or GOAWAY'd while we were idle is dropped (a
  non-blocking read; async connections learn it from the event loop as it happens), and one
  idle over ``PING_AFTER_IDLE_S`` must answer a PING first: a flow a NAT dropped silently
  would otherwise hang the next call until its read timeout.
* **h2c.** For ``http://`` origins we first use HTTP/2 with prior knowledge (RFC 9113 section
  3.3); if the server answers in HTTP/1.x (uvicorn, which serves vLLM and SGLang, answers the
  preface 404 or 400) the origin is recorded as HTTP/1.1-only for the whole process, sync and
  async clients alike, and the request is re-sent over HTTP/1.1 within the same call (the
  server could not have parsed it). Only that evidence counts: any other failure is the call's
  error, never a reason to send the request again over HTTP/1.1. Over TLS, ALPN chooses
  (RFC 7301): an origin that picks http/1.1 is recorded the same way.
* **HTTP/1.1 pools.** An HTTP/1.1 origin gets a pool per transport that opens connections on
  demand up to ``H1_MAX_CONNECTIONS`` (so it grows with concurrency), reuses the most recently
  used idle one first (warm), drops one the server closed while idle before it carries a
  request, and closes one idle over ``H1_IDLE_EXPIRY_S`` (HTTP/1.1 has no PING to prove a
  quiet flow alive). A response not read to its end closes its connection.
* **Proxies** (_proxy.py). ``proxy=`` or HTTP(S)_PROXY / ALL_PROXY / NO_PROXY, as httpx reads
  them: an https origin through a CONNECT tunnel (HTTP/2 or HTTP/1.1 inside, as ALPN chooses),
  an http origin by absolute-form HTTP/1.1 requests to the proxy (no h2c probe).
* **fork.** A child process never touches a connection, lock or thread it inherited: the
  shared transports are forgotten in the child (``os.register_at_fork``), whose first call
  opens its own connection; the parent's stay intact.
* **One SSL context per process** (per CA setting): building one loads the whole certifi CA
  bundle, too slow to repeat per client.
"""

from __future__ import annotations

import os
import ssl
import threading
import time
import weakref
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx

from .._logging import logger
from .aging import MAX_CONNECTION_AGE_S, check_max_age
from .connect import open_async, open_sync
from .http1 import AsyncPool as H1AsyncPool
from .http1 import SyncPool as H1SyncPool
from .http2 import AsyncPool, HTTP2ProtocolError, NotHTTP2, SyncPool
from .http2.pool import KEEPALIVE_EXPIRY_S, PING_AFTER_IDLE_S, PING_TIMEOUT_S  # noqa: F401 (tests read them here)
from .idle import ServerIdle, server_idle
from .proxy import (
    ProxyInfo,
    ProxyMap,
    connect_async,
    connect_sync,
    proxy_for,
    tunnel_async,
    tunnel_sync,
)

if TYPE_CHECKING:
    import asyncio

__all__ = ["MAX_REPLACEMENTS", "AsyncTransport", "OriginRecord", "SyncTransport", "TransportSettings", "never_sent",
           "shared_ssl_context"]

# Only look for dead idle connections after this much idle time (a select() per connection).
IDLE_CHECK_AFTER_S = 1.0
H1_MAX_CONNECTIONS = 100
# An idle HTTP/1.1 connection cannot be PINGed: past this it is closed rather than risk a flow
# a NAT dropped silently (servers' own idle timeouts are shorter: uvicorn 5 s, nginx 75 s).
H1_IDLE_EXPIRY_S = PING_AFTER_IDLE_S
# Re-sends of one request that provably never reached the server (see the module docstring):
# each goes to a usable connection, so more than a few means the origin refuses everything.
MAX_REPLACEMENTS = 8
# The trace event of each such re-send (read into ``timings.replaced``).
REPLACED_EVENT = "llmclient.replaced"


@dataclass(frozen=True, slots=True)
class TransportSettings:
    verify: bool | str = True  # True, False, or a CA bundle path
    http2: bool = True
    proxies: ProxyMap = ()  # _proxy.proxy_map(): (pattern, proxy URL or None), most specific first
    # Seconds a connection takes new requests (jittered +/- 10 %; None: no limit): aging.py
    max_connection_age: float | None = MAX_CONNECTION_AGE_S

    def __post_init__(self) -> None:
        object.__setattr__(self, "max_connection_age", check_max_age(self.max_connection_age))


def never_sent(exc: BaseException) -> bool:
    """The transport's typed verdict that ``exc``'s request never reached the server (so it may
    go to another connection at once): its ``unprocessed`` flag, never its text."""
    return bool(getattr(exc, "unprocessed", False))


def _gave_up(exc: BaseException, replaced: int) -> None:
    """``exc`` goes up after ``replaced`` placements on other connections: it says how many,
    so the pipeline's free re-sends count them (``pipeline.retry.free_retry``)."""
    if replaced:
        exc.replaced = replaced  # type: ignore[attr-defined]


_ssl_lock = threading.Lock()
_ssl_contexts: dict[bool | str, ssl.SSLContext] = {}


def shared_ssl_context(verify: bool | str = True) -> ssl.SSLContext:
    """One context per CA setting for the whole process (_http2 offers h2 and http/1.1 on it)."""
    ctx = _ssl_contexts.get(verify)
    if ctx is None:
        with _ssl_lock:
            ctx = _ssl_contexts.get(verify)
            if ctx is None:
                ctx = _new_ssl_context(verify)
                _ssl_contexts[verify] = ctx
    return ctx


_contexts_h1: dict[bool | str, ssl.SSLContext] = {}


def h1_ssl_context(verify: bool | str = True) -> ssl.SSLContext:
    """The context of HTTP/1.1 connections: ALPN offers http/1.1 alone (an origin that also
    speaks h2 must not choose it for a connection that will speak HTTP/1.1)."""
    ctx = _contexts_h1.get(verify)
    if ctx is None:
        with _ssl_lock:
            ctx = _contexts_h1.get(verify)
            if ctx is None:
                ctx = _new_ssl_context(verify)
                ctx.set_alpn_protocols(["http/1.1"])
                _contexts_h1[verify] = ctx
    return ctx


def _new_ssl_context(verify: bool | str) -> ssl.SSLContext:
    if isinstance(verify, str):
        return ssl.create_default_context(cafile=verify)
    return httpx.create_ssl_context(verify=verify)


@dataclass(slots=True)
class OriginRecord:
    """What we learned about one origin, probed once per process."""

    origin: str
    tls: bool
    h2: bool | None = None  # None: not yet known
    http_version: str | None = None
    lanes: list[Any] = field(default_factory=list)
    h1_lane: Any = None
    proxy: ProxyInfo | None = None  # the proxy this origin is reached through, if any
    # how long it lets an idle HTTP/2 connection be (learned from its closes, per process: idle.py)
    idle: ServerIdle = field(init=False)

    def __post_init__(self) -> None:
        self.idle = server_idle(self.origin)


@dataclass(slots=True)
class _Lane:
    transport: Any  # an HTTP/2 pool (_http2.SyncPool, AsyncPool) or an _h1 pool
    h2: bool
    inflight: int = 0
    last_used: float = 0.0


class _TransportBase:
    """Lane selection and per-origin records: decisions shared by the sync and async sides."""

    _h2_pool_cls: type[Any]

    def __init__(self, settings: TransportSettings) -> None:
        self.settings = settings
        self._origins: dict[str, OriginRecord] = {}
        _live_transports.add(self)

    def _after_fork(self) -> None:
        """In a forked child: forget the parent's connections without closing or writing to
        them (see :func:`_forget_inherited`)."""
        self._origins = {}

    def origin_record(self, url: httpx.URL) -> OriginRecord:
        key = f"{url.scheme}://{url.netloc.decode('ascii')}"
        rec = self._origins.get(key)
        if rec is None:
            rec = OriginRecord(key, url.scheme == "https")
            rec.proxy = proxy_for(self.settings.proxies, url)
            if rec.proxy is not None:
                logger.debug("origin %s: through proxy %s", key, rec.proxy.display)
            # h2c is never tried through a proxy: the proxy, not the origin, would answer it
            if not self.settings.http2 or key in _http1_origins or (rec.proxy and not rec.tls):
                rec.h2 = False
            rec = self._origins.setdefault(key, rec)
        return rec

    def _new_transport(self, rec: OriginRecord, h2: bool) -> Any:
        proxy = rec.proxy
        age = self.settings.max_connection_age
        if h2:
            ctx = shared_ssl_context(self.settings.verify) if rec.tls else _plain_context()
            return self._h2_pool_cls(ctx, self._tunnel(proxy) if proxy is not None else None, age, rec.idle)
        # HTTP/1.1: h2c was refused, ALPN chose http/1.1, http2=False, or an http origin
        # reached through a forward proxy (absolute-form requests to the proxy).
        url = httpx.URL(rec.origin)
        host, port = url.host, url.port or (443 if rec.tls else 80)
        h1_ctx = h1_ssl_context(self.settings.verify) if rec.tls else None
        if proxy is not None and not rec.tls:
            return self._h1_pool(proxy.host, proxy.port, None, self._to_proxy(proxy),
                                 _absolute_form, proxy.headers())
        return self._h1_pool(host, port, h1_ctx, self._tunnel(proxy) if proxy is not None else None,
                             None, None)

    def _tunnel(self, proxy: ProxyInfo) -> Any:
        raise NotImplementedError

    def _to_proxy(self, proxy: ProxyInfo) -> Any:
        raise NotImplementedError

    def _h1_pool(self, host: str, port: int, ctx: ssl.SSLContext | None, open_tcp: Any,
                 target: Callable[[httpx.URL], bytes] | None,
                 extra: list[tuple[bytes, bytes]] | None) -> Any:
        raise NotImplementedError

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
    def place_again(rec: OriginRecord, exc: Exception, replaced: int) -> bool:
        """Whether a failed send goes to another connection at once, outside the caller's
        retries: only a request that provably never reached the server (:func:`never_sent`),
        at most :data:`MAX_REPLACEMENTS` times."""
        if replaced >= MAX_REPLACEMENTS or not never_sent(exc):
            return False
        logger.debug("origin %s: %s; sending it on another connection", rec.origin, exc)
        return True

    @staticmethod
    def should_fall_back(rec: OriginRecord, exc: Exception) -> bool:
        """The origin demonstrably does not speak HTTP/2 (ALPN chose http/1.1, or h2c was
        answered in HTTP/1.x): record it and send the request over HTTP/1.1."""
        # rec.h2 may already be False: concurrent first calls all probed, one failed first.
        if not (isinstance(exc, HTTP2ProtocolError) and isinstance(exc.error, NotHTTP2)) or rec.h2 is True:
            return False
        if rec.h2 is None:
            logger.info("origin %s does not speak HTTP/2 (%s): using HTTP/1.1", rec.origin, exc)
        rec.h2 = False
        _http1_origins.add(rec.origin)
        return True


# Origins known to speak HTTP/1.1 only, for every transport of the process (each event loop
# has its own async transport; an h2c probe costs the server a rejected request each time).
_http1_origins: set[str] = set()

_plain_ctx: ssl.SSLContext | None = None


def _plain_context() -> ssl.SSLContext:
    # httpx builds (and loads certifi into) a context for every transport unless given one;
    # cleartext origins never use it, so one bare context is enough.
    global _plain_ctx
    if _plain_ctx is None:
        _plain_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    return _plain_ctx


def _absolute_form(url: httpx.URL) -> bytes:
    """The request target a forward proxy needs (RFC 9112 section 3.2.2)."""
    return b"%s://%s%s" % (url.raw_scheme, url.netloc, url.raw_path)


def _max_streams(lane: _Lane) -> int:
    if not lane.h2:
        return H1_MAX_CONNECTIONS
    return int(lane.transport.max_streams())


def _close_dead_idle_connections(transport: Any) -> None:
    check = getattr(transport, "check_idle", None)
    if check is not None:
        check()


class _LaneStreamState:
    """What the sync and async lane streams hold: the body, its lane slot, the bytes counted,
    and what read_until() read ahead (a hedged stream's race), kept for iteration."""

    def __init__(self, inner: Any, owner: _TransportBase, lane: _Lane | None) -> None:
        self._inner = inner
        self._owner = owner
        self._lane = lane
        self.bytes_received = 0
        self._started: Any = None  # the body's iterator, once read_until() started it
        self._first: list[bytes] = []
        self._error: Exception | None = None

    def _read_ahead(self) -> tuple[list[bytes], Exception | None]:
        """What read_until() kept (counted now), once; the iteration then goes on from there."""
        first, error = self._first, self._error
        self._first, self._error = [], None
        self.bytes_received += sum(len(piece) for piece in first)
        return first, error

    def _release(self) -> None:
        if self._lane is not None:
            self._owner.release(self._lane)
            self._lane = None


class _LaneStream(_LaneStreamState, httpx.SyncByteStream):
    """Counts bytes and gives the lane its slot back on close."""

    def read_until(self, enough: Callable[[bytes], bool]) -> None:
        """Read the body until ``enough(piece)`` (or its end), keeping what was read for
        iteration: a hedged stream races its copies on the first token. A transport error is
        kept too, and raised when iterated."""
        self._started = it = iter(self._inner)
        try:
            for piece in it:
                self._first.append(piece)
                if enough(piece):
                    return
        except httpx.TransportError as exc:
            self._error = exc

    def __iter__(self) -> Iterator[bytes]:
        it, self._started = self._started, None
        if it is None:
            it = iter(self._inner)
        else:
            first, error = self._read_ahead()
            yield from first
            if error is not None:
                raise error
        for chunk in it:
            self.bytes_received += len(chunk)
            yield chunk

    def close(self) -> None:
        self._inner.close()  # an unfinished HTTP/2 stream is reset there (RST_STREAM CANCEL)
        self._release()


class _AsyncLaneStream(_LaneStreamState, httpx.AsyncByteStream):

    async def read_until(self, enough: Callable[[bytes], bool]) -> None:
        """See :meth:`_LaneStream.read_until`."""
        self._started = it = self._inner.__aiter__()
        try:
            async for piece in it:
                self._first.append(piece)
                if enough(piece):
                    return
        except httpx.TransportError as exc:
            self._error = exc

    async def __aiter__(self) -> AsyncIterator[bytes]:
        it, self._started = self._started, None
        if it is None:
            it = self._inner.__aiter__()
        else:
            first, error = self._read_ahead()
            for piece in first:
                yield piece
            if error is not None:
                raise error
        async for chunk in it:
            self.bytes_received += len(chunk)
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()
        self._release()

    def abandon(self) -> None:
        """Without awaiting (a stream garbage-collected unclosed): reset an unfinished HTTP/2
        stream and give the slot back. An HTTP/1.1 connection is left to httpcore."""
        inner_abandon = getattr(self._inner, "abandon", None)
        if inner_abandon is not None:
            inner_abandon()
        self._release()


class SyncTransport(_TransportBase):
    _h2_pool_cls = SyncPool

    def __init__(self, settings: TransportSettings) -> None:
        super().__init__(settings)
        self._lock = threading.Lock()

    def _after_fork(self) -> None:
        super()._after_fork()
        self._lock = threading.Lock()  # a thread of the parent may have held it at fork()

    def _tunnel(self, proxy: ProxyInfo) -> Any:
        return tunnel_sync(proxy)

    def _to_proxy(self, proxy: ProxyInfo) -> Any:
        return lambda _host, _port, timeout: connect_sync(proxy, timeout)

    def _h1_pool(self, host: str, port: int, ctx: ssl.SSLContext | None, open_tcp: Any,
                 target: Callable[[httpx.URL], bytes] | None,
                 extra: list[tuple[bytes, bytes]] | None) -> Any:

        def open_socket(request: httpx.Request) -> Any:
            return open_sync(host, port, ctx, request, open_tcp)

        return H1SyncPool(open_socket, H1_MAX_CONNECTIONS, H1_IDLE_EXPIRY_S, target, extra,
                          reuse_only_if_said=target is not None, max_age_s=self.settings.max_connection_age)

    def send(self, request: httpx.Request) -> httpx.Response:
        rec = self.origin_record(request.url)
        replaced = 0
        while True:
            with self._lock:
                lane = self.pick_lane(rec)
            try:
                response = lane.transport.handle_request(request)
                break
            except BaseException as exc:  # cancelled too: the lane slot must come back
                self.release(lane)
                if not isinstance(exc, Exception):
                    raise
                if self.should_fall_back(rec, exc):
                    return self.send(request)
                if not self.place_again(rec, exc, replaced):
                    _gave_up(exc, replaced)
                    raise
                replaced += 1
                trace = request.extensions.get("trace")
                if trace is not None:
                    trace(REPLACED_EVENT, {"error": type(exc).__name__})
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
    _h2_pool_cls = AsyncPool

    def _tunnel(self, proxy: ProxyInfo) -> Any:
        return tunnel_async(proxy)

    def _to_proxy(self, proxy: ProxyInfo) -> Any:
        return lambda _host, _port, factory: connect_async(proxy, factory)

    def _h1_pool(self, host: str, port: int, ctx: ssl.SSLContext | None, open_tcp: Any,
                 target: Callable[[httpx.URL], bytes] | None,
                 extra: list[tuple[bytes, bytes]] | None) -> Any:

        def open_transport(request: httpx.Request, factory: Callable[[], Any]) -> Any:
            return open_async(host, port, ctx, request, factory, open_tcp)

        return H1AsyncPool(open_transport, H1_MAX_CONNECTIONS, H1_IDLE_EXPIRY_S, target, extra,
                           reuse_only_if_said=target is not None, max_age_s=self.settings.max_connection_age)

    async def send(self, request: httpx.Request) -> httpx.Response:
        rec = self.origin_record(request.url)
        replaced = 0
        while True:
            lane = self.pick_lane(rec)
            try:
                response = await lane.transport.handle_async_request(request)
                break
            except BaseException as exc:  # cancelled too: the lane slot must come back
                self.release(lane)
                if not isinstance(exc, Exception):
                    raise
                if self.should_fall_back(rec, exc):
                    return await self.send(request)
                if not self.place_again(rec, exc, replaced):
                    _gave_up(exc, replaced)
                    raise
                replaced += 1
                trace = request.extensions.get("trace")
                if trace is not None:
                    await trace(REPLACED_EVENT, {"error": type(exc).__name__})
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


# Every transport of the process (held weakly), so a forked child can empty each of them.
_live_transports: weakref.WeakSet[_TransportBase] = weakref.WeakSet()
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


def _forget_inherited() -> None:
    """In a forked child: drop (never close, never write to) what the parent's transports hold.
    Their sockets are the parent's connections too; a frame written here would interleave with
    the parent's on the same TCP stream. Clients keep their transport object, which starts
    empty: the child's next call opens its own connection. The inherited sockets are left to
    the garbage collector (closing a descriptor in the child leaves the parent's open)."""
    global _sync_lock, _ssl_lock
    _sync_lock = threading.Lock()  # another thread of the parent may have held it at fork()
    _ssl_lock = threading.Lock()
    for transport in list(_live_transports):
        transport._after_fork()
    _async_transports.clear()  # the parent's event loops do not run in the child


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_inherited)


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
    import asyncio  # asyncio is heavy: the async client's first use loads it, not `import llmclient`

    per_loop = _async_transports.pop(asyncio.get_running_loop(), None) or {}
    for transport in per_loop.values():
        await transport.aclose()
