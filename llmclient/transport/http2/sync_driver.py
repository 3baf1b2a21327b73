"""HTTP/2 over a blocking socket, shared by threads.

Whoever waits for data reads the socket for everyone (one reader at a time, like httpcore),
under one lock for the state; the others wait on a condition for the reader's news. A
cleartext socket keeps its timeouts in the kernel (one ``recv()`` per read instead of
CPython's ``poll()`` + ``recv()``). Trace events use httpcore's names
(``http2.send_request_headers.started`` ...) so the call records read both stacks alike.
"""

from __future__ import annotations

import select
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator

import httpx

from ..._logging import logger
from ..connect import kernel_timeouts, open_sync_shared, peer_of, request_timeout, set_timeout
from ..idle import since_peer_close
from ..reads import receiver
from ..tls import MemoryTLS
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
from .errors import NotHTTP2
from .state import H2State, Stream

__all__ = ["SyncConnection", "connect_sync"]



def connect_sync(url: httpx.URL, ssl_context: ssl.SSLContext, request: httpx.Request,
                 open_tcp: Callable[[str, int, float | None], socket.socket] | None = None) -> SyncConnection:
    """Open a connection (TCP, TLS with ALPN h2 when https) and send the HTTP/2 preface.
    ``open_tcp(host, port, timeout)``, when given, makes the TCP part (a proxy's tunnel)."""
    host, port, tls = origin(url)
    if tls:
        ssl_context.set_alpn_protocols(["h2", "http/1.1"])
    sock = open_sync_shared(host, port, ssl_context if tls else None, request, open_tcp)
    if isinstance(sock, MemoryTLS):
        alpn = sock.selected_alpn_protocol()
        if alpn != "h2":
            sock.close()
            raise HTTP2ProtocolError(NotHTTP2(f"{host}:{port} chose {alpn or 'no protocol'} over ALPN"))
    conn = SyncConnection(sock)
    conn.state.cleartext = not tls
    conn.start(request_timeout(request, "connect"))
    return conn


