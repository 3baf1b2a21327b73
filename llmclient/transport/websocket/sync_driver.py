"""A WebSocket over a blocking socket, written by hand (not generated from the async driver:
the concurrency differs, threads and locks against the event loop).

One thread reads at a time (whoever calls :meth:`SyncWebSocket.recv`) and any thread may send
(a write lock keeps frames whole and in order), so TLS runs as
:class:`~llmclient.transport.tls.MemoryTLS` over the plain socket (an ``ssl.SSLSocket`` must not
be read and written by two threads at once). The reader answers pings (the protocol does) and
sends its own on silence (``heartbeat.py``) while it waits; when nobody reads, one process-wide
daemon thread does both for every open socket, so a socket held across a long tool run stays
open through proxies and a dead peer is found. A cleartext socket keeps its timeouts in the
kernel, as the HTTP drivers' do.
"""

from __future__ import annotations

import collections
import math
import select
import socket
import threading
import time
import weakref
from collections.abc import Iterator
from typing import Any

from ..._logging import logger
from ..connect import kernel_timeouts, open_sync_shared, set_timeout
from ..proxy import tunnel_sync
from ..reads import receiver
from ..tls import MemoryTLS
from .errors import WebSocketClosed, WebSocketError, WebSocketTimeout
from .heartbeat import Heartbeat
from .session import Message, Opened, Pong, Session
from .setup import WebSocketOptions, connect_request, new_session, plan_route, tls_context

__all__ = ["SyncWebSocket", "connect"]



def connect(url: str, options: WebSocketOptions | None = None) -> SyncWebSocket:
    """Open a WebSocket to ``url`` (ws:// or wss://) with llmclient's connection set-up, and do
    the handshake. Raises httpx.ConnectError / ConnectTimeout / ProxyError (TCP, TLS, proxy),
    HandshakeError (a refused upgrade), WebSocketTimeout (no answer to the handshake in
    ``open_timeout``), WebSocketProtocolError."""
    options = options or WebSocketOptions()
    session = new_session(url, options)
    route = plan_route(session, options)
    ctx = tls_context(route, options)
    open_tcp = tunnel_sync(route.proxy) if route.proxy is not None else None
    sock = open_sync_shared(route.host, route.port, ctx, connect_request(session, options), open_tcp)
    ws = SyncWebSocket(sock, session, options)
    try:
        ws._handshake()
    except BaseException:
        ws._shut()
        raise
    return ws


