"""Our own HTTP/1.1 client connections (RFC 9112): sync and async I/O over the sans-I/O parser.

Why not httpcore + h11: vLLM, SGLang, llama.cpp and Ollama speak HTTP/1.1 only, and there the
httpx -> httpcore -> h11 stack (and anyio under the async side) was most of llmclient's client
CPU, as httpcore + h2 was on HTTP/2 (the _http2 package). A client needs a small part of
HTTP/1.1: one request at a time per connection, no pipelining, no upgrades.

Layout:

* :class:`~llmclient.transport.http1_parser.ResponseParser` - the response side of the
  protocol, no I/O (``http1_parser.py``, with the request's bytes and the typed errors).
* :class:`SyncConnection` / :class:`SyncPool` - blocking sockets; the pool opens connections on
  demand up to its cap and keeps idle ones warm (most recently used first), checking each
  before reuse (a connection the server closed while idle is dropped without a request sent).
* :class:`AsyncConnection` / :class:`AsyncPool` - an asyncio Protocol (the event loop feeds
  it, and tells it at once when the server closes an idle connection) and its pool.

A response whose body is not read to its end (closed early, or broken) closes its connection:
the rest of its bytes would otherwise be read as the next response. Errors are httpx's classes
(ConnectError, ReadTimeout, WriteError ...); the protocol's own are typed subclasses of
RemoteProtocolError (:class:`MalformedResponse`, :class:`ConnectionLost`) with
``unprocessed`` as http2 has it: True only where the server demonstrably did not read the
request. Trace events use httpcore's ``http11.*`` names, so timings read both stacks alike.
"""

from __future__ import annotations

import collections
import random
import select
import socket
import ssl
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import TYPE_CHECKING, Any, Final, cast

import httpx

from .._logging import logger
from .aging import MAX_CONNECTION_AGE_S, retire_at
from .connect import (
    POOL_WAIT_EVENT,
    kernel_timeouts,
    peer_of,
    pool_timeout_error,
    request_timeout,
    set_timeout,
)
from .http1_parser import (
    ClosedBeforeSent,
    ConnectionLost,
    H1Error,
    MalformedResponse,
    ResponseParser,
    make_response,
    request_bytes,
)
from .reads import BufferedReads, buffered, receiver

if TYPE_CHECKING:
    import asyncio

__all__ = [
    "AsyncConnection",
    "AsyncPool",
    "ClosedBeforeSent",
    "ConnectionLost",
    "H1Error",
    "MalformedResponse",
    "ResponseParser",
    "SyncConnection",
    "SyncPool",
    "request_bytes",
]

# Async: body bytes buffered for a reader that does not keep up before the socket stops
# being read (TCP flow control then slows the server down).
_HIGH_WATER: Final = 1024 * 1024

_rng = random.Random()


def _report_wait(request: httpx.Request, waited: float) -> Any:
    """The trace callback's result for a request that waited for a connection (a coroutine
    for the async client), or None."""
    trace = request.extensions.get("trace")
    return trace(POOL_WAIT_EVENT, {"seconds": waited}) if trace is not None and waited > 0.0 else None


# -- sync -----------------------------------------------------------------------------------


