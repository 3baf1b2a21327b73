"""Where a WebSocket connects and how: the options, the route (direct or through a proxy's
CONNECT tunnel) and the TLS context, for both drivers. The connection itself is opened by
llmclient's own set-up (``transport/connect.py``: TCP_NODELAY and keepalive, TLS with
verification on, ``transport/proxy.py``'s tunnel), as the HTTP transport's are.

Proxies: a ``ws://`` URL is matched as ``http://``, a ``wss://`` one as ``https://``
(``HTTP_PROXY`` / ``HTTPS_PROXY`` / ``ALL_PROXY`` / ``NO_PROXY`` as httpx reads them, or the
client's ``proxy=``), and both go through a CONNECT tunnel: a forward proxy relays an upgraded
connection only inside one.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from typing import Any

import httpx

from ..lanes import h1_ssl_context
from ..proxy import ProxyInfo, ProxyMap, proxy_for
from .heartbeat import PING_INTERVAL_S, PING_TIMEOUT_S
from .session import DEFLATE, MAX_SIZE, Session, http_equivalent

__all__ = ["COMPRESSION", "Route", "WebSocketOptions", "connect_request", "new_session",
           "plan_route", "tls_context"]

# permessage-deflate (RFC 7692) is offered by default; the server decides (granian never takes
# it, hypercorn and uvicorn do). Measured on the reference server's Responses stream events
# (README, "The WebSocket transport"; three runs of python -m benchmarks.ws_overhead): 12x fewer
# bytes per event (about 220 -> 18), for 2-7 us more client CPU per event, so it pays on links
# slower than about 230 Mbit/s (the benchmarks' wan is 50); compression=None for a fast LAN.
# The decompressed size is bounded by max_size (websockets checks it while inflating), so a
# compressed message cannot blow up past it.
COMPRESSION: str | None = DEFLATE


@dataclass(frozen=True)
class WebSocketOptions:
    """How one WebSocket connection is opened and kept.

    ``headers``: sent with the handshake (the caller's credentials, ``traceparent``,
    ``X-Request-ID``, ``User-Agent``). ``verify``: TLS verification (True, a CA bundle path,
    or an ``ssl.SSLContext``; False turns it off). ``proxies``: ``proxy.proxy_map(...)``.
    Timeouts in seconds (None: no limit): ``connect_timeout`` for TCP + TLS (+ CONNECT),
    ``open_timeout`` for the handshake's answer, ``write_timeout`` for a send the peer does not
    read, ``close_timeout`` for the closing handshake. ``ping_interval``/``ping_timeout``: see
    ``heartbeat.py`` (None: no pings). ``compression``: ``"deflate"`` (offered, the default) or None. ``max_size``: the
    largest message accepted (None: no limit). ``max_queue``: messages the async driver holds
    for a reader that does not keep up before it stops reading the socket.
    """

    headers: tuple[tuple[str, str], ...] = ()
    verify: bool | str | ssl.SSLContext = True
    proxies: ProxyMap = ()
    connect_timeout: float | None = 10.0
    open_timeout: float | None = 10.0
    write_timeout: float | None = 30.0
    close_timeout: float = 5.0
    ping_interval: float | None = PING_INTERVAL_S
    ping_timeout: float | None = PING_TIMEOUT_S
    compression: str | None = COMPRESSION
    max_size: int | None = MAX_SIZE
    max_queue: int = 1024


@dataclass(frozen=True)
class Route:
    host: str
    port: int
    secure: bool
    proxy: ProxyInfo | None


def new_session(url: str, options: WebSocketOptions) -> Session:
    return Session(url, options.headers, compression=options.compression,
                   max_size=options.max_size)


def plan_route(session: Session, options: WebSocketOptions) -> Route:
    """Direct, or the proxy ``options.proxies`` names for this URL (pure)."""
    proxy = proxy_for(options.proxies, httpx.URL(http_equivalent(session.url)))
    if proxy is not None:
        proxy.check_supported()
    return Route(session.host, session.port, session.secure, proxy)


def tls_context(route: Route, options: WebSocketOptions) -> ssl.SSLContext | None:
    """The TLS context of a wss:// connection: the HTTP/1.1 one (ALPN http/1.1, since the
    upgrade is an HTTP/1.1 request), verification on unless ``verify=False``."""
    if not route.secure:
        return None
    if isinstance(options.verify, ssl.SSLContext):
        return options.verify
    return h1_ssl_context(options.verify)


def connect_request(session: Session, options: WebSocketOptions, trace: Any = None) -> httpx.Request:
    """What ``connect.open_sync``/``open_async`` read: the connect timeout, trace hooks."""
    extensions: dict[str, Any] = {"timeout": {"connect": options.connect_timeout}}
    if trace is not None:
        extensions["trace"] = trace
    return httpx.Request("GET", http_equivalent(session.url), extensions=extensions)