class SyncWebSocket:
    """An open client WebSocket. ``recv`` from one thread at a time; ``send`` from any."""

    def __init__(self, sock: socket.socket | MemoryTLS, session: Session,
                 options: WebSocketOptions) -> None:
        self._sock = sock
        self._recv = receiver(sock)  # reads.py: no block shrunk per read
        self._raw: socket.socket = sock.raw if isinstance(sock, MemoryTLS) else sock
        self.session = session
        self.url = session.url
        self.options = options
        self._kernel = kernel_timeouts(self._raw)
        self._lock = threading.Lock()  # the session (the protocol is not thread-safe)
        self._write_lock = threading.Lock()
        self._read_lock = threading.Lock()
        self._messages: collections.deque[Message] = collections.deque()
        self.heartbeat = Heartbeat(options.ping_interval, options.ping_timeout)
        self.response_headers: tuple[tuple[str, str], ...] = ()
        self.extensions: tuple[str, ...] = ()
        self.last_message_at = 0.0  # monotonic time of the last message (not pings)
        self.opened_at = 0.0  # monotonic time the handshake ended
        self._error: BaseException | None = None  # what broke the connection
        self._shut_done = False
        self._read_timeout: float | None = -1.0  # nothing set yet
        self.bytes_sent = 0  # WebSocket bytes (frames, the handshake; not TLS records), for the call records
        self.bytes_received = 0

    # -- the handshake ---------------------------------------------------------------------
    def _handshake(self) -> None:
        timeout = self.options.open_timeout
        deadline = None if timeout is None else time.monotonic() + timeout
        self._write(self.session.start(), self.options.write_timeout)
        while True:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise WebSocketTimeout(f"the server at {self.url} did not answer the WebSocket "
                                       f"handshake within {timeout:g} s", self.url)
            data = self._read(left)
            if data is None:
                continue
            events = self._feed(data)
            if self.session.failure is not None and not any(isinstance(e, Opened) for e in events):
                raise self.session.failure
            for ev in events:
                if isinstance(ev, Opened):
                    self.response_headers, self.extensions = ev.headers, ev.extensions
                    now = time.monotonic()
                    self.heartbeat.start(now)
                    self.last_message_at = self.opened_at = now
                    self._queue(events[events.index(ev) + 1:])
                    _Pinger.watch(self)
                    return
            if self.session.closed_event is not None:
                raise WebSocketClosed(self.url, 1006, "the server closed the connection during "
                                      "the handshake", False)

    # -- I/O primitives --------------------------------------------------------------------
    def _read(self, timeout: float | None) -> bytes | None:
        """One read: bytes, b"" at the end, None when ``timeout`` passed first."""
        # Waking a little late only delays a ping: long waits are rounded up to whole seconds,
        # so a busy stream keeps one timeout and skips the setsockopt on every read.
        if timeout is not None and timeout > 1.0:
            timeout = float(math.ceil(timeout))
        try:
            if timeout != self._read_timeout:
                set_timeout(self._raw, timeout, self._kernel, "read")
                self._read_timeout = timeout
            data = self._recv()
            self.bytes_received += len(data)
            return data
        except (BlockingIOError, TimeoutError):
            return None
        except OSError as exc:
            if self._error is not None:
                raise self._error from exc
            raise WebSocketClosed(self.url, 1006, f"connection lost: {exc}", False) from exc

    def _write(self, data: bytes, timeout: float | None) -> None:
        if not data:
            return
        with self._write_lock:
            self._write_locked(data, timeout)

    def _write_locked(self, data: bytes, timeout: float | None) -> None:
        try:
            if self._kernel:
                set_timeout(self._raw, timeout, True, "write")
            elif timeout != self._read_timeout:  # one Python timeout for both directions
                set_timeout(self._raw, timeout, False)
                self._read_timeout = timeout
            self._sock.sendall(data)
            self.bytes_sent += len(data)
        except (BlockingIOError, TimeoutError) as exc:
            self.abort(WebSocketTimeout(f"the server at {self.url} did not read what we sent "
                                        f"for {timeout:g} s", self.url))
            raise self._error or exc from exc
        except OSError as exc:
            err = self._error or WebSocketClosed(self.url, 1006, f"connection lost: {exc}", False)
            raise err from exc

    def _feed(self, data: bytes) -> list[Any]:
        """Bytes (b"": the end) into the session; what it must send back goes out now."""
        with self._lock:
            try:
                events = self.session.receive(data) if data else self.session.receive_eof()
            finally:
                out = self.session.outgoing()
                eof = self.session.eof_pending
        if out:
            try:
                self._write(out, self.options.write_timeout)
            except (WebSocketError, OSError):
                pass  # a pong or close echo that cannot go: the reads say why
        if eof or not data:
            self._shut_write()
        if self.session.failure is not None and self._error is None:
            self._error = self.session.failure  # raised once the messages before it are read
        return events

    def _queue(self, events: list[Any]) -> None:
        now = time.monotonic()
        for ev in events:
            if isinstance(ev, Message):
                self._messages.append(ev)
                self.last_message_at = now
            elif isinstance(ev, Pong):
                self.heartbeat.pong(ev.data, now)

    # -- the API ---------------------------------------------------------------------------
    def send(self, data: str | bytes) -> None:
        """Send one message (``str``: text, ``bytes``: binary). After a close:
        :class:`WebSocketClosed` naming the send."""
        with self._write_lock:
            if self._error is not None:
                raise self._closed("send") from self._error
            with self._lock:
                out = self.session.send(data)
            self._write_locked(out, self.options.write_timeout)

    def send_text(self, data: bytes) -> None:
        """Send bytes that are UTF-8 already (a JSON body from orjson) as a text message."""
        with self._write_lock:
            if self._error is not None:
                raise self._closed("send") from self._error
            with self._lock:
                out = self.session.send_text(data)
            self._write_locked(out, self.options.write_timeout)

    def recv(self, timeout: float | None = None) -> bytes:
        """The next message's bytes. ``timeout``: seconds without a message before
        :class:`WebSocketTimeout` (pings do not count; the connection stays usable). A closed
        connection raises :class:`WebSocketClosed` (``.clean`` for 1000/1001)."""
        try:
            return self._messages.popleft().data  # already read (popleft is atomic)
        except IndexError:
            pass
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._read_lock:
            while True:
                if self._messages:
                    return self._messages.popleft().data
                if self._error is not None:
                    raise self._error
                if self.session.closed_event is not None:
                    self._shut()
                    raise self._closed()
                now = time.monotonic()
                self._beat(now)
                wait = self.heartbeat.next_check(now)
                if deadline is not None:
                    left = deadline - now
                    if left <= 0:
                        raise WebSocketTimeout(f"no message from {self.url} for {timeout:g} s",
                                               self.url)
                    wait = left if wait is None else min(wait, left)
                data = self._read(None if wait is None else max(wait, 1e-3))
                if data is not None:
                    self.heartbeat.received(time.monotonic())
                    self._queue(self._feed_checked(data))

    def _feed_checked(self, data: bytes) -> list[Any]:
        try:
            events = self._feed(data)
        except WebSocketError as exc:
            self._error = exc
            self._shut()
            raise
        if self._error is not None:
            self._shut()
        return events

    def __iter__(self) -> Iterator[bytes]:
        """Messages until the connection closes cleanly (1000/1001); any other close raises."""
        while True:
            try:
                yield self.recv()
            except WebSocketClosed as exc:
                if exc.clean:
                    return
                raise

    def ping(self) -> None:
        """Send a ping now (its pong counts as life, as any byte received does)."""
        with self._write_lock:
            with self._lock:
                out = self.session.ping(self.heartbeat.ping(time.monotonic()))
            self._write_locked(out, self.options.write_timeout)

    def close(self, code: int = 1000, reason: str = "") -> None:
        """The closing handshake: our close frame, the server's answer and its end of TCP,
        within ``close_timeout``; then the socket is closed whatever came. Idempotent."""
        _Pinger.forget(self)
        if self._shut_done:
            return
        try:
            with self._write_lock:
                with self._lock:
                    out = self.session.close(code, reason)
                if out:
                    self._write_locked(out, self.options.write_timeout)
        except (WebSocketError, OSError):
            self._shut()
            return
        deadline = time.monotonic() + self.options.close_timeout
        # Another thread may be in recv(): it reads the server's answer and ends; if it holds the
        # reader's place past the close timeout, the socket is aborted under it.
        if not self._read_lock.acquire(timeout=self.options.close_timeout):
            self.abort()
            self._shut()
            return
        try:
            while self.session.closed_event is None or not self.session.eof_pending:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                try:
                    data = self._read(left)
                except WebSocketError:
                    break
                if data is None:
                    continue
                try:
                    self._queue(self._feed(data))
                except WebSocketError:
                    break
                if not data:
                    break
        finally:
            self._read_lock.release()
        self._shut()

    def abort(self, error: BaseException | None = None) -> None:
        """End the connection now, from any thread (a watchdog): a blocked ``recv`` wakes with
        ``error`` (default: WebSocketClosed 1006)."""
        if self._error is None:
            self._error = error or WebSocketClosed(self.url, 1006, "aborted", False)
        try:
            self._raw.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        _Pinger.forget(self)

    def reusable(self) -> bool:
        """Open, with no message waiting to be read: a socket another conversation may take."""
        return not self.closed and not self._messages

    @property
    def closed(self) -> bool:
        return self._shut_done or self._error is not None or self.session.closed_event is not None

    @property
    def close_code(self) -> int | None:
        ev = self.session.closed_event
        return ev.code if ev is not None else None

    def _closed(self, action: str = "") -> WebSocketClosed:
        if isinstance(self._error, WebSocketClosed) and not action:
            return self._error
        return self.session.closed_error(action)

    def _shut_write(self) -> None:
        try:
            self._raw.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def _shut(self) -> None:
        _Pinger.forget(self)
        if not self._shut_done:
            self._shut_done = True
            try:
                self._sock.close()
            except OSError:
                pass

    # -- the heartbeat ---------------------------------------------------------------------
    def _beat(self, now: float) -> None:
        """Ping on silence; a ping unanswered for ping_timeout ends the connection."""
        hb = self.heartbeat
        if hb.dead(now):
            self.abort(WebSocketTimeout(f"the server at {self.url} did not answer a ping within "
                                        f"{hb.timeout:g} s: the connection is dead", self.url))
            raise self._error  # type: ignore[misc]
        if hb.due(now) and self.session.open:
            try:
                self.ping()
            except (WebSocketError, OSError) as exc:
                logger.debug("websocket %s: ping failed: %s", self.url, exc)

    def _idle_tick(self) -> None:
        """From the pinger thread: when nobody reads, read what came and keep the heartbeat."""
        if not self._read_lock.acquire(blocking=False):
            return  # a reader is in recv(): it beats itself
        try:
            if self.closed:
                return
            try:
                while select.select([self._raw], [], [], 0)[0]:
                    data = self._read(0.05)
                    if data is None:
                        break
                    self.heartbeat.received(time.monotonic())
                    self._queue(self._feed_checked(data))
                    if not data:
                        break
                self._beat(time.monotonic())
            except (WebSocketError, OSError, ValueError) as exc:
                if self._error is None:
                    self._error = exc
        finally:
            self._read_lock.release()


