"""Opening a connection, for both protocols' drivers (_h1.py, the _http2 package): TCP (or a proxy's
tunnel), then TLS, with the trace events CallRecord reads (httpcore's names) and httpx's
connect errors. What is spoken on the socket is the caller's business.

Every TCP connection llmclient opens (to an origin or a proxy, sync or async, cleartext or TLS)
gets TCP_NODELAY and TCP keepalive (:func:`tune_socket`): a long reasoning call whose server is
silent for minutes would otherwise lose its flow in a NAT or load balancer that forgets idle
flows (Azure's 4 min, AWS NAT gateway's 350 s, GCP Cloud NAT's 10 min for established TCP) and
hang until the read timeout; with a probe after :data:`KEEPALIVE_IDLE_S` of silence the flow
stays known, and a dead peer is found within idle + interval x count seconds."""

from __future__ import annotations

import errno
import os
import selectors
import socket
import ssl
import struct
import sys
import time
from collections.abc import Callable
from typing import Any, Final, TypeVar

import httpx

from .eyeballs import CONNECTION_ATTEMPT_DELAY_S, family_name, interleave, next_start
from .tls import MemoryTLS

__all__ = ["CONNECT_TCP_DONE", "KEEPALIVE_COUNT", "KEEPALIVE_IDLE_S", "KEEPALIVE_INTERVAL_S", "POOL_WAIT_EVENT",
           "connect_tcp_async", "connect_tcp_sync", "keepalive_options", "kernel_timeouts", "open_async",
           "open_sync", "open_sync_shared", "peer_of", "pool_timeout_error", "request_timeout", "set_timeout",
           "tune_socket"]

# Trace events beyond httpcore's names: a request that waited for a connection (info:
# ``seconds``), read into ``timings.pool_wait_ms``; the end of a TCP connect carries the
# number of addresses tried (``attempts``, Happy Eyeballs).
POOL_WAIT_EVENT: Final = "llmclient.pool_wait"
CONNECT_TCP_DONE: Final = "connection.connect_tcp.complete"

# Below the shortest common middlebox idle timeout (Azure's 240 s) with room for a lost probe;
# Linux's own default (7200 s) outlives every one of them.
KEEPALIVE_IDLE_S = 60
KEEPALIVE_INTERVAL_S = 15
KEEPALIVE_COUNT = 4

# (level, option) numbers per platform: the socket module has only the running platform's, and
# the decision below is tested for each. Linux <netinet/tcp.h>; macOS <netinet/tcp.h> (where
# TCP_KEEPALIVE is the idle time); Windows ws2ipdef.h (Windows 10 1709 and later).
# How often a TLS handshake in progress checks that its connection is still open (open_async).
_WATCH_S = 0.1

_KEEPALIVE_NUMBERS = {
    #          SOL_SOCKET, SO_KEEPALIVE, IPPROTO_TCP, idle,  interval, count
    "linux": (1, 9, 6, 4, 5, 6),
    "darwin": (0xFFFF, 0x8, 6, 0x10, 0x101, 0x102),
    "win32": (0xFFFF, 0x8, 6, 3, 17, 16),
}


def keepalive_options(platform: str, idle: int = KEEPALIVE_IDLE_S, interval: int = KEEPALIVE_INTERVAL_S,
                      count: int = KEEPALIVE_COUNT) -> list[tuple[int, int, int]]:
    """The ``setsockopt(level, option, value)`` calls that turn TCP keepalive on with these
    timings on ``platform`` (``sys.platform``); on an unknown platform only SO_KEEPALIVE (the
    system's timings)."""
    key = "linux" if platform.startswith("linux") else platform
    numbers = _KEEPALIVE_NUMBERS.get(key)
    if numbers is None:
        return [(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)]
    sol, keepalive, tcp, o_idle, o_interval, o_count = numbers
    return [(sol, keepalive, 1), (tcp, o_idle, idle), (tcp, o_interval, interval), (tcp, o_count, count)]


def tune_socket(sock: socket.socket) -> None:
    """TCP_NODELAY and TCP keepalive on a new connection's socket. An option the system refuses
    (an old kernel without one of them) is skipped: the connection works without it."""
    for level, option, value in ((socket.IPPROTO_TCP, socket.TCP_NODELAY, 1),
                                 *keepalive_options(sys.platform)):
        try:
            sock.setsockopt(level, option, value)
        except OSError:
            pass


def kernel_timeouts(sock: socket.socket) -> bool:
    """Whether ``sock``'s timeouts can live in the kernel (a cleartext socket on a platform with
    SO_RCVTIMEO); such a socket is made blocking here, once."""
    if isinstance(sock, ssl.SSLSocket) or not hasattr(socket, "SO_RCVTIMEO"):
        return False
    sock.settimeout(None)
    return True