class SyncConnection:
    """One HTTP/1.1 connection: one request at a time, used by one thread at a time."""

    def __init__(self, sock: socket.socket, pool: SyncPool) -> None:
        self._sock = sock
        self._recv = receiver(sock)  # reads.py: no 256 KiB block shrunk per read
        self._pool = pool
        self.last_used = now = time.monotonic()
        self.retire_at = retire_at(now, pool.max_age_s, _rng.random())  # aging: past it, not reused
        self.peer = peer_of(sock)
        self.closed = False
        self._kernel_timeouts = kernel_timeouts(sock)
        self._sock_timeout: float | None = -1.0  # nothing set yet
        self._cancelled: Exception | None = None
        self._current: ResponseParser | None = None  # the response in flight
        self._cancel_lock = threading.Lock()
        self.returned = False  # given back to the pool for good (closed)

    # -- what the pool asks ----------------------------------------------------------------

    def dead_while_idle(self) -> bool:
        """An idle connection has nothing to read unless the server closed it (or broke the
        protocol): then it must not carry a request."""
        sock = self._sock
        try:
            if isinstance(sock, ssl.SSLSocket) and sock.pending():
                return True
            return bool(select.select([sock], [], [], 0)[0])
        except (OSError, ValueError):
            return True

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            try:
                self._sock.close()
            except OSError:
                pass

    # -- one request -----------------------------------------------------------------------

    def request(self, request: httpx.Request, target: bytes | None = None,
                extra: list[tuple[bytes, bytes]] | None = None) -> httpx.Response:
        trace = request.extensions.get("trace")
        head = request_bytes(request, target, extra)
        body = request.content
        parser = self._current = ResponseParser(no_body=request.method == "HEAD")
        token = request.extensions.get("llmclient.cancel")
        if token is not None:  # another thread may cancel this request (a hedge that lost)
            token.attach(lambda exc: self._cancel_elsewhere(parser, exc))
        if trace:
            trace("http11.send_request_headers.started", {"peer": self.peer})
        write_error = self._send(head, body, request_timeout(request, "write"))
        if trace:
            trace("http11.send_request_body.complete", {})
        read_timeout = request_timeout(request, "read")
        try:
            while not parser.head_done:
                self._read_into(parser, read_timeout)
        except httpx.TransportError as exc:
            if write_error is not None:  # the write failed, and no early answer came
                raise write_error from exc
            raise
        if trace:
            trace("http11.receive_response_headers.complete", {})
        if write_error is not None:
            parser.keep_alive = False  # it answered (413 ...) a request it did not read to its end
        body_stream = _SyncBody(self, parser, read_timeout)
        response = make_response(parser, body_stream)
        if parser.complete:
            body_stream.finished()
        return response

    def _send(self, head: bytes, body: bytes, timeout: float | None) -> httpx.TransportError | None:
        """Send the request; a write error is returned, not raised: the server may have
        answered before it stopped reading (then its answer is the call's)."""
        data = head + body if body and len(body) <= 65536 else head
        sent = 0
        try:
            self._set_timeout(timeout)
            # one send() first: a connection the server closed refuses it (EPIPE, ECONNRESET)
            # before any byte of the request is out, which proves the server never read it
            sent = self._sock.send(data)
            if sent < len(data):
                self._sock.sendall(memoryview(data)[sent:])
            if len(data) < len(head) + len(body):
                self._sock.sendall(body)
        except (TimeoutError, BlockingIOError):
            self.close()
            raise httpx.WriteTimeout("write timed out") from None
        except OSError as exc:
            if self._cancelled is not None:
                raise self._cancelled from None
            if sent == 0:
                self.close()
                raise ClosedBeforeSent(f"the server closed the connection before the request was written "
                                       f"({exc})") from exc
            return httpx.WriteError(str(exc) or type(exc).__name__)
        return None

    def _read_into(self, parser: ResponseParser, timeout: float | None) -> None:
        """One recv into ``parser``; raises (after closing the connection) on any failure."""
        try:
            if timeout != self._sock_timeout:
                self._set_timeout(timeout)
            data = self._recv()
        except (TimeoutError, BlockingIOError):
            self.close()
            raise httpx.ReadTimeout("read timed out") from None
        except OSError as exc:
            self.close()
            if self._cancelled is not None:
                raise self._cancelled from None
            text = str(exc) or type(exc).__name__
            raise ConnectionLost(f"Connection reset: {text}" if isinstance(exc, ConnectionResetError)
                                 else text) from None
        if self._cancelled is not None:  # shutdown() by _cancel_elsewhere reads as an EOF
            self.close()
            raise self._cancelled
        try:
            if data:
                parser.receive(data)
            else:
                parser.eof()
        except H1Error:
            self.close()
            raise
        if not data and not parser.complete:  # pragma: no cover - eof() raised above
            self.close()

    def _set_timeout(self, timeout: float | None) -> None:
        if timeout == self._sock_timeout:
            return
        self._sock_timeout = timeout
        set_timeout(self._sock, timeout, self._kernel_timeouts)

    def _cancel_elsewhere(self, parser: ResponseParser, exc: Exception) -> None:
        """From another thread: the blocked read returns, and the request fails with ``exc``.
        HTTP/1.1 has no way to cancel one request but closing its connection (only while
        that request is still the connection's: it may be back in the pool by now)."""
        with self._cancel_lock:
            if self._current is not parser:
                return
            self._cancelled = exc
            try:
                self._sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def done(self, parser: ResponseParser) -> None:
        """The response ended (read to its end, or given up): back to the pool, or closed."""
        with self._cancel_lock:
            self._current = None
        reuse = (parser.complete and parser.keep_alive and not parser.extra and not self.closed
                 and self._cancelled is None and (parser.keep_alive_said or not self._pool.reuse_only_if_said)
                 and time.monotonic() < self.retire_at)
        if parser.extra:
            logger.debug("HTTP/1.1 server sent %d bytes after its response: closing the connection",
                         len(parser.extra))
        if not reuse:
            self.close()
        self._pool.put_back(self, reuse)