class _Pinger:
    """One daemon thread for every open sync WebSocket nobody is reading."""

    _lock = threading.Lock()
    _sockets: weakref.WeakSet[SyncWebSocket] = weakref.WeakSet()
    _thread: threading.Thread | None = None
    MAX_TICK_S = 1.0  # the longest sleep; shorter when a socket's ping or pong is due sooner
    MIN_TICK_S = 0.05

    @classmethod
    def watch(cls, ws: SyncWebSocket) -> None:
        if ws.options.ping_interval is None and ws.options.ping_timeout is None:
            return
        with cls._lock:
            cls._sockets.add(ws)
            if cls._thread is None or not cls._thread.is_alive():
                cls._thread = threading.Thread(target=cls._run, name="llmclient-ws-pinger",
                                               daemon=True)
                cls._thread.start()

    @classmethod
    def forget(cls, ws: SyncWebSocket) -> None:
        with cls._lock:
            cls._sockets.discard(ws)

    @classmethod
    def _run(cls) -> None:
        wait = cls.MIN_TICK_S
        while True:
            time.sleep(wait)
            with cls._lock:
                sockets = list(cls._sockets)
                if not sockets:
                    cls._thread = None
                    return
            wait = cls.MAX_TICK_S
            for ws in sockets:
                try:
                    ws._idle_tick()
                except Exception:  # a broken socket must not stop the others' heartbeat
                    logger.debug("websocket heartbeat failed", exc_info=True)
                due = ws.heartbeat.poll_in(time.monotonic())
                if due is not None:
                    wait = min(wait, due)
            wait = max(wait, cls.MIN_TICK_S)


