"""Forward proxies, as httpx (and so the official client) honours them.

Which proxy: ``proxy=`` on the client routes every origin through it; without it,
``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY`` and ``NO_PROXY`` (either case) are read at
client construction by httpx's own function (``httpx._utils.get_environment_proxies``) and
matched by httpx's own rules (``URLPattern``: the most specific pattern first; ``NO_PROXY``
entries route their hosts directly, ``*`` turns proxies off). One rule, not a second copy of it.

How: an ``https://`` origin is reached through an HTTP ``CONNECT`` tunnel (RFC 9110 section
9.3.6), then TLS with ALPN to the origin inside it, so HTTP/2 still runs end to end; an
``http://`` origin gets absolute-form HTTP/1.1 requests (RFC 9112 section 3.2.2) to the proxy,
never an h2c probe (the proxy, not the origin, would answer it). Credentials in the proxy URL
(``http://user:pass@proxy:3128``) go as ``Proxy-Authorization: Basic`` and never into a
message: every error names the proxy through :func:`~llmclient._redact.redact_url`.

Only ``http://`` proxies are spoken here; another scheme (``https://``, ``socks5://``) is a
clear error naming it, never a silent direct connection.
"""

from __future__ import annotations

import base64
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import unquote

import httpx
from httpx._utils import URLPattern, get_environment_proxies

from .._redact import redact_url
from .connect import connect_tcp_async, connect_tcp_sync, tune_socket
from .http1_parser import H1Error, ResponseParser

if TYPE_CHECKING:
    import asyncio

__all__ = ["ProxyError", "ProxyInfo", "proxy_for", "proxy_map"]

# (pattern, proxy URL or None for "direct"), most specific first; hashable, so it can be part
# of the settings that pick a shared transport.
ProxyMap = tuple[tuple[str, str | None], ...]

_MAX_CONNECT_REPLY: Final = 64 * 1024


class ProxyError(httpx.ProxyError):
    """The proxy could not be reached, or refused the tunnel: ``proxy`` names it (userinfo
    masked), ``status`` is its answer to CONNECT (None when it never answered)."""

    unprocessed: bool = False

    def __init__(self, message: str, proxy: str, status: int | None = None) -> None:
        super().__init__(message)
        self.proxy, self.status = proxy, status


def proxy_map(proxy: str | httpx.URL | None, trust_env: bool = True) -> ProxyMap:
    """What routes where: ``proxy`` for every origin, else the environment's proxies."""
    if proxy is not None:
        return (("all://", str(proxy)),)
    if not trust_env:
        return ()
    found = get_environment_proxies()
    return tuple(sorted(found.items(), key=lambda item: URLPattern(item[0]).priority))


@dataclass(frozen=True)
class ProxyInfo:
    """One proxy: where to connect, how to authenticate, what to call it in messages."""

    host: str
    port: int
    scheme: str
    display: str  # the URL with userinfo masked
    auth: bytes | None  # the Proxy-Authorization value

    @classmethod
    def parse(cls, url: str) -> ProxyInfo:
        u = httpx.URL(url if "://" in url else f"http://{url}")
        auth = None
        if u.username or u.password:
            raw = f"{unquote(u.username)}:{unquote(u.password or '')}".encode()
            auth = b"Basic " + base64.b64encode(raw)
        default = {"http": 80, "https": 443}.get(u.scheme, 1080)
        return cls(u.host, u.port or default, u.scheme, redact_url(str(u)), auth)

    def headers(self) -> list[tuple[bytes, bytes]]:
        return [(b"proxy-authorization", self.auth)] if self.auth else []

    def check_supported(self) -> None:
        if self.scheme != "http":
            raise httpx.UnsupportedProtocol(
                f"proxy {self.display}: only http:// proxies are supported by llmclient's "
                f"transport (pass http_client=httpx.Client(proxy=...) for {self.scheme}://)")


def proxy_for(routes: ProxyMap, url: httpx.URL) -> ProxyInfo | None:
    """The proxy ``url`` goes through under ``routes`` (httpx's matching), or None: direct."""
    if not routes:
        return None
    for pattern, proxy in routes:
        if URLPattern(pattern).matches(url):
            return None if proxy is None else ProxyInfo.parse(proxy)
    return None


# -- the tunnel ----------------------------------------------------------------------------


def _connect_request(host: str, port: int, proxy: ProxyInfo) -> bytes:
    authority = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    lines = [f"CONNECT {authority} HTTP/1.1", f"Host: {authority}"]
    if proxy.auth:
        lines.append("Proxy-Authorization: " + proxy.auth.decode("ascii"))
    return ("\r\n".join(lines) + "\r\n\r\n").encode("ascii")


def _refused(proxy: ProxyInfo, host: str, port: int, parser: ResponseParser) -> ProxyError:
    reason = parser.reason.decode("latin-1")
    return ProxyError(f"proxy {proxy.display} refused CONNECT to {host}:{port}: "
                      f"{parser.status}{' ' + reason if reason else ''}", proxy.display, parser.status)


