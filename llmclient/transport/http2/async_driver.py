"""HTTP/2 on the running event loop: an asyncio Protocol.

The event loop feeds :meth:`AsyncConnection.data_received`; the state's events say which
streams got something, and exactly their readers wake. Writes go to the transport at once;
while the peer does not read, replies to its PINGs and SETTINGS are capped
(``MAX_CONTROL_BACKLOG``) rather than queued without end.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Final, cast

import httpx

from ..connect import open_async, peer_of, request_timeout
from ..reads import BufferedReads, buffered
from . import liveness
from .common import (
    ConnectionFacts,
    HTTP2ProtocolError,
    make_response,
    origin,
    raise_public,
    raise_unusable,
    request_headers,
)
from .errors import ConnectionLost, NotHTTP2, PeerProtocolError
from .frames import ENHANCE_YOUR_CALM
from .state import H2State, Stream

if TYPE_CHECKING:
    import asyncio
    import ssl

__all__ = ["AsyncConnection", "connect_async"]

# Replies to the peer's PINGs and SETTINGS held for a peer that does not read (the sync driver
# blocks on its write timeout instead).
MAX_CONTROL_BACKLOG: Final = 256 * 1024


async def connect_async(url: httpx.URL, ssl_context: ssl.SSLContext, request: httpx.Request,
                        open_tcp: Any = None) -> AsyncConnection:
    """See :func:`connect_sync`; ``await open_tcp(host, port, protocol_factory)`` makes the
    TCP part when given."""
    host, port, tls = origin(url)
    if tls:
        ssl_context.set_alpn_protocols(["h2", "http/1.1"])
    transport, protocol = await open_async(host, port, ssl_context if tls else None, request,
                                           _new_protocol, open_tcp)
    proto = cast(AsyncConnection, protocol)
    if tls:
        ssl_object = transport.get_extra_info("ssl_object")
        alpn = ssl_object.selected_alpn_protocol() if ssl_object is not None else None
        if alpn != "h2":
            transport.close()
            raise HTTP2ProtocolError(NotHTTP2(f"{host}:{port} chose {alpn or 'no protocol'} over ALPN"))
    proto.state.cleartext = not tls
    proto.peer = peer_of(transport.get_extra_info("socket"))
    proto.start()
    return proto


def _new_protocol() -> asyncio.Protocol:
    # AsyncConnection has the asyncio.Protocol methods without subclassing it: this module is
    # imported by every client, and most never import asyncio. buffered() adds the base, so
    # the loop reads into this thread's buffer (reads.py).
    return cast("asyncio.Protocol", buffered(AsyncConnection)())


class AsyncConnection(BufferedReads, ConnectionFacts):
    """One HTTP/2 connection on the running event loop (an asyncio Protocol; its reads go
    through this thread's buffer, reads.py)."""

    def __init__(self) -> None:
        import asyncio  # asyncio is heavy: the async client's first use loads it, not `import llmclient`

        self.state = H2State()
        self.transport: Any = None
        self._loop = asyncio.get_running_loop()
        self._waiters: dict[int, asyncio.Future[None]] = {}  # stream id -> its reader's future
        self._window_waiters: list[asyncio.Future[None]] = []
        self._drain: asyncio.Future[None] | None = None
        self.last_used = time.monotonic()
        # Until start(): bytes that came with the end of the TLS handshake (a server's SETTINGS
        # often do), held so that nothing is answered before the preface, nor on the TCP
        # transport underneath TLS.
        self._early: list[bytes] | None = []
        self._control_backlog = 0  # replies (PING/SETTINGS ACKs) queued while the peer won't read

    # asyncio.Protocol ----------------------------------------------------------------------------

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        if self._early is not None:
            self._early.append(data)
            return
        state = self.state
        events = state.receive(data)
        if state.out:
            if self._drain is not None and not self._drain.done():
                self._control_backlog += len(state.out)
                if self._control_backlog > MAX_CONTROL_BACKLOG:
                    events += state.fail(PeerProtocolError(
                        ENHANCE_YOUR_CALM, f"{self._control_backlog} bytes of replies queued "
                                           "while the server does not read"))
                    state.out.clear()
                    self.transport.abort()
            self._flush()
        if self._waiters:
            for event in events:
                self._wake(event.stream_id)
        if self._window_waiters:  # body senders waiting for credit, PING probes: news
            waiters, self._window_waiters = self._window_waiters, []
            for fut in waiters:
                if not fut.done():
                    fut.set_result(None)
        if state.error is not None:
            self._wake_all()

    def eof_received(self) -> bool:
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        state = self.state
        if (self.on_idle_close is not None and state.error is None and not state.streams
                and state.goaway_last_id is None and state.settings_received):
            # the server closed the idle connection, no GOAWAY (ours and failures set error first)
            self.on_idle_close(time.monotonic() - self.last_used)
        if isinstance(exc, ConnectionResetError):
            events = self.state.connection_lost(f"Connection reset: {exc}")
        elif exc is not None:
            events = self.state.connection_lost(f"Connection lost: {exc}")
        else:
            events = self.state.connection_lost()
        for event in events:
            self._wake(event.stream_id)
        self._wake_all()
        if self._drain is not None and not self._drain.done():
            self._drain.set_result(None)

    def pause_writing(self) -> None:
        if self._drain is None or self._drain.done():
            self._drain = self._loop.create_future()

    def resume_writing(self) -> None:
        self._control_backlog = 0
        if self._drain is not None and not self._drain.done():
            self._drain.set_result(None)

    # -- what the pool asks ----------------------------------------------------------------------

    def start(self) -> None:
        """Send the preface; then read what arrived before it (the handshake is complete and
        ``transport`` is the TLS one by now)."""
        early, self._early = self._early, None
        self.state.initiate()
        self._flush()
        if early:
            self.data_received(b"".join(early))

    def check_idle(self) -> None:
        """Nothing to do: the event loop already fed us whatever the server sent."""

    async def alive(self, timeout: float) -> bool:
        """See :meth:`SyncConnection.alive`."""
        state = self.state
        if state.error is not None:
            return False
        before = state.pings_acked
        state.ping()
        self._flush()
        deadline = time.monotonic() + timeout
        while state.pings_acked <= before and state.error is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            fut = self._loop.create_future()
            self._window_waiters.append(fut)  # woken by any frame (and by connection loss)
            try:
                await self._until(fut, remaining, httpx.ReadTimeout)
            except httpx.ReadTimeout:
                return False
        return state.error is None

    async def aclose(self) -> None:
        self.state.close()
        self._flush()
        if self.transport is not None:
            self.transport.close()

    # -- one request -----------------------------------------------------------------------------

    async def request(self, request: httpx.Request) -> httpx.Response:
        trace = request.extensions.get("trace")
        body = request.content
        state = self.state
        if not state.usable or self.transport is None or self.transport.is_closing():
            # GOAWAY read (or a stream cap) since the pool chose it, or closing: a stream opened
            # now would never be written (_flush drops bytes for a closing transport)
            if state.usable:  # the pool must not choose it again; its streams' readers wake
                for event in state.fail(ConnectionLost("the connection is closing")):
                    self._wake(event.stream_id)
                self._wake_all()
            raise_unusable(state)
        stream = state.open_stream(request_headers(request), end_stream=not body)
        view = memoryview(body)
        if body:  # as much of the body as the windows allow goes out with the headers
            view = view[state.send_data(stream, view, end_stream=True):]
        self.last_used = time.monotonic()
        if trace:
            await trace("http2.send_request_headers.started", {"stream_id": stream.id, "peer": self.peer})
        token = request.extensions.get("llmclient.cancel")
        if token is not None:  # a hedged copy that may lose its race (on this loop)
            token.attach(lambda exc: self._cancel_elsewhere(stream, exc))
        read_timeout = request_timeout(request, "read")
        try:
            self._flush()
            if view or (self._drain is not None and not self._drain.done()):
                await self._send_body(stream, view, request_timeout(request, "write"))
            if trace:
                await trace("http2.send_request_body.complete", {"stream_id": stream.id})
            while stream.headers is None:
                if stream.error is not None:
                    raise_public(stream.error)
                await self._wait(stream, read_timeout)
        except BaseException:
            self.cancel(stream)
            raise
        if trace:
            await trace("http2.receive_response_headers.complete", {"stream_id": stream.id})
        return make_response(stream, _AsyncBody(self, stream, read_timeout))

    async def _send_body(self, stream: Stream, view: memoryview, timeout: float | None) -> None:
        """The rest of a body that did not fit the flow-control windows."""
        while view:
            if self._drain is not None and not self._drain.done():
                await self._wait_drain(timeout)
            if stream.ended:
                return
            if stream.error is not None:
                raise_public(stream.error)
            n = self.state.send_data(stream, view, end_stream=True)
            view = view[n:]
            self._flush()
            if view and n == 0:
                fut = self._loop.create_future()
                self._window_waiters.append(fut)
                await self._until(fut, timeout, httpx.WriteTimeout)
        if self._drain is not None and not self._drain.done():
            await self._wait_drain(timeout)

    async def _wait_drain(self, timeout: float | None) -> None:
        assert self._drain is not None
        await self._until(self._drain, timeout, httpx.WriteTimeout)
        if self.state.error is not None:
            raise_public(self.state.error)

    async def _wait(self, stream: Stream, timeout: float | None, stale: bool = True) -> None:
        fut = self._waiters[stream.id] = self._loop.create_future()
        try:
            await self._until(fut, timeout, httpx.ReadTimeout, stale)
        finally:
            if self._waiters.get(stream.id) is fut:
                del self._waiters[stream.id]

    async def _wait_live(self, stream: Stream, timeout: float | None) -> None:
        """:meth:`_wait` for a stream's data, PINGing its connection while the stream is
        silent (``liveness``): a connection that stops answering fails its streams at once."""
        now = time.monotonic()
        silence = liveness.Silence(now, timeout)
        while True:
            try:
                await self._wait(stream, silence.slice(now), stale=False)
                return
            except httpx.ReadTimeout:
                now = time.monotonic()
            verdict = silence.after(now, self.state.pings_acked)
            if verdict == "timeout":
                self.state.stale = True  # see SyncConnection._read_once
                raise httpx.ReadTimeout("read timed out")
            if verdict == "ping":
                self.state.ping()
                self._flush()
            elif verdict == "dead":
                self._dead()
                if stream.error is not None:
                    raise_public(stream.error)
                return

    def _dead(self) -> None:
        """The peer stopped answering PINGs: the connection and its streams fail now."""
        for event in self.state.connection_lost(_dead_message()):
            self._wake(event.stream_id)
        self._wake_all()
        if self.transport is not None:
            self.transport.abort()

    async def _until(self, fut: Any, timeout: float | None, exc: type[httpx.TimeoutException],
                     stale: bool = True) -> None:
        if timeout is None:
            await fut
            return
        handle = self._loop.call_later(timeout, _expire, fut, exc)
        try:
            await fut
        except httpx.ReadTimeout:
            if stale:
                self.state.stale = True  # see SyncConnection._read_once
            raise
        finally:
            handle.cancel()

    def _wake(self, stream_id: int) -> None:
        fut = self._waiters.pop(stream_id, None)
        if fut is not None and not fut.done():
            fut.set_result(None)

    def _wake_all(self) -> None:
        waiters, self._window_waiters = self._window_waiters, []
        for fut in waiters:
            if not fut.done():
                fut.set_result(None)

    def _flush(self) -> None:
        out = self.state.out
        if out and self.transport is not None and not self.transport.is_closing():
            self.transport.write(bytes(out))
        out.clear()

    async def read_some(self, stream: Stream, timeout: float | None) -> list[bytes]:
        while True:
            chunks = stream.data
            if chunks:
                stream.data = []
                self.state.consumed(stream, sum(map(len, chunks)))
                if self.state.out:
                    self._flush()
                return chunks
            if stream.ended:
                return []
            if stream.error is not None:
                raise_public(stream.error)
            await self._wait_live(stream, timeout)

    def cancel(self, stream: Stream) -> None:
        if stream.ended and stream.id not in self.state.streams:
            return
        self.state.reset(stream)
        self._flush()

    def _cancel_elsewhere(self, stream: Stream, exc: Exception) -> None:
        """From a callback on this loop: fail ``stream`` with ``exc`` (the task waiting on it
        wakes and raises it) and reset it."""
        if stream.ended and stream.id not in self.state.streams:
            return
        if stream.error is None:
            stream.error = exc
        self.cancel(stream)
        self._wake(stream.id)


def _expire(fut: Any, exc: type[httpx.TimeoutException]) -> None:
    if not fut.done():
        fut.set_exception(exc("read timed out" if exc is httpx.ReadTimeout else "write timed out"))


class _AsyncBody(httpx.AsyncByteStream):
    def __init__(self, conn: AsyncConnection, stream: Stream, timeout: float | None) -> None:
        self._conn = conn
        self._stream = stream
        self._timeout = timeout
        self._done = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        conn, stream, timeout = self._conn, self._stream, self._timeout
        while True:
            chunks = await conn.read_some(stream, timeout)
            if not chunks:
                self._done = True
                return
            yield chunks[0] if len(chunks) == 1 else b"".join(chunks)

    async def aclose(self) -> None:
        self.abandon()

    def abandon(self) -> None:
        if not self._done:
            self._done = True
            self._conn.cancel(self._stream)


def _dead_message() -> str:
    return liveness.dead_message(liveness.SILENT_PING_S, liveness.PING_ANSWER_S)
