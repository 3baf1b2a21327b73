"""Opening a connection, for both protocols' drivers (_h1.py, the _http2 package): TCP (or a proxy's
tunnel), then TLS, with the trace events CallRecord reads (httpcore's names) and httpx's
connect errors. What is spoken on the socket is the caller's business."""

from __future__ import annotations

import socket
import ssl
import struct
from collections.abc import Callable
from typing import Any, TypeVar

import httpx

from .tls import MemoryTLS

__all__ = ["kernel_timeouts", "open_async", "open_sync", "open_sync_shared", "request_timeout",
           "set_timeout"]


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
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
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
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass
    if trace:
        await trace("connection.connect_tcp.complete", {})
    if ssl_context is None:
        return transport, protocol
    if trace:
        await trace("connection.start_tls.started", {})
    try:
        new = await asyncio.wait_for(
            loop.start_tls(transport, protocol, ssl_context, server_hostname=host), timeout)
    except asyncio.TimeoutError as exc:
        transport.close()
        raise httpx.ConnectTimeout(f"TLS handshake with {host}:{port} timed out") from exc
    except (OSError, ssl.SSLError) as exc:
        transport.close()
        raise httpx.ConnectError(str(exc)) from exc
    if new is None:  # pragma: no cover - start_tls returns None only when closing
        raise httpx.ConnectError("TLS handshake failed")
    protocol.connection_made(new)  # the protocol writes to the TLS transport from now on
    if trace:
        await trace("connection.start_tls.complete", {})
    return new, protocol
