"""The HTTP/2 connections of one lane: the current one, and any still draining after a GOAWAY
or past their age.

A lane sends every request on its current connection until the server's
SETTINGS_MAX_CONCURRENT_STREAMS says otherwise; after a GOAWAY, or once the connection is past
its age (``aging``: jittered, 300 s by default), the old connection's streams finish there
while new ones go to a fresh connection, and the old one is closed once idle. A connection
idle over ``PING_AFTER_IDLE_S`` must answer a PING before it carries a request (a flow a NAT
dropped silently would otherwise hang the call until its read timeout), and one idle over
``KEEPALIVE_EXPIRY_S`` is closed. A server that closes idle connections with no GOAWAY
(hypercorn) is learned (``idle``: once two of its closes agree, a connection idle past 90 % of
its timeout is not reused, so that no call races the close).

Waiting for a connection is its own phase: a request that finds another caller opening the
lane's connection waits for it under the request's *pool* timeout (httpx's ``Timeout.pool``),
never its connect timeout, and reports the wait (trace event :data:`POOL_WAIT_EVENT`, read
into ``timings.pool_wait_ms``); its own connect timer starts only when it connects itself.
"""

from __future__ import annotations

import random
import threading
import time
from typing import TYPE_CHECKING, Any, Final

import httpx

from ..._logging import logger
from ..aging import MAX_CONNECTION_AGE_S, retire_at
from ..connect import POOL_WAIT_EVENT, pool_timeout_error, request_timeout
from ..idle import MIN_IDLE_S, ServerIdle
from .common import HTTP2ProtocolError
from .errors import ConnectionLost

if TYPE_CHECKING:
    import asyncio
    import ssl

__all__ = [
    "DEFAULT_MAX_STREAMS", "KEEPALIVE_EXPIRY_S", "PING_AFTER_IDLE_S", "PING_TIMEOUT_S", "AsyncPool",
    "SyncPool",
]

# Servers close idle connections on their own schedule (hypercorn: 5 s keep-alive by default,
# nginx 75 s); ours only bounds how long we hold a socket the server still accepts.
KEEPALIVE_EXPIRY_S: Final = 300.0
# Default SETTINGS_MAX_CONCURRENT_STREAMS of hypercorn, nginx and most gateways; the server's
# own setting (read from the connection once known) wins when it is lower.
DEFAULT_MAX_STREAMS: Final = 100
# An HTTP/2 connection idle this long is PINGed before reuse: the shortest idle timeouts of
# the middleboxes that drop flows without a FIN or RST are 60 s and up (AWS ALB 60 s, Azure
# LB 4 min, AWS NAT gateway 350 s; connect.py's TCP keepalive covers the rest), so after 30 s
# of silence a flow may be gone; below that, a PING would cost a round trip on every
# back-to-back call of a chatty client for nothing. The ACK must come within PING_TIMEOUT_S.
PING_AFTER_IDLE_S: Final = 30.0
PING_TIMEOUT_S: Final = 2.0
# A call that failed this soon after it was sent, its connection closed under it with no
# GOAWAY, on a connection reused after idle: the server's idle timeout is what closed it.
LOST_AT_ONCE_S: Final = 1.0

_rng = random.Random()