def set_timeout(sock: socket.socket, timeout: float | None, kernel: bool,
                which: str = "both") -> None:
    """A read/write timeout for ``sock``. A cleartext socket stays blocking, its timeouts in the
    kernel (SO_RCVTIMEO, SO_SNDTIMEO): each read is one recv() instead of CPython's poll() +
    recv(), so a stream reads once per packet; expiry is EAGAIN (BlockingIOError), which the
    drivers turn into httpx's timeouts. ``which`` (``"read"``, ``"write"``, ``"both"``) sets one
    direction only, for a socket one thread reads while another writes; in the kernel they are
    apart, a Python timeout is one for both. Over TLS the ssl module retries SSL_read on EAGAIN,
    so an ``SSLSocket`` keeps Python's timeouts."""
    if kernel:
        seconds = 0.0 if timeout is None else max(timeout, 1e-3)
        tv = struct.pack("ll", int(seconds), int((seconds % 1) * 1e6))
        if which != "write":
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, tv)
        if which != "read":
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, tv)
    else:
        sock.settimeout(timeout)


def request_timeout(request: httpx.Request, key: str) -> float | None:
    value: float | None = request.extensions.get("timeout", {}).get(key)
    return value


def pool_timeout_error(request: httpx.Request, timeout: float | None, waiting_for: str) -> httpx.PoolTimeout:
    """A request waited its whole pool timeout (httpx's ``Timeout.pool``, not the connect
    timeout: openai-python #2539) for ``waiting_for``."""
    return httpx.PoolTimeout(f"waited the pool timeout ({timeout} s) for {waiting_for} "
                             f"({request.url.host}); raise httpx.Timeout(pool=...) to wait longer")


def peer_of(sock: Any) -> tuple[str, str] | None:
    """(address, family name) a connected socket reached, for the call's timings; None when
    the system cannot say."""
    try:
        address = sock.getpeername()
        family = sock.family
    except (OSError, AttributeError):
        return None
    if isinstance(address, tuple):
        return str(address[0]), family_name(family)
    return str(address), family_name(family)


# -- Happy Eyeballs (eyeballs.py decides the order and the timing) --------------------------

_IN_PROGRESS = frozenset({errno.EINPROGRESS, errno.EWOULDBLOCK, errno.EALREADY})


def _resolve(host: str, port: int) -> list[Any]:
    return interleave(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))


def _all_failed(host: str, port: int, errors: list[OSError]) -> OSError:
    """What a race that every address lost raises (as asyncio does: one error, or all)."""
    if not errors:
        return OSError(f"no address for {host}:{port}")
    texts = list(dict.fromkeys(str(e) for e in errors))
    if len(texts) == 1:
        return errors[0]
    err = OSError(errors[-1].errno, f"Multiple exceptions: {'; '.join(texts)}")
    return err


def connect_tcp_sync(host: str, port: int, timeout: float | None,
                     delay: float = CONNECTION_ATTEMPT_DELAY_S) -> tuple[socket.socket, int]:
    """A TCP connection to host:port by Happy Eyeballs (RFC 8305; ``eyeballs``): the socket
    (blocking, with ``timeout`` set, as ``socket.create_connection`` returns it) and the
    number of addresses tried. ``timeout`` bounds the whole race: TimeoutError past it;
    OSError when every address failed."""
    infos = _resolve(host, port)
    deadline = None if timeout is None else time.monotonic() + timeout
    pending: dict[socket.socket, Any] = {}
    errors: list[OSError] = []
    winner: socket.socket | None = None
    started, last_start = 0, None
    sel = selectors.DefaultSelector()
    try:
        while winner is None:
            now = time.monotonic()
            if started < len(infos) and now >= next_start(last_start, len(pending), delay):
                family, kind, proto, _, address = infos[started]
                started, last_start = started + 1, now
                sock = socket.socket(family, kind, proto)
                sock.setblocking(False)
                code = sock.connect_ex(address)
                if code == 0:
                    winner = sock
                elif code in _IN_PROGRESS:
                    pending[sock] = address
                    sel.register(sock, selectors.EVENT_WRITE)
                else:
                    sock.close()
                    errors.append(_failed(code, address))
                continue
            if not pending:
                raise _all_failed(host, port, errors)
            wait = None if deadline is None else deadline - now
            if started < len(infos):
                until_next = next_start(last_start, len(pending), delay) - now
                wait = until_next if wait is None else min(wait, until_next)
            if deadline is not None and now >= deadline:
                raise TimeoutError(f"connect to {host}:{port} timed out ({started} addresses tried)")
            for key, _ in sel.select(None if wait is None else max(wait, 0.0)):
                sock = key.fileobj  # type: ignore[assignment]
                sel.unregister(sock)
                address = pending.pop(sock)
                code = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                if code == 0 and winner is None:
                    winner = sock
                else:
                    sock.close()
                    if code:
                        errors.append(_failed(code, address))
    finally:
        sel.close()
        for sock in pending:
            sock.close()  # the losers: closed as soon as one connected (RFC 8305 section 5)
    winner.setblocking(True)
    winner.settimeout(timeout)
    return winner, started