class SyncConnection(ConnectionFacts):
    """One HTTP/2 connection used from any number of threads. Over TLS ``sock`` is a
    :class:`~llmclient.transport.tls.MemoryTLS`: an ``ssl.SSLSocket`` must not be read by one thread
    while another writes it."""

    def __init__(self, sock: socket.socket | MemoryTLS) -> None:
        self.state = H2State()
        self._sock = sock
        self._recv = receiver(sock)  # reads.py: no 256 KiB block shrunk per read
        self._raw = sock.raw if isinstance(sock, MemoryTLS) else sock  # timeouts, select
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._write_lock = threading.Lock()
        self._reading = False
        self._waiting = 0  # threads waiting on the condition for the reader's news
        self._kernel_timeouts = kernel_timeouts(self._raw)
        self.peer = peer_of(self._raw)
        # The timeout each direction has now (-1: none set yet). The reader and a writer may be
        # two threads: with kernel timeouts each sets its own direction only.
        self._read_timeout: float | None = -1.0
        self._write_timeout: float | None = -1.0
        self.last_used = time.monotonic()

    def start(self, timeout: float | None) -> None:
        with self._lock:
            self.state.initiate()
        self._flush(timeout)

    # -- what the pool asks ----------------------------------------------------------------------

    def check_idle(self) -> None:
        """An idle connection has nothing to read unless the server closed it or sent GOAWAY
        (or a PING): read what is there without blocking."""
        with self._lock:
            if self._reading or self.state.streams or self.state.error is not None:
                return
            self._reading = True
        try:
            if not select.select([self._raw], [], [], 0)[0]:
                return
            self._set_timeout(0.05, write=False)
            try:
                data = self._recv()
            except (TimeoutError, BlockingIOError):
                return
            except OSError:
                data = b""
            with self._lock:
                if data:
                    self.state.receive(data)
                else:
                    self._report_idle_close()
                    self.state.connection_lost()
        finally:
            with self._cond:
                self._reading = False
                self._cond.notify_all()
        self._flush(1.0)

    def alive(self, timeout: float) -> bool:
        """PING the server and wait for the ACK (RFC 9113 section 6.7): a connection that sat
        idle may have been dropped silently (a NAT or load balancer forgetting it) and would
        otherwise hang the next call until its read timeout."""
        with self._lock:
            if self.state.error is not None:
                return False
            before = self.state.pings_acked
            self.state.ping()
        probe = Stream(0, 0)  # not registered: only the connection's news can wake it
        try:
            self._flush(timeout)
            self._wait(probe, lambda _: self.state.pings_acked > before, timeout)
        except (httpx.TransportError, OSError):
            return False
        return self.state.error is None

    def _report_idle_close(self) -> None:
        """The server closed this idle connection: tell the pool after how much idle, from
        when its FIN came (idle.since_peer_close), unless a GOAWAY came first."""
        report = self.on_idle_close
        if report is None or self.state.goaway_last_id is not None or self.state.error is not None:
            return
        since = since_peer_close(self._raw)
        if since is not None:
            report(time.monotonic() - since - self.last_used)

    def close(self) -> None:
        with self._lock:
            self.state.close()
        try:
            self._flush(1.0)
        except Exception:
            pass
        try:
            self._sock.close()
        except OSError:
            pass

    # -- one request ---------------------------------------------------------------------------

    def request(self, request: httpx.Request) -> httpx.Response:
        trace = request.extensions.get("trace")
        body = request.content
        headers = request_headers(request)
        view = memoryview(body)
        with self._lock:
            if not self.state.usable:  # GOAWAY read, or a stream cap, since the pool chose it
                raise_unusable(self.state)
            stream = self.state.open_stream(headers, end_stream=not body)
            if body:  # as much of the body as the windows allow goes out with the headers
                view = view[self.state.send_data(stream, view, end_stream=True):]
        self.last_used = time.monotonic()
        if trace:
            trace("http2.send_request_headers.started", {"stream_id": stream.id, "peer": self.peer})
        token = request.extensions.get("llmclient.cancel")
        if token is not None:  # another thread may cancel this request (a hedge that lost)
            token.attach(lambda exc: self._cancel_elsewhere(stream, exc))
        write_timeout = request_timeout(request, "write")
        try:
            self._flush(write_timeout)
            if view:
                self._send_body(stream, view, write_timeout, request_timeout(request, "read"))
        except BaseException:
            self._abandon(stream)
            raise
        if trace:
            trace("http2.send_request_body.complete", {"stream_id": stream.id})
        read_timeout = request_timeout(request, "read")
        try:
            self._wait(stream, _has_headers, read_timeout)
        except BaseException:
            self._abandon(stream)
            raise
        if trace:
            trace("http2.receive_response_headers.complete", {"stream_id": stream.id})
        return make_response(stream, _SyncBody(self, stream, read_timeout))

    def _send_body(self, stream: Stream, view: memoryview, write_timeout: float | None,
                   read_timeout: float | None) -> None:
        """The rest of a body that did not fit the flow-control windows."""
        while view:  # out of window: read until the server grants more
            self._wait(stream, lambda s: (s.send_window > 0 and self.state.send_window > 0) or s.ended,
                       read_timeout or write_timeout)
            if stream.ended:
                return
            with self._lock:
                if stream.error is not None:
                    raise_public(stream.error)
                n = self.state.send_data(stream, view, end_stream=True)
            view = view[n:]
            self._flush(write_timeout)

    def _abandon(self, stream: Stream) -> None:
        with self._lock:
            self.state.reset(stream)
        try:
            self._flush(1.0)
        except Exception:
            pass

    # -- I/O -------------------------------------------------------------------------------------

    def _flush(self, timeout: float | None) -> None:
        with self._write_lock:
            with self._lock:
                out = self.state.out
                if not out:
                    return
                data = bytes(out)
                out.clear()
            try:
                self._set_timeout(timeout, write=True)
                self._sock.sendall(data)
            except (TimeoutError, BlockingIOError) as exc:
                self._broken(httpx.WriteTimeout("write timed out"))
                raise httpx.WriteTimeout("write timed out") from exc
            except OSError as exc:
                err = httpx.WriteError(str(exc) or type(exc).__name__)
                self._broken(err)
                if isinstance(self.state.error, NotHTTP2):  # hung up on our h2c preface
                    raise_public(self.state.error)
                raise err from exc

    def _set_timeout(self, timeout: float | None, write: bool) -> None:
        if not self._kernel_timeouts:  # one Python timeout for both directions
            if timeout != self._read_timeout or timeout != self._write_timeout:
                self._read_timeout = self._write_timeout = timeout
                set_timeout(self._raw, timeout, False)
        elif write:
            if timeout != self._write_timeout:
                self._write_timeout = timeout
                set_timeout(self._raw, timeout, True, "write")
        elif timeout != self._read_timeout:
            self._read_timeout = timeout
            set_timeout(self._raw, timeout, True, "read")

    def _broken(self, exc: Exception) -> None:
        with self._cond:
            if isinstance(exc, httpx.WriteError) and self.state.cleartext and not self.state.settings_received:
                # The h2c rule of H2State.connection_lost: a server that closes on our preface
                # before its SETTINGS (RFC 9113 section 3.4) does not speak HTTP/2 (uvicorn's
                # close reaches a concurrent first call as EPIPE on its write, not as an EOF).
                self.state.connection_lost(f"write failed: {exc}")
            else:
                self.state.fail(exc)
            self._cond.notify_all()

    def _wait(self, stream: Stream, ready: Callable[[Stream], bool], timeout: float | None) -> None:
        """Until ``ready(stream)``: read the socket for everyone, or wait while another thread
        does. Raises the stream's error, or ReadTimeout."""
        while not self._read_once(stream, ready, timeout):
            pass

    def _read_once(self, stream: Stream, ready: Callable[[Stream], bool], timeout: float | None,
                   stale: bool = True) -> bool:
        """One step of :meth:`_wait`: True once ready. The lock is taken bare (``with
        self._lock``) on this path, the condition only to wait and to wake waiters: it runs
        once per packet of every stream."""
        lock = self._lock
        with lock:
            if ready(stream):
                return True
            if stream.error is not None:
                raise_public(stream.error)
            if self.state.error is not None:
                raise_public(self.state.error)
            if self._reading:  # another thread reads for us: wait for its news
                self._waiting += 1
                try:
                    if not self._cond.wait(timeout):
                        if stale:
                            self.state.stale = True
                        raise httpx.ReadTimeout("read timed out")
                finally:
                    self._waiting -= 1
                return False
            self._reading = True
        error: Exception | None = None
        data = b""
        try:
            # httpx's read timeout bounds each wait for bytes, not the whole response.
            if timeout != self._read_timeout:
                self._set_timeout(timeout, write=False)
            data = self._recv()
        except (TimeoutError, BlockingIOError):
            error = httpx.ReadTimeout("read timed out")
        except OSError as exc:
            text = str(exc) or type(exc).__name__
            with lock:
                self.state.connection_lost(
                    f"Connection reset: {text}" if isinstance(exc, ConnectionResetError) else text)
        except BaseException:
            with lock:
                self._reading = False
                if self._waiting:
                    self._cond.notify_all()
            raise
        with lock:
            self._reading = False
            if error is not None:
                # A connection that kept us waiting a whole read timeout takes no new streams
                # (the next call would likely wait too); its other streams go on.
                if stale:
                    self.state.stale = True
            elif data:
                self.state.receive(data)
            else:
                self.state.connection_lost()
            if self._waiting:
                self._cond.notify_all()
            out = bool(self.state.out)
        if out:
            self._flush(1.0 if timeout is None else timeout)
        if error is not None:
            raise error
        return False

    def read_some(self, stream: Stream, timeout: float | None) -> list[bytes]:
        """The data the stream has (waiting for some); [] at its end."""
        while True:
            with self._lock:
                chunks = stream.data
                if chunks:
                    stream.data = []
                    state = self.state
                    state.consumed(stream, sum(map(len, chunks)))
                    out = bool(state.out)
                elif stream.ended:
                    return []
            if chunks:
                if out:
                    self._flush(timeout)
                return chunks
            self._read_live(stream, timeout)

    def _read_live(self, stream: Stream, timeout: float | None) -> None:
        """:meth:`_read_once` until the stream has data or ends (within ``timeout``, as the async
        driver waits for a stream's news), PINGing the connection while the stream is silent
        (``liveness``): a connection that stops answering fails its streams at once."""
        now = time.monotonic()
        silence = liveness.Silence(now, timeout)
        while True:
            try:
                if self._read_once(stream, _has_data_or_end, silence.slice(now), stale=False):
                    return
                now = time.monotonic()
                continue  # bytes for another stream, a PING's answer: this one waits on
            except httpx.ReadTimeout:
                now = time.monotonic()
            with self._lock:
                verdict = silence.after(now, self.state.pings_acked)
                if verdict == "timeout":
                    self.state.stale = True  # see _read_once
                elif verdict == "ping":
                    self.state.ping()
            if verdict == "timeout":
                raise httpx.ReadTimeout("read timed out")
            if verdict == "ping":
                self._flush(liveness.PING_ANSWER_S)
            elif verdict == "dead":
                with self._cond:
                    self.state.connection_lost(_dead_message())
                    self._cond.notify_all()
                return

    def _cancel_elsewhere(self, stream: Stream, exc: Exception) -> None:
        """From another thread: fail ``stream`` with ``exc`` and reset it. The thread waiting on
        it wakes (a PING goes with the RST_STREAM, so a thread blocked reading the socket for
        everyone gets bytes to return with) and raises ``exc``."""
        with self._lock:
            if stream.ended and stream.id not in self.state.streams:
                return
            if stream.error is None:
                stream.error = exc
            self.state.reset(stream)
            self.state.ping()
            if self._waiting:
                self._cond.notify_all()
        try:
            self._flush(1.0)
        except Exception as err:
            logger.debug("RST_STREAM not sent: %r", err)

    def cancel(self, stream: Stream) -> None:
        with self._lock:
            if stream.ended and stream.id not in self.state.streams:
                return
            self.state.reset(stream)
        try:
            self._flush(1.0)
        except Exception as exc:
            logger.debug("RST_STREAM not sent: %r", exc)


def _has_headers(stream: Stream) -> bool:
    return stream.headers is not None


def _has_data_or_end(stream: Stream) -> bool:
    return bool(stream.data) or stream.ended


class _SyncBody(httpx.SyncByteStream):
    def __init__(self, conn: SyncConnection, stream: Stream, timeout: float | None) -> None:
        self._conn = conn
        self._stream = stream
        self._timeout = timeout
        self._done = False

    def __iter__(self) -> Iterator[bytes]:
        conn, stream, timeout = self._conn, self._stream, self._timeout
        while True:
            chunks = conn.read_some(stream, timeout)
            if not chunks:
                self._done = True
                return
            # What arrived together is handed on together: one decode pass, not one per frame.
            yield chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def close(self) -> None:
        if not self._done:
            self._done = True
            self._conn.cancel(self._stream)


def _dead_message() -> str:
    return liveness.dead_message(liveness.SILENT_PING_S, liveness.PING_ANSWER_S)
