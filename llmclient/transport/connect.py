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

import socket
import ssl
import struct
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import httpx

from .tls import MemoryTLS

__all__ = ["KEEPALIVE_COUNT", "KEEPALIVE_IDLE_S", "KEEPALIVE_INTERVAL_S", "keepalive_options",
           "kernel_timeouts", "open_async", "open_sync", "open_sync_shared", "request_timeout",
           "set_timeout", "tune_socket"]

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
    if open_tcp is not None:
        sock = open_tcp(host, port, timeout)
    else:
        try:
            sock = socket.create_connection((host, port), timeout=timeout)
        except TimeoutError as exc:
            raise httpx.ConnectTimeout(f"connect to {host}:{port} timed out") from exc
        except OSError as exc:
            raise httpx.ConnectError(str(exc)) from exc
        tune_socket(sock)
    if trace:
        trace("connection.connect_tcp.complete", {})
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
    try:
        if open_tcp is not None:
            transport, protocol = await asyncio.wait_for(open_tcp(host, port, protocol_factory), timeout)
        else:
            transport, protocol = await asyncio.wait_for(
                loop.create_connection(protocol_factory, host, port), timeout)
    except asyncio.TimeoutError as exc:
        raise httpx.ConnectTimeout(f"connect to {host}:{port} timed out") from exc
    except OSError as exc:
        raise httpx.ConnectError(str(exc)) from exc
    sock = transport.get_extra_info("socket")
    if sock is not None:
        tune_socket(sock)
    if trace:
        await trace("connection.connect_tcp.complete", {})
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