def _unreachable(proxy: ProxyInfo, exc: BaseException) -> ProxyError:
    errno = getattr(exc, "errno", None)  # asyncio's text is "Connect call failed (...)"
    text = (os.strerror(errno) if errno else str(exc) or type(exc).__name__).lower()
    return ProxyError(f"cannot connect to proxy {proxy.display}: {text}", proxy.display)


def connect_sync(proxy: ProxyInfo, timeout: float | None) -> socket.socket:
    """A TCP connection to the proxy itself."""
    proxy.check_supported()
    try:
        sock, _ = connect_tcp_sync(proxy.host, proxy.port, timeout)  # Happy Eyeballs (RFC 8305)
    except TimeoutError as exc:
        raise httpx.ConnectTimeout(f"connect to proxy {proxy.display} timed out") from exc
    except OSError as exc:
        raise _unreachable(proxy, exc) from exc
    tune_socket(sock)
    return sock


def tunnel_sync(proxy: ProxyInfo) -> Callable[[str, int, float | None], socket.socket]:
    """An ``open_tcp(host, port, timeout)`` for _h1 and _http2: a socket that reaches host:port
    through a CONNECT tunnel of ``proxy``."""

    def open_tcp(host: str, port: int, timeout: float | None) -> socket.socket:
        sock = connect_sync(proxy, timeout)
        try:
            sock.sendall(_connect_request(host, port, proxy))
            parser = ResponseParser(no_body=True)
            while not parser.head_done:
                data = sock.recv(_MAX_CONNECT_REPLY)
                if data:
                    parser.receive(data)
                else:
                    parser.eof()
        except TimeoutError as exc:
            sock.close()
            raise httpx.ConnectTimeout(f"proxy {proxy.display} did not answer CONNECT in time") from exc
        except (OSError, H1Error) as exc:
            sock.close()
            raise ProxyError(f"proxy {proxy.display} failed CONNECT to {host}:{port}: {exc}",
                             proxy.display) from exc
        if not 200 <= parser.status < 300:
            sock.close()
            raise _refused(proxy, host, port, parser)
        if parser.extra:
            sock.close()
            raise ProxyError(f"proxy {proxy.display} sent bytes after its CONNECT answer", proxy.display)
        return sock

    return open_tcp


class _TunnelProtocol:
    """Reads the proxy's answer to CONNECT; the connection's own protocol takes over after."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.parser = ResponseParser(no_body=True)
        self.done: asyncio.Future[None] = loop.create_future()
        self.transport: Any = None

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.receive(data)
        except H1Error as exc:
            self._end(exc)
            return
        if self.parser.head_done:
            self._end(None)

    def eof_received(self) -> bool:
        try:
            self.parser.eof()
        except H1Error as exc:
            self._end(exc)
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._end(exc or ConnectionError("connection closed"))

    def _end(self, exc: BaseException | None) -> None:
        if not self.done.done():
            if exc is None:
                self.done.set_result(None)
            else:
                self.done.set_exception(exc)

    def pause_writing(self) -> None:
        pass

    def resume_writing(self) -> None:
        pass


async def connect_async(proxy: ProxyInfo, protocol_factory: Callable[[], Any]) -> tuple[Any, Any]:
    """A TCP connection to the proxy itself (the caller bounds the time)."""
    proxy.check_supported()
    try:  # Happy Eyeballs (RFC 8305), as for an origin
        transport, protocol, _ = await connect_tcp_async(proxy.host, proxy.port, protocol_factory)
    except OSError as exc:
        raise _unreachable(proxy, exc) from exc
    _nodelay(transport)
    return transport, protocol


def tunnel_async(proxy: ProxyInfo) -> Callable[..., Any]:
    """An async ``open_tcp(host, port, protocol_factory)`` for _h1 and _http2: (transport,
    protocol) reaching host:port through a CONNECT tunnel, the protocol from the factory."""

    async def open_tcp(host: str, port: int, protocol_factory: Callable[[], Any]) -> tuple[Any, Any]:
        import asyncio  # asyncio is heavy: the async client's first use loads it, not `import llmclient`

        loop = asyncio.get_running_loop()
        transport, tunnel = await connect_async(proxy, lambda: _TunnelProtocol(loop))
        try:
            transport.write(_connect_request(host, port, proxy))
            try:
                await tunnel.done
            except (OSError, H1Error) as exc:
                raise ProxyError(f"proxy {proxy.display} failed CONNECT to {host}:{port}: {exc}",
                                 proxy.display) from exc
            parser = tunnel.parser
            if not 200 <= parser.status < 300:
                raise _refused(proxy, host, port, parser)
            if parser.extra:
                raise ProxyError(f"proxy {proxy.display} sent bytes after its CONNECT answer",
                                 proxy.display)
        except BaseException:
            transport.close()
            raise
        protocol = protocol_factory()
        transport.set_protocol(protocol)
        protocol.connection_made(transport)
        return transport, protocol

    return open_tcp


def _nodelay(transport: Any) -> None:
    sock = transport.get_extra_info("socket")
    if sock is not None:
        tune_socket(sock)