class _SyncBody(httpx.SyncByteStream):
    def __init__(self, conn: SyncConnection, parser: ResponseParser, timeout: float | None) -> None:
        self._conn: SyncConnection | None = conn
        self._parser = parser
        self._timeout = timeout

    def finished(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.done(self._parser)

    def __iter__(self) -> Iterator[bytes]:
        parser = self._parser
        while True:
            chunks = parser.body
            if chunks:
                parser.body = []
                if parser.complete:
                    self.finished()
                # what arrived together is handed on together: one decode pass
                yield chunks[0] if len(chunks) == 1 else b"".join(chunks)
            elif parser.complete:
                self.finished()
                return
            elif self._conn is None:
                raise httpx.StreamClosed()
            else:
                try:
                    self._conn._read_into(parser, self._timeout)
                except BaseException:
                    self.finished()
                    raise

    def close(self) -> None:
        # an unfinished body closes the connection (done() sees it incomplete)
        self.finished()


class SyncPool:
    """The HTTP/1.1 connections of one origin (or of one proxy, for a proxied http origin).

    ``reuse_only_if_said``: keep a connection only after a response that said keep-alive.
    For a forward proxy: some (tinyproxy) answer an HTTP/1.1 request without Connection:
    close and then close the connection anyway, so the next request would race the FIN and
    fail, with nothing to prove the proxy never forwarded it."""

    def __init__(self, open_socket: Callable[[httpx.Request], socket.socket], max_connections: int,
                 idle_expiry_s: float, target: Callable[[httpx.URL], bytes] | None = None,
                 extra_headers: list[tuple[bytes, bytes]] | None = None,
                 reuse_only_if_said: bool = False, max_age_s: float | None = MAX_CONNECTION_AGE_S) -> None:
        self.reuse_only_if_said = reuse_only_if_said
        self.max_age_s = max_age_s
        self._open_socket = open_socket
        self._max = max_connections
        self._expiry = idle_expiry_s
        self._target = target
        self._extra = extra_headers
        self._idle: list[SyncConnection] = []  # most recently used last
        self._count = 0  # open connections, idle or busy
        self._cond = threading.Condition(threading.Lock())

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        conn = self._acquire(request)
        target = self._target(request.url) if self._target is not None else None
        try:
            return conn.request(request, target, self._extra)
        except BaseException:
            conn.close()
            self.put_back(conn, False)
            raise

    def _acquire(self, request: httpx.Request) -> SyncConnection:
        """An idle connection, or a slot for a new one: waiting (at the cap) under the
        request's pool timeout; the connect timeout starts only once it connects."""
        deadline: float | None = None
        t0 = 0.0
        with self._cond:
            while True:
                conn = self._take_idle()
                if conn is not None:
                    break
                if self._count < self._max:
                    self._count += 1
                    break
                timeout = request_timeout(request, "pool")
                if deadline is None:
                    t0 = time.monotonic()
                    deadline = float("inf") if timeout is None else t0 + timeout
                left = deadline - time.monotonic()
                if left <= 0 or not self._cond.wait(None if left == float("inf") else left):
                    raise pool_timeout_error(request, timeout, f"one of {self._max} busy HTTP/1.1 connections")
        if deadline is not None:
            _report_wait(request, time.monotonic() - t0)
        if conn is not None:
            return conn
        try:
            sock = self._open_socket(request)
        except BaseException:
            with self._cond:
                self._count -= 1
                self._cond.notify()
            raise
        return SyncConnection(sock, self)

    def _take_idle(self) -> SyncConnection | None:
        """The most recently used idle connection still good (under the lock)."""
        now = time.monotonic()
        while self._idle:
            conn = self._idle.pop()
            fresh = now - conn.last_used <= self._expiry and now < conn.retire_at
            if fresh and not conn.dead_while_idle():
                return conn
            if fresh:
                logger.debug("dropping an idle HTTP/1.1 connection the server has closed")
            conn.close()
            self._count -= 1
        return None

    def put_back(self, conn: SyncConnection, reuse: bool) -> None:
        stale: list[SyncConnection] = []
        with self._cond:
            if conn.returned:
                return
            if reuse:
                now = conn.last_used = time.monotonic()
                idle = self._idle
                idle.append(conn)
                while now - idle[0].last_used > self._expiry:  # the oldest, left unused
                    stale.append(idle.pop(0))
                    self._count -= 1
            else:
                conn.returned = True
                self._count -= 1
            self._cond.notify()
        for old in stale:
            old.close()

    def check_idle(self) -> None:
        """Idle connections are checked as they are taken; nothing to do here."""

    def close(self) -> None:
        with self._cond:
            idle, self._idle = self._idle, []
            self._count -= len(idle)
        for conn in idle:
            conn.close()


# -- async ----------------------------------------------------------------------------------


class AsyncConnection(BufferedReads):
    """One HTTP/1.1 connection on the running event loop (an asyncio Protocol; its reads go
    through this thread's buffer, reads.py)."""

    def __init__(self, pool: AsyncPool | None = None) -> None:
        import asyncio  # asyncio is heavy: the async client's first use loads it, not `import llmclient`

        self.transport: Any = None
        self._pool = pool
        self._loop = asyncio.get_running_loop()
        self._parser: ResponseParser | None = None
        self._error: Exception | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._drain: asyncio.Future[None] | None = None
        self._paused = False
        self.closed = False
        self.last_used = now = time.monotonic()
        max_age = pool.max_age_s if pool is not None else None
        self.retire_at = retire_at(now, max_age, _rng.random())  # aging: past it, not reused
        self.peer: tuple[str, str] | None = None
        self.returned = False  # given back to the pool for good (closed)

    # asyncio.Protocol ----------------------------------------------------------------------

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        self.peer = peer_of(transport.get_extra_info("socket"))

    def data_received(self, data: bytes) -> None:
        parser = self._parser
        if parser is None:  # bytes on an idle connection: the server broke the protocol
            logger.debug("HTTP/1.1 server sent %d bytes to an idle connection: closing it", len(data))
            self._fail(ConnectionLost("unexpected bytes on an idle connection"))
            return
        try:
            parser.receive(data)
        except H1Error as exc:
            self._fail(exc)
            return
        if (not parser.complete and len(parser.body) > 8 and not self._paused
                and sum(map(len, parser.body)) > _HIGH_WATER):
            self._paused = True
            self.transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool:
        parser = self._parser
        if parser is not None:
            try:
                parser.eof()
            except H1Error as exc:
                self._fail(exc)
                return False
        self.closed = True
        self._wake()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        parser = self._parser
        if parser is not None and not parser.complete and self._error is None:
            if isinstance(exc, ConnectionResetError):
                self._error = ConnectionLost(f"Connection reset: {exc}")
            elif exc is not None:
                self._error = ConnectionLost(f"Connection lost: {exc}")
            else:
                try:
                    parser.eof()
                except H1Error as err:
                    self._error = err
        self._wake()
        if self._drain is not None and not self._drain.done():
            self._drain.set_result(None)

    def pause_writing(self) -> None:
        if self._drain is None or self._drain.done():
            self._drain = self._loop.create_future()

    def resume_writing(self) -> None:
        if self._drain is not None and not self._drain.done():
            self._drain.set_result(None)

    # -- internals -------------------------------------------------------------------------

    def _fail(self, exc: Exception) -> None:
        if self._error is None:
            self._error = exc
        self.closed = True
        if self.transport is not None:
            self.transport.abort()
        self._wake()

    def _wake(self) -> None:
        fut = self._waiter
        if fut is not None and not fut.done():
            fut.set_result(None)

    async def _wait(self, timeout: float | None) -> None:
        fut = self._waiter = self._loop.create_future()
        if timeout is None:
            await fut
            return
        handle = self._loop.call_later(timeout, _expire, fut)
        try:
            await fut
        finally:
            handle.cancel()

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    # -- one request -----------------------------------------------------------------------

    async def request(self, request: httpx.Request, target: bytes | None = None,
                      extra: list[tuple[bytes, bytes]] | None = None) -> httpx.Response:
        trace = request.extensions.get("trace")
        head = request_bytes(request, target, extra)
        body = request.content
        if self.closed or self.transport is None or self.transport.is_closing():
            # the server's FIN (or a break) arrived since the pool chose it: nothing is written
            raise ClosedBeforeSent("the server closed the connection before the request was written")
        parser = self._parser = ResponseParser(no_body=request.method == "HEAD")
        self.last_used = time.monotonic()
        token = request.extensions.get("llmclient.cancel")
        if token is not None:  # a hedged copy that may lose its race (on this loop)
            token.attach(lambda exc: self._cancel_elsewhere(parser, exc))
        if trace:
            await trace("http11.send_request_headers.started", {"peer": self.peer})
        self.transport.write(head + body if body and len(body) <= 65536 else head)
        if body and len(body) > 65536:
            self.transport.write(body)
        if self._drain is not None and not self._drain.done():
            await self._wait_drain(request_timeout(request, "write"))
        if trace:
            await trace("http11.send_request_body.complete", {})
        read_timeout = request_timeout(request, "read")
        while not parser.head_done:
            if self._error is not None:
                raise self._error
            if self.closed and not parser.head_done:
                raise ConnectionLost("Server disconnected without sending a response.")
            try:
                await self._wait(read_timeout)
            except httpx.ReadTimeout:
                self.close()
                raise
        if trace:
            await trace("http11.receive_response_headers.complete", {})
        stream = _AsyncBody(self, parser, read_timeout)
        if parser.complete:
            stream.finished()
        return make_response(parser, stream)

    async def _wait_drain(self, timeout: float | None) -> None:
        import asyncio  # asyncio is heavy: the async client's first use loads it, not `import llmclient`

        assert self._drain is not None
        try:
            await asyncio.wait_for(asyncio.shield(self._drain), timeout)
        except asyncio.TimeoutError:
            self.close()
            raise httpx.WriteTimeout("write timed out") from None
        if self.closed and self._error is not None:
            raise self._error

    async def read_some(self, parser: ResponseParser, timeout: float | None) -> list[bytes]:
        while True:
            chunks = parser.body
            if chunks:
                parser.body = []
                if self._paused:
                    self._paused = False
                    self.transport.resume_reading()
                return chunks
            if parser.complete:
                return []
            if self._error is not None:
                raise self._error
            if self.closed:
                raise ConnectionLost("connection closed before the response ended")
            try:
                await self._wait(timeout)
            except httpx.ReadTimeout:
                self.close()
                raise

    def _cancel_elsewhere(self, parser: ResponseParser, exc: Exception) -> None:
        """From a callback on this loop: the waiting task raises ``exc``; the connection
        closes (HTTP/1.1 cancels a request no other way), if it still carries that request."""
        if self._parser is parser and not parser.complete:
            self._fail(exc)

    def done(self, parser: ResponseParser) -> None:
        reuse = (parser.complete and parser.keep_alive and not parser.extra and not self.closed
                 and self._error is None
                 and (parser.keep_alive_said or self._pool is None or not self._pool.reuse_only_if_said)
                 and time.monotonic() < self.retire_at)
        if reuse:
            self._parser = None
        else:
            self.close()
        if self._pool is not None:
            self._pool.put_back(self, reuse)


async def _areport_wait(request: httpx.Request, t0: float) -> None:
    pending = _report_wait(request, time.monotonic() - t0)
    if pending is not None:
        await pending


def _expire(fut: Any) -> None:
    if not fut.done():
        fut.set_exception(httpx.ReadTimeout("read timed out"))


class _AsyncBody(httpx.AsyncByteStream):
    def __init__(self, conn: AsyncConnection, parser: ResponseParser, timeout: float | None) -> None:
        self._conn: AsyncConnection | None = conn
        self._parser = parser
        self._timeout = timeout

    def finished(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.done(self._parser)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        parser = self._parser
        while True:
            chunks = parser.body
            if chunks and self._conn is None:  # complete: what is left, then the end
                parser.body = []
                yield chunks[0] if len(chunks) == 1 else b"".join(chunks)
                continue
            if self._conn is None:
                if parser.complete:
                    return
                raise httpx.StreamClosed()
            try:
                chunks = await self._conn.read_some(parser, self._timeout)
            except BaseException:
                self.finished()
                raise
            if parser.complete:
                self.finished()
            if not chunks:
                return
            yield chunks[0] if len(chunks) == 1 else b"".join(chunks)

    async def aclose(self) -> None:
        self.finished()

    def abandon(self) -> None:
        self.finished()


class AsyncPool:
    """The async HTTP/1.1 connections of one origin (or proxy) on one event loop (see
    :class:`SyncPool` for ``reuse_only_if_said``)."""

    def __init__(self, open_transport: Callable[[httpx.Request, Callable[[], Any]], Any], max_connections: int,
                 idle_expiry_s: float, target: Callable[[httpx.URL], bytes] | None = None,
                 extra_headers: list[tuple[bytes, bytes]] | None = None,
                 reuse_only_if_said: bool = False, max_age_s: float | None = MAX_CONNECTION_AGE_S) -> None:
        self.reuse_only_if_said = reuse_only_if_said
        self.max_age_s = max_age_s
        self._open_transport = open_transport
        self._max = max_connections
        self._expiry = idle_expiry_s
        self._target = target
        self._extra = extra_headers
        self._idle: list[AsyncConnection] = []
        self._count = 0
        self._waiters: collections.deque[Any] = collections.deque()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        conn = self._take_idle()
        if conn is None:
            conn = await self._new_or_wait(request)
        target = self._target(request.url) if self._target is not None else None
        try:
            return await conn.request(request, target, self._extra)
        except BaseException:
            conn.close()
            self.put_back(conn, False)
            raise

    def _take_idle(self) -> AsyncConnection | None:
        now = time.monotonic()
        while self._idle:
            conn = self._idle.pop()
            if not conn.closed and now - conn.last_used <= self._expiry and now < conn.retire_at:
                return conn
            conn.close()
            self._count -= 1
        return None

    async def _new_or_wait(self, request: httpx.Request) -> AsyncConnection:
        import asyncio  # asyncio is heavy: the async client's first use loads it, not `import llmclient`

        deadline: float | None = None
        t0: float | None = None
        timeout = request_timeout(request, "pool")
        while self._count >= self._max:
            if t0 is None:
                t0 = time.monotonic()
                deadline = None if timeout is None else t0 + timeout
            fut = asyncio.get_running_loop().create_future()
            self._waiters.append(fut)
            try:
                left = None if deadline is None else max(0.0, deadline - time.monotonic())
                await asyncio.wait_for(fut, left)
            except asyncio.TimeoutError:
                raise pool_timeout_error(request, timeout, f"one of {self._max} busy HTTP/1.1 connections") from None
            finally:
                if fut in self._waiters:
                    self._waiters.remove(fut)
            conn = self._take_idle()
            if conn is not None:
                await _areport_wait(request, t0)
                return conn
        self._count += 1
        try:
            if t0 is not None:
                await _areport_wait(request, t0)
            _transport, protocol = await self._open_transport(request, lambda: buffered(AsyncConnection)(self))
        except BaseException:
            self._count -= 1
            self._wake_one()
            raise
        return cast(AsyncConnection, protocol)

    def put_back(self, conn: AsyncConnection, reuse: bool) -> None:
        if conn.returned:
            return
        if reuse:
            now = conn.last_used = time.monotonic()
            idle = self._idle
            idle.append(conn)
            while now - idle[0].last_used > self._expiry:  # the oldest, left unused
                idle.pop(0).close()
                self._count -= 1
        else:
            conn.returned = True
            self._count -= 1
        self._wake_one()

    def _wake_one(self) -> None:
        while self._waiters:
            fut = self._waiters.popleft()
            if not fut.done():
                fut.set_result(None)
                return

    def check_idle(self) -> None:
        """The event loop tells each connection when the server closes it: nothing to do."""

    async def aclose(self) -> None:
        idle, self._idle = self._idle, []
        self._count -= len(idle)
        for conn in idle:
            conn.close()