class _PoolBase:
    """The HTTP/2 connections of one lane: the current one, and any still draining after the
    server's GOAWAY or past their age (their streams finish there; new ones go to a fresh
    connection)."""

    def __init__(self, ssl_context: ssl.SSLContext, open_tcp: Any = None,
                 max_age_s: float | None = MAX_CONNECTION_AGE_S, idle: ServerIdle | None = None) -> None:
        self._ssl_context = ssl_context
        self._open_tcp = open_tcp  # a proxy's CONNECT tunnel, or None: direct
        self._max_age_s = max_age_s
        self._conns: list[Any] = []
        # the origin's idle closes, shared with its other pools (lanes.OriginRecord.idle)
        self._idle = idle if idle is not None else ServerIdle()

    def max_streams(self) -> int:
        best = DEFAULT_MAX_STREAMS
        for conn in self._conns:
            if conn.state.settings_received:
                # The server's SETTINGS_MAX_CONCURRENT_STREAMS (RFC 9113 section 6.5.2).
                best = min(best, conn.state.max_streams or best)
        return best

    def _usable(self) -> Any:
        now = time.monotonic()
        for conn in self._conns:
            if conn.usable:
                if now < conn.retire_at:
                    return conn
                if not conn.retired:
                    conn.retired = True
                    logger.debug("HTTP/2 connection past its age (%.0f s): new calls go to a new one, "
                                 "its %d streams finish there", now - conn.opened, len(conn.state.streams))
        return None

    def _adopt(self, conn: Any) -> Any:
        """A new connection joins the lane, with its retirement time (jittered)."""
        conn.opened = now = time.monotonic()
        conn.retire_at = retire_at(now, self._max_age_s, _rng.random())
        conn.on_idle_close = self._idle.observe
        self._conns.append(conn)
        return conn

    def _past_idle_limit(self, conn: Any) -> bool:
        """Idle longer than the origin lets a connection be (learned: idle.py): not reused."""
        if conn.idle and self._idle.too_idle(self._idle_for(conn)):
            logger.debug("HTTP/2 connection idle %.2f s, past what the origin keeps (%.2f s): "
                         "a new one carries the call", self._idle_for(conn), self._idle.limit)
            return True
        return False

    def _lost_on_reuse(self, conn: Any, idle: float) -> None:
        """A call failed on ``conn``: when the server closed it at once (within LOST_AT_ONCE_S of
        the call's send, the connection's ``last_used``) with no GOAWAY, after ``idle`` s of
        idle, that is what its idle timeout looks like (idle.py)."""
        state = conn.state
        if (idle >= MIN_IDLE_S and isinstance(state.error, ConnectionLost) and state.goaway_last_id is None
                and time.monotonic() - conn.last_used < LOST_AT_ONCE_S):
            self._idle.observe(idle)

    @staticmethod
    def _idle_for(conn: Any) -> float:
        return time.monotonic() - conn.last_used if conn.idle else 0.0

    def _prune(self) -> list[Any]:
        """Drop connections that are dead, drained after GOAWAY or their age, or idle too long;
        the ones to close."""
        keep: list[Any] = []
        gone: list[Any] = []
        now = time.monotonic()
        for conn in self._conns:
            expired = conn.closed or ((not conn.usable or now >= conn.retire_at) and conn.idle)
            expired = expired or self._idle_for(conn) > KEEPALIVE_EXPIRY_S or self._past_idle_limit(conn)
            (gone if expired else keep).append(conn)
        self._conns = keep
        return gone

    def _forget(self, conn: Any) -> None:
        """An idle connection that expired or did not answer PING: new calls go elsewhere."""
        logger.debug("idle HTTP/2 connection expired or did not answer PING: opening a new one")
        self._conns = [c for c in self._conns if c is not conn]


def _report_wait(request: httpx.Request, waited: float) -> Any:
    """The trace callback's result for a request that waited ``waited`` s for a connection
    (a coroutine for the async client), or None: nothing to report."""
    trace = request.extensions.get("trace")
    if trace is None or waited <= 0.0:
        return None
    return trace(POOL_WAIT_EVENT, {"seconds": waited})


async def _give_up(acquiring: Any, lock: Any) -> None:
    """Stop waiting for ``lock``; an acquire that won meanwhile gives the lock back."""
    import asyncio  # asyncio is heavy: the async client's first use loads it, not `import llmclient`

    acquiring.cancel()
    await asyncio.gather(acquiring, return_exceptions=True)
    if not acquiring.cancelled() and acquiring.exception() is None:
        lock.release()


