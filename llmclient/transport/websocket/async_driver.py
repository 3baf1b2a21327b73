"""A WebSocket on the running event loop: an asyncio Protocol, written by hand (not generated
from the sync driver: the concurrency differs, the loop feeds it instead of a reading thread).

The event loop hands it bytes (:meth:`AsyncWebSocket.data_received`); the session makes
messages of them, and a waiting :meth:`~AsyncWebSocket.recv` wakes. Writes go to the transport
at once; a peer that does not read makes ``send`` wait (``pause_writing``) up to
``write_timeout``. A reader that does not keep up makes the socket stop being read once
``max_queue`` messages wait (TCP flow control then slows the server). Pings on silence run on
a loop timer (``heartbeat.py``), whether or not anyone is reading.
"""

from __future__ import annotations

import collections
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from ..._logging import logger
from ..connect import open_async
from ..proxy import tunnel_async
from ..reads import BufferedReads, buffered
from .errors import WebSocketClosed, WebSocketError, WebSocketTimeout
from .heartbeat import Heartbeat
from .session import Closed, Message, Opened, Pong, Session
from .setup import WebSocketOptions, connect_request, new_session, plan_route, tls_context

if TYPE_CHECKING:
    import asyncio

__all__ = ["AsyncWebSocket", "connect"]


async def connect(url: str, options: WebSocketOptions | None = None) -> AsyncWebSocket:
    """Open a WebSocket to ``url`` (ws:// or wss://) with llmclient's connection set-up and do
    the handshake; the errors of :func:`llmclient.transport.websocket.sync_driver.connect`."""
    options = options or WebSocketOptions()
    session = new_session(url, options)
    route = plan_route(session, options)
    ctx = tls_context(route, options)
    open_tcp = tunnel_async(route.proxy) if route.proxy is not None else None
    _, ws = await open_async(route.host, route.port, ctx, connect_request(session, options),
                             lambda: buffered(AsyncWebSocket)(session, options), open_tcp)
    try:
        await ws._handshake()
    except BaseException:
        ws._abort_transport()
        raise
    return ws


def _expire(fut: Any, exc: BaseException) -> None:
    if not fut.done():
        fut.set_exception(exc)


