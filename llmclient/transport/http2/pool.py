"""The HTTP/2 connections of one lane: the current one, and any still draining after a GOAWAY.

A lane sends every request on its current connection until the server's
SETTINGS_MAX_CONCURRENT_STREAMS says otherwise; after a GOAWAY the old connection's streams
finish there while new ones go to a fresh connection. A connection idle over
``PING_AFTER_IDLE_S`` must answer a PING before it carries a request (a flow a NAT dropped
silently would otherwise hang the call until its read timeout), and one idle over
``KEEPALIVE_EXPIRY_S`` is closed.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

import httpx

from ..._logging import logger

if TYPE_CHECKING:
    import asyncio
    import ssl

__all__ = [
    "DEFAULT_MAX_STREAMS", "KEEPALIVE_EXPIRY_S", "PING_AFTER_IDLE_S", "PING_TIMEOUT_S", "AsyncPool",
    "SyncPool",
]

# Servers close idle connections on their own schedule (hypercorn: 5 s keep-alive by default,
# nginx 75 s); ours only bounds how long we hold a socket the server still accepts.
KEEPALIVE_EXPIRY_S = 300.0
# Default SETTINGS_MAX_CONCURRENT_STREAMS of hypercorn, nginx and most gateways; the server's
# own setting (read from the connection once known) wins when it is lower.
DEFAULT_MAX_STREAMS = 100
# An HTTP/2 connection idle this long is PINGed before reuse (NATs and load balancers drop
# idle flows silently after ~60-350 s); the ACK must come within PING_TIMEOUT_S.
PING_AFTER_IDLE_S = 30.0
PING_TIMEOUT_S = 2.0


class _PoolBase:
    """The HTTP/2 connections of one lane: the current one, and any still draining after the
    server's GOAWAY (their streams finish there; new ones go to a fresh connection)."""

    def __init__(self, ssl_context: ssl.SSLContext, open_tcp: Any = None) -> None:
        self._ssl_context = ssl_context
        self._open_tcp = open_tcp  # a proxy's CONNECT tunnel, or None: direct
        self._conns: list[Any] = []

    def max_streams(self) -> int:
        best = DEFAULT_MAX_STREAMS
        for conn in self._conns:
            if conn.state.settings_received:
                # The server's SETTINGS_MAX_CONCURRENT_STREAMS (RFC 9113 section 6.5.2).
                best = min(best, conn.state.max_streams or best)
        return best

    def _usable(self) -> Any:
        for conn in self._conns:
            if conn.usable:
                return conn
        return None

    @staticmethod
    def _idle_for(conn: Any) -> float:
        return time.monotonic() - conn.last_used if conn.idle else 0.0

    def _prune(self) -> list[Any]:
        """Drop connections that are dead, or drained after GOAWAY; the ones to close."""
        keep: list[Any] = []
        gone: list[Any] = []
        for conn in self._conns:
            expired = conn.closed or (not conn.usable and conn.idle)
            expired = expired or self._idle_for(conn) > KEEPALIVE_EXPIRY_S
            (gone if expired else keep).append(conn)
        self._conns = keep
        return gone

    def _forget(self, conn: Any) -> None:
        """An idle connection that expired or did not answer PING: new calls go elsewhere."""
        logger.debug("idle HTTP/2 connection expired or did not answer PING: opening a new one")
        self._conns = [c for c in self._conns if c is not conn]


class SyncPool(_PoolBase):
    def __init__(self, ssl_context: ssl.SSLContext, open_tcp: Any = None) -> None:
        super().__init__(ssl_context, open_tcp)
        self._connect_lock = threading.Lock()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        conn = self._usable()
        if conn is not None and self._idle_for(conn) > PING_AFTER_IDLE_S:
            with self._connect_lock:
                if self._idle_for(conn) > PING_AFTER_IDLE_S and not self._still_alive(conn):
                    conn = None
        if conn is None:
            with self._connect_lock:
                for old in self._prune():
                    old.close()
                conn = self._usable()
                if conn is None:
                    # The drivers (and HPACK's tables) load with the first HTTP/2 connection, so
                    # that ``import llmclient`` stays light.
                    from .sync_driver import connect_sync

                    conn = connect_sync(request.url, self._ssl_context, request, self._open_tcp)
                    self._conns.append(conn)
        return conn.request(request)

    def _still_alive(self, conn: Any) -> bool:
        if self._idle_for(conn) > KEEPALIVE_EXPIRY_S or not conn.alive(PING_TIMEOUT_S):
            self._forget(conn)
            conn.close()
            return False
        return True

    def check_idle(self) -> None:
        for conn in list(self._conns):
            if conn.idle:
                conn.check_idle()
                if conn.closed:
                    logger.debug("dropping idle HTTP/2 connection the server has closed or GOAWAY'd")

    def close(self) -> None:
        conns, self._conns = self._conns, []
        for conn in conns:
            conn.close()


class AsyncPool(_PoolBase):
    def __init__(self, ssl_context: ssl.SSLContext, open_tcp: Any = None) -> None:
        super().__init__(ssl_context, open_tcp)
        self._connect_lock: asyncio.Lock | None = None

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        conn = self._usable()
        if conn is not None and self._idle_for(conn) > PING_AFTER_IDLE_S and (
            self._idle_for(conn) > KEEPALIVE_EXPIRY_S or not await conn.alive(PING_TIMEOUT_S)
        ):
            self._forget(conn)
            await conn.aclose()
            conn = None
        if conn is None:
            if self._connect_lock is None:
                import asyncio  # asyncio is heavy: the async client's first use loads it, not `import llmclient`

                self._connect_lock = asyncio.Lock()
            async with self._connect_lock:
                for old in self._prune():
                    await old.aclose()
                conn = self._usable()
                if conn is None:
                    # the asyncio driver: loaded by the async client's first HTTP/2 connection
                    from .async_driver import connect_async

                    conn = await connect_async(request.url, self._ssl_context, request, self._open_tcp)
                    self._conns.append(conn)
        return await conn.request(request)

    def check_idle(self) -> None:
        """The event loop feeds every connection as data arrives: a closed one knows it."""

    async def aclose(self) -> None:
        conns, self._conns = self._conns, []
        for conn in conns:
            await conn.aclose()