class SyncPool(_PoolBase):
    def __init__(self, ssl_context: ssl.SSLContext, open_tcp: Any = None,
                 max_age_s: float | None = MAX_CONNECTION_AGE_S, idle: ServerIdle | None = None) -> None:
        super().__init__(ssl_context, open_tcp, max_age_s, idle)
        self._connect_lock = threading.Lock()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if len(self._conns) > 1:  # one draining (GOAWAY, age): closed once its streams are done
            self._close_drained()
        conn = self._usable()
        if conn is not None and self._past_idle_limit(conn):
            conn = None  # _prune() below closes it
        waited = 0.0
        if conn is not None and self._idle_for(conn) > PING_AFTER_IDLE_S:
            waited += self._lock(request)
            try:
                if self._idle_for(conn) > PING_AFTER_IDLE_S and not self._still_alive(conn):
                    conn = None
            finally:
                self._connect_lock.release()
        if conn is None:
            waited += self._lock(request)
            try:
                for old in self._prune():
                    old.close()
                conn = self._usable()
                if conn is None:
                    # The drivers (and HPACK's tables) load with the first HTTP/2 connection, so
                    # that ``import llmclient`` stays light.
                    from .sync_driver import connect_sync

                    conn = self._adopt(connect_sync(request.url, self._ssl_context, request, self._open_tcp))
            finally:
                self._connect_lock.release()
        if waited:
            _report_wait(request, waited)
        idle = self._idle_for(conn)
        try:
            return conn.request(request)
        except HTTP2ProtocolError:
            self._lost_on_reuse(conn, idle)
            raise

    def _lock(self, request: httpx.Request) -> float:
        """Take the connect lock (another caller may be opening the lane's connection): the
        seconds waited, under the request's pool timeout, never its connect timeout."""
        lock = self._connect_lock
        if lock.acquire(blocking=False):
            return 0.0
        t0 = time.monotonic()
        timeout = request_timeout(request, "pool")
        if not lock.acquire(timeout=-1 if timeout is None else timeout):
            raise pool_timeout_error(request, timeout, "another caller's HTTP/2 connect to the origin")
        return time.monotonic() - t0

    def _close_drained(self) -> None:
        if not self._connect_lock.acquire(blocking=False):
            return  # someone is connecting: it prunes
        try:
            gone = self._prune()
        finally:
            self._connect_lock.release()
        for old in gone:
            old.close()

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
        if len(self._conns) > 1:
            self._close_drained()

    def close(self) -> None:
        conns, self._conns = self._conns, []
        for conn in conns:
            conn.close()


class AsyncPool(_PoolBase):
    def __init__(self, ssl_context: ssl.SSLContext, open_tcp: Any = None,
                 max_age_s: float | None = MAX_CONNECTION_AGE_S, idle: ServerIdle | None = None) -> None:
        super().__init__(ssl_context, open_tcp, max_age_s, idle)
        self._connect_lock: asyncio.Lock | None = None

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if len(self._conns) > 1 and (self._connect_lock is None or not self._connect_lock.locked()):
            for old in self._prune():  # one drained (GOAWAY, age): closed now
                await old.aclose()
        conn = self._usable()
        if conn is not None and self._past_idle_limit(conn):
            conn = None  # _prune() below closes it
        if conn is not None and self._idle_for(conn) > PING_AFTER_IDLE_S and (
            self._idle_for(conn) > KEEPALIVE_EXPIRY_S or not await conn.alive(PING_TIMEOUT_S)
        ):
            self._forget(conn)
            await conn.aclose()
            conn = None
        if conn is None:
            waited = await self._lock(request)
            try:
                for old in self._prune():
                    await old.aclose()
                conn = self._usable()
                if conn is None:
                    # the asyncio driver: loaded by the async client's first HTTP/2 connection
                    from .async_driver import connect_async

                    conn = self._adopt(await connect_async(request.url, self._ssl_context, request,
                                                           self._open_tcp))
            finally:
                assert self._connect_lock is not None
                self._connect_lock.release()
            if waited:
                await _report_wait(request, waited)
        idle = self._idle_for(conn)
        try:
            return await conn.request(request)
        except HTTP2ProtocolError:
            self._lost_on_reuse(conn, idle)
            raise

    async def _lock(self, request: httpx.Request) -> float:
        """See :meth:`SyncPool._lock`."""
        import asyncio  # asyncio is heavy: the async client's first use loads it, not `import llmclient`

        if self._connect_lock is None:
            self._connect_lock = asyncio.Lock()
        lock = self._connect_lock
        if not lock.locked():
            await lock.acquire()
            return 0.0
        t0 = time.monotonic()
        timeout = request_timeout(request, "pool")
        # not wait_for(lock.acquire()): on 3.11 an acquire that wins as the timeout fires is
        # lost with the lock held; here a late win is seen and given back
        acquiring = asyncio.ensure_future(lock.acquire())
        try:
            done, _ = await asyncio.wait({acquiring}, timeout=timeout)
        except BaseException:
            await _give_up(acquiring, lock)
            raise
        if not done:
            await _give_up(acquiring, lock)
            raise pool_timeout_error(request, timeout, "another caller's HTTP/2 connect to the origin")
        return time.monotonic() - t0

    def check_idle(self) -> None:
        """The event loop feeds every connection as data arrives: a closed one knows it."""

    async def aclose(self) -> None:
        conns, self._conns = self._conns, []
        for conn in conns:
            await conn.aclose()