class AsyncWebSocket(BufferedReads):
    """An open client WebSocket on one event loop (an asyncio Protocol; its reads go through
    this thread's buffer, reads.py)."""

    def __init__(self, session: Session, options: WebSocketOptions) -> None:
        import asyncio  # asyncio is heavy: the async client's first use loads it

        self._asyncio = asyncio
        self._loop = asyncio.get_running_loop()
        self.session = session
        self.url = session.url
        self.options = options
        self._transport: Any = None
        self._messages: collections.deque[Message] = collections.deque()
        self._waiter: asyncio.Future[None] | None = None
        self._opened: asyncio.Future[None] = self._loop.create_future()
        self._lost: asyncio.Future[None] = self._loop.create_future()
        self._drained: asyncio.Future[None] | None = None
        self._paused_reading = False
        self._paused_writing = False
        self._error: BaseException | None = None
        self.heartbeat = Heartbeat(options.ping_interval, options.ping_timeout)
        self._timer: asyncio.TimerHandle | None = None
        # recv's limit: the waiting recv's deadline (loop time) and one timer for all the waits
        # of a stream, re-armed lazily (see _recv_check) instead of a timer per wait
        self._recv_deadline: float | None = None
        self._recv_limit = 0.0
        self._recv_timer: asyncio.TimerHandle | None = None
        self.response_headers: tuple[tuple[str, str], ...] = ()
        self.extensions: tuple[str, ...] = ()
        self.last_message_at = 0.0  # monotonic time of the last message (not pings)
        self.opened_at = 0.0  # monotonic time the handshake ended
        self.bytes_sent = 0  # WebSocket bytes (frames, the handshake; not TLS records), for the call records
        self.bytes_received = 0

    # -- asyncio.Protocol ------------------------------------------------------------------
    def connection_made(self, transport: Any) -> None:
        self._transport = transport  # again after start_tls: the TLS transport from then on

    def data_received(self, data: bytes) -> None:
        self.bytes_received += len(data)
        now = time.monotonic()
        self.heartbeat.received(now)
        try:
            events = self.session.receive(data)
        except WebSocketError as exc:
            self._flush()
            self._fail(exc, graceful=True)
            return
        self._flush()
        self._take(events, now)
        if self.session.failure is not None:
            # recv raises it once the messages before it are read; the close frame goes first
            self._fail(self.session.failure, graceful=True)

    def eof_received(self) -> bool:
        try:
            events = self.session.receive_eof()
        except WebSocketError as exc:
            self._fail(exc)
            return False
        self._take(events, time.monotonic())
        return False  # the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        if self.session.closed_event is None:
            self.session.closed_event = Closed(1006, f"connection lost: {exc}" if exc else "", False)
        if self._timer is not None:
            self._timer.cancel()
        if self._recv_timer is not None:
            self._recv_timer.cancel()
            self._recv_timer = None
        if not self._opened.done():
            self._opened.set_exception(self._error or WebSocketClosed(
                self.url, 1006, "the server closed the connection during the handshake", False))
            self._opened.exception()  # retrieved: a failed connect raises it from _handshake
        if not self._lost.done():
            self._lost.set_result(None)
        self._wake()
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)

    def pause_writing(self) -> None:
        self._paused_writing = True

    def resume_writing(self) -> None:
        self._paused_writing = False
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)

    # -- events ----------------------------------------------------------------------------
    def _take(self, events: list[Any], now: float) -> None:
        for ev in events:
            if isinstance(ev, Message):
                self._messages.append(ev)
                self.last_message_at = now
            elif isinstance(ev, Pong):
                self.heartbeat.pong(ev.data, now)
                self._schedule_beat()  # the next ping is due an interval from now, not at the pong's deadline
            elif isinstance(ev, Opened):
                self.response_headers, self.extensions = ev.headers, ev.extensions
                self.last_message_at = self.opened_at = now
                self.heartbeat.start(now)
                self._schedule_beat()
                if not self._opened.done():
                    self._opened.set_result(None)
        if self._messages or self.session.closed_event is not None:
            self._wake()
        if (len(self._messages) >= self.options.max_queue and not self._paused_reading
                and self._transport is not None):
            self._paused_reading = True
            self._transport.pause_reading()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _fail(self, exc: BaseException, graceful: bool = False) -> None:
        """Break the connection with ``exc``; ``graceful``: what is written still goes out
        (a close frame) before the transport closes."""
        if self._error is None:
            self._error = exc
        if not self._opened.done():
            self._opened.set_exception(exc)
            self._opened.exception()
        self._wake()
        if graceful and self._transport is not None:
            self._transport.close()
        else:
            self._abort_transport()

    def _flush(self) -> None:
        out = self.session.outgoing()
        if out and self._transport is not None and not self._transport.is_closing():
            self._transport.write(out)
            self.bytes_sent += len(out)
        transport = self._transport
        if self.session.eof_pending and transport is not None and transport.can_write_eof():
            try:
                transport.write_eof()
            except (OSError, RuntimeError):
                pass

    def _abort_transport(self) -> None:
        if self._transport is not None:
            self._transport.abort()

    # -- the handshake ---------------------------------------------------------------------
    async def _handshake(self) -> None:
        request = self.session.start()
        self._transport.write(request)
        self.bytes_sent += len(request)
        timeout = self.options.open_timeout
        handle = None
        if timeout is not None:
            handle = self._loop.call_later(timeout, _expire, self._opened, WebSocketTimeout(
                f"the server at {self.url} did not answer the WebSocket handshake within "
                f"{timeout:g} s", self.url))
        try:
            await self._opened
        finally:
            if handle is not None:
                handle.cancel()

    # -- the API ---------------------------------------------------------------------------
    async def send(self, data: str | bytes) -> None:
        """Send one message (``str``: text, ``bytes``: binary); after a close,
        :class:`WebSocketClosed` naming the send."""
        if self._error is not None:
            raise self._closed("send") from self._error
        self._write(self.session.send(data))
        if self._paused_writing:
            await self._drain()

    async def send_text(self, data: bytes) -> None:
        """Send bytes that are UTF-8 already (orjson's output) as a text message."""
        if self._error is not None:
            raise self._closed("send") from self._error
        self._write(self.session.send_text(data))
        if self._paused_writing:
            await self._drain()

    def _write(self, out: bytes) -> None:
        if self._transport is None or self._transport.is_closing():
            raise self.session.closed_error("send")
        self._transport.write(out)
        self.bytes_sent += len(out)

    async def _drain(self) -> None:
        self._drained = fut = self._loop.create_future()
        timeout = self.options.write_timeout
        handle = None
        if timeout is not None:
            handle = self._loop.call_later(timeout, _expire, fut, WebSocketTimeout(
                f"the server at {self.url} did not read what we sent for {timeout:g} s", self.url))
        try:
            await fut
        except WebSocketTimeout as exc:
            self._fail(exc)
            raise
        finally:
            if handle is not None:
                handle.cancel()
        if self._error is not None:
            raise self._closed("send") from self._error

    async def recv(self, timeout: float | None = None) -> bytes:
        """The next message's bytes. ``timeout``: seconds without a message before
        :class:`WebSocketTimeout` (the connection stays usable). A closed connection raises
        :class:`WebSocketClosed` (``.clean`` for 1000/1001)."""
        messages = self._messages
        deadline = None
        while True:
            if messages:
                data = messages.popleft().data
                if self._paused_reading and len(messages) <= self.options.max_queue // 4:
                    self._paused_reading = False
                    self._transport.resume_reading()
                return data
            if self._error is not None:
                raise self._error
            if self.session.closed_event is not None:
                raise self._closed()
            if timeout is not None and deadline is None:
                deadline = self._loop.time() + timeout
            self._waiter = fut = self._loop.create_future()
            if deadline is not None:
                if deadline - self._loop.time() <= 0:
                    raise WebSocketTimeout(f"no message from {self.url} for {timeout:g} s", self.url)
                # One timer serves every wait of a stream: a timer armed, cancelled and its
                # error made (redacted) on each wait cost ~3 us an event while a response streams.
                self._recv_deadline, self._recv_limit = deadline, float(timeout or 0.0)
                timer = self._recv_timer
                if timer is None or deadline < timer.when():  # a shorter limit than the armed one
                    if timer is not None:
                        timer.cancel()
                    self._recv_timer = self._loop.call_at(deadline, self._recv_check)
            try:
                await fut
            finally:
                self._waiter = None
                self._recv_deadline = None

    def _recv_check(self) -> None:
        """The recv timer fired: fail the waiting recv if its deadline passed, else re-arm for
        the deadline of the recv waiting now (none waiting: the next recv with a limit arms it)."""
        self._recv_timer = None
        deadline, waiter = self._recv_deadline, self._waiter
        if deadline is None or waiter is None or waiter.done():
            return
        if self._loop.time() >= deadline:
            _expire(waiter, WebSocketTimeout(f"no message from {self.url} for {self._recv_limit:g} s", self.url))
        else:
            self._recv_timer = self._loop.call_at(deadline, self._recv_check)

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._iter()

    async def _iter(self) -> AsyncIterator[bytes]:
        """Messages until the connection closes cleanly (1000/1001); any other close raises."""
        while True:
            try:
                yield await self.recv()
            except WebSocketClosed as exc:
                if exc.clean:
                    return
                raise

    async def ping(self) -> None:
        """Send a ping now (its pong counts as life, as any byte received does)."""
        self._write(self.session.ping(self.heartbeat.ping(time.monotonic())))

    async def close(self, code: int = 1000, reason: str = "") -> None:
        """The closing handshake within ``close_timeout``, then the transport is closed
        whatever came. Idempotent."""
        if self._timer is not None:
            self._timer.cancel()
        transport = self._transport
        if transport is None or self._lost.done():
            return
        out = self.session.close(code, reason)
        if out and not transport.is_closing():
            transport.write(out)
        try:
            await self._asyncio.wait_for(self._asyncio.shield(self._lost), self.options.close_timeout)
        except self._asyncio.TimeoutError:
            transport.abort()
        finally:
            if not transport.is_closing():
                transport.close()

    def abort(self, error: BaseException | None = None) -> None:
        """End the connection now (a watchdog): a waiting ``recv`` wakes with ``error``
        (default: WebSocketClosed 1006)."""
        self._fail(error or WebSocketClosed(self.url, 1006, "aborted", False))

    def reusable(self) -> bool:
        """Open, with no message waiting to be read, on the running event loop (a socket is its
        loop's): a socket another conversation may take."""
        try:
            running = self._asyncio.get_running_loop()
        except RuntimeError:
            return False
        return running is self._loop and not self.closed and not self._messages

    @property
    def closed(self) -> bool:
        return self._lost.done() or self._error is not None or self.session.closed_event is not None

    @property
    def close_code(self) -> int | None:
        ev = self.session.closed_event
        return ev.code if ev is not None else None

    def _closed(self, action: str = "") -> WebSocketClosed:
        if isinstance(self._error, WebSocketClosed) and not action:
            return self._error
        return self.session.closed_error(action)

    # -- the heartbeat ---------------------------------------------------------------------
    def _schedule_beat(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        wait = self.heartbeat.next_check(time.monotonic())
        if wait is not None and not self._lost.done():
            self._timer = self._loop.call_later(max(wait, 1e-3), self._beat)

    def _beat(self) -> None:
        now = time.monotonic()
        hb = self.heartbeat
        if hb.dead(now):
            self._fail(WebSocketTimeout(f"the server at {self.url} did not answer a ping within "
                                        f"{hb.timeout:g} s: the connection is dead", self.url))
            return
        if hb.due(now) and self.session.open:
            try:
                self._write(self.session.ping(hb.ping(now)))
            except (WebSocketError, OSError) as exc:
                logger.debug("websocket %s: ping failed: %s", self.url, exc)
        self._schedule_beat()