def _failed(code: int, address: Any) -> OSError:
    """One address's failure (``OSError(errno, ...)`` is the subclass the errno names:
    ConnectionRefusedError ...), naming the address."""
    return OSError(code, f"{os.strerror(code)} ({address[0]})")


async def connect_tcp_async(host: str, port: int, protocol_factory: Callable[[], Any],
                            delay: float = CONNECTION_ATTEMPT_DELAY_S) -> tuple[Any, Any, int]:
    """:func:`connect_tcp_sync` on the running event loop: (transport, protocol, addresses
    tried). The caller bounds the time (cancelling this closes every socket it opened)."""
    import asyncio  # asyncio is heavy: the async client's first use loads it, not `import llmclient`

    loop = asyncio.get_running_loop()
    infos = interleave(await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM))
    tasks: dict[Any, socket.socket] = {}
    errors: list[OSError] = []
    winner: socket.socket | None = None
    started, last_start = 0, None
    try:
        while winner is None:
            now = time.monotonic()
            if started < len(infos) and now >= next_start(last_start, len(tasks), delay):
                family, kind, proto, _, address = infos[started]
                started, last_start = started + 1, now
                sock = socket.socket(family, kind, proto)
                sock.setblocking(False)
                tasks[asyncio.ensure_future(loop.sock_connect(sock, address))] = sock
                continue
            if not tasks:
                raise _all_failed(host, port, errors)
            wait = next_start(last_start, len(tasks), delay) - now if started < len(infos) else None
            done, _ = await asyncio.wait(set(tasks), timeout=None if wait is None else max(wait, 0.0),
                                         return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                sock = tasks.pop(task)
                exc = task.exception()
                if exc is None and winner is None:
                    winner = sock
                else:
                    sock.close()
                    if isinstance(exc, OSError):
                        errors.append(exc)
                    elif exc is not None:
                        raise exc
    finally:
        for task, sock in tasks.items():  # the losers (or all, when cancelled)
            task.cancel()
            sock.close()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
    try:
        transport, protocol = await loop.create_connection(protocol_factory, sock=winner)
    except BaseException:
        winner.close()
        raise
    return transport, protocol, started


def open_sync(host: str, port: int, ssl_context: ssl.SSLContext | None, request: httpx.Request,
              open_tcp: Callable[[str, int, float | None], socket.socket] | None = None) -> socket.socket:
    """A socket to host:port (TCP, or through ``open_tcp``: a proxy's tunnel), then TLS when
    ``ssl_context`` is given (an ``ssl.SSLSocket``: for one thread at a time)."""
    sock = _open_tcp(host, port, request, open_tcp)
    if ssl_context is None:
        return sock
    return _start_tls(host, port, request, sock,
                      lambda timeout: ssl_context.wrap_socket(sock, server_hostname=host))


def open_sync_shared(host: str, port: int, ssl_context: ssl.SSLContext | None, request: httpx.Request,
                     open_tcp: Callable[[str, int, float | None], socket.socket] | None = None,
                     ) -> socket.socket | MemoryTLS:
    """As :func:`open_sync`, for a connection one thread reads while others write (HTTP/2):
    its TLS is a :class:`~llmclient.transport.tls.MemoryTLS` over the plain socket."""
    sock = _open_tcp(host, port, request, open_tcp)
    if ssl_context is None:
        return sock

    def handshake(timeout: float | None) -> MemoryTLS:
        tls = MemoryTLS(sock, ssl_context, host)
        tls.handshake(timeout)
        return tls

    return _start_tls(host, port, request, sock, handshake)


def _open_tcp(host: str, port: int, request: httpx.Request,
              open_tcp: Callable[[str, int, float | None], socket.socket] | None) -> socket.socket:
    trace = request.extensions.get("trace")
    timeout = request_timeout(request, "connect")
    if trace:
        trace("connection.connect_tcp.started", {})
    attempts = None
    if open_tcp is not None:
        sock = open_tcp(host, port, timeout)
    else:
        try:
            sock, attempts = connect_tcp_sync(host, port, timeout)
        except TimeoutError as exc:
            raise httpx.ConnectTimeout(f"connect to {host}:{port} timed out") from exc
        except OSError as exc:
            raise httpx.ConnectError(str(exc)) from exc
        tune_socket(sock)
    if trace:
        trace(CONNECT_TCP_DONE, {"attempts": attempts})
    return sock


_T = TypeVar("_T")


def _start_tls(host: str, port: int, request: httpx.Request, sock: socket.socket,
               handshake: Callable[[float | None], _T]) -> _T:
    """``handshake(timeout)`` on ``sock`` with the trace events, httpx's errors, and the socket
    closed when it fails."""
    trace = request.extensions.get("trace")
    timeout = request_timeout(request, "connect")
    if trace:
        trace("connection.start_tls.started", {})
    try:
        sock.settimeout(timeout)
        tls = handshake(timeout)
    except TimeoutError as exc:
        sock.close()
        raise httpx.ConnectTimeout(f"TLS handshake with {host}:{port} timed out") from exc
    except (OSError, ssl.SSLError) as exc:
        sock.close()
        raise httpx.ConnectError(str(exc)) from exc
    if trace:
        trace("connection.start_tls.complete", {})
    return tls


async def open_async(host: str, port: int, ssl_context: ssl.SSLContext | None, request: httpx.Request,
                     protocol_factory: Callable[[], Any], open_tcp: Any = None) -> tuple[Any, Any]:
    """(transport, protocol) to host:port: TCP (or ``open_tcp``: a proxy's tunnel), then TLS
    when ``ssl_context`` is given."""
    import asyncio  # asyncio is heavy: the async client's first use loads it, not `import llmclient`

    trace = request.extensions.get("trace")
    timeout = request_timeout(request, "connect")
    loop = asyncio.get_running_loop()
    if trace:
        await trace("connection.connect_tcp.started", {})
    attempts = None
    try:
        if open_tcp is not None:
            transport, protocol = await asyncio.wait_for(open_tcp(host, port, protocol_factory), timeout)
        else:
            transport, protocol, attempts = await asyncio.wait_for(
                connect_tcp_async(host, port, protocol_factory), timeout)
    except asyncio.TimeoutError as exc:
        raise httpx.ConnectTimeout(f"connect to {host}:{port} timed out") from exc
    except OSError as exc:
        raise httpx.ConnectError(str(exc)) from exc
    sock = transport.get_extra_info("socket")
    if sock is not None:
        tune_socket(sock)
    if trace:
        await trace(CONNECT_TCP_DONE, {"attempts": attempts})
    if ssl_context is None:
        return transport, protocol
    if trace:
        await trace("connection.start_tls.started", {})
    # A peer that hangs up as the handshake starts: when its EOF reaches the TCP transport
    # before start_tls has put its SSL protocol in place, asyncio's handshake waits for bytes
    # that never come, until the connect timeout (8 of 12 runs on a busy machine). So the
    # handshake is watched: a transport that is closing while it runs fails it now.
    handshake = asyncio.ensure_future(loop.start_tls(transport, protocol, ssl_context, server_hostname=host))
    deadline = None if timeout is None else loop.time() + timeout
    try:
        while True:
            left = None if deadline is None else deadline - loop.time()
            done, _ = await asyncio.wait({handshake}, timeout=_WATCH_S if left is None else min(_WATCH_S, max(left, 0.0)))
            if done:
                new = handshake.result()
                break
            if transport.is_closing():
                raise httpx.ConnectError(f"{host}:{port} closed the connection during the TLS handshake")
            if left is not None and left <= _WATCH_S:
                raise asyncio.TimeoutError
    except asyncio.TimeoutError as exc:
        transport.close()
        raise httpx.ConnectTimeout(f"TLS handshake with {host}:{port} timed out") from exc
    except httpx.ConnectError:
        transport.close()
        raise
    except (OSError, ssl.SSLError) as exc:
        transport.close()
        raise httpx.ConnectError(str(exc)) from exc
    finally:
        if not handshake.done():
            handshake.cancel()
            await asyncio.gather(handshake, return_exceptions=True)
    if new is None:  # pragma: no cover - start_tls returns None only when closing
        raise httpx.ConnectError("TLS handshake failed")
    protocol.connection_made(new)  # the protocol writes to the TLS transport from now on
    if trace:
        await trace("connection.start_tls.complete", {})
    return new, protocol
