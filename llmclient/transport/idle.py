"""How long an origin lets an HTTP/2 connection sit idle, learned from the closes it makes.

Some servers close an idle connection with no warning. hypercorn (which serves Quart apps, and
the reference server when asked) closes an HTTP/2 connection idle for its keep-alive timeout
(5 s by default) without a GOAWAY. A call written in those same milliseconds reaches a server
that is closing: it fails as "Server disconnected", and since nothing says it went unprocessed
(RFC 9113 section 6.8 gives that guarantee only through GOAWAY's last-stream-id) it is never
re-sent for free. Against hypercorn in one process (its thread sharing the GIL), 60 of 200
sync calls sent within 10 ms either side of the timeout failed that way, and 2 of 100 async.

A server's idle timeout is a constant of its configuration, so the pool learns it. Each time an
origin closes an idle connection of ours without GOAWAY, the idle time at which it closed is
one observation:

* async: the event loop reports the close as it happens;
* sync: when the pool next looks at the connection, Linux's ``TCP_INFO`` says how long ago the
  server's FIN came (``tcpi_last_ack_recv``; on other systems the sync pool learns only from
  the next kind);
* a call that failed that way on a connection reused after some idle time: that idle time.

Once two observations agree within :data:`AGREE`, a connection idle longer than
:data:`MARGIN` of the shorter one is not reused: the call opens a new connection instead (one
connect, against a call lost). One observation alone teaches nothing, since a restart or a
crash also closes idle connections, at whatever idle time they had; a close after GOAWAY (a
graceful shutdown, nginx's idle timeout) is already safe for the next call and is not counted.
The decision is :func:`reuse_limit`; :class:`ServerIdle` holds one origin's observations,
one per process (:func:`server_idle`: what the sync client learns, the async one knows).
"""

from __future__ import annotations

import os
import socket
import struct
import threading
from collections import deque
from collections.abc import Iterable
from itertools import pairwise
from typing import Final

from .._logging import logger

__all__ = ["AGREE", "KEEP", "MARGIN", "MIN_IDLE_S", "ServerIdle", "reuse_limit", "server_idle",
           "since_peer_close"]

# Two closes whose idle times differ by at most this share of the longer one are the same timeout.
AGREE: Final = 0.2
# A connection idle past this share of the learned timeout is not reused (the close and a call
# written at once race over a few milliseconds; 10 % of a 5 s timeout is 500 ms).
MARGIN: Final = 0.9
# A close this soon after the connection's last call is not an idle timeout (a server closing
# after its answer, a drain): not counted.
MIN_IDLE_S: Final = 0.05
# Observations kept per origin: the newest ones, so that a reconfigured server is relearned.
KEEP: Final = 8


def reuse_limit(observations: Iterable[float]) -> float | None:
    """The idle time past which a connection to the origin is not reused, from the idle times
    at which it closed connections (seconds), or None: nothing learned yet.

    The shortest idle time another observation agrees with (within :data:`AGREE`), times
    :data:`MARGIN`; closes below :data:`MIN_IDLE_S` are ignored."""
    seen = sorted(o for o in observations if o >= MIN_IDLE_S)
    for shorter, longer in pairwise(seen):
        if longer - shorter <= AGREE * longer:
            return shorter * MARGIN
    return None


class ServerIdle:
    """One origin's observed idle closes and the reuse limit they give (shared by its pools:
    sync and async, every lane)."""

    __slots__ = ("_lock", "_seen", "limit", "origin")

    def __init__(self, origin: str = "") -> None:
        self.origin = origin
        self._seen: deque[float] = deque(maxlen=KEEP)
        self._lock = threading.Lock()
        self.limit: float | None = None  # reuse_limit() of what was seen

    def observe(self, idle_s: float) -> None:
        """The server closed a connection of ours, without GOAWAY, after ``idle_s`` of idle."""
        if idle_s < MIN_IDLE_S:
            return
        with self._lock:
            self._seen.append(idle_s)
            limit = reuse_limit(self._seen)
            changed, self.limit = limit != self.limit, limit
        if changed and limit is not None:
            logger.debug("origin %s closes idle HTTP/2 connections with no GOAWAY after about %.2f s: "
                         "connections idle over %.2f s are not reused", self.origin or "?",
                         limit / MARGIN, limit)

    def too_idle(self, idle_s: float) -> bool:
        limit = self.limit
        return limit is not None and idle_s > limit


_by_origin: dict[str, ServerIdle] = {}
_registry_lock = threading.Lock()


def server_idle(origin: str) -> ServerIdle:
    """The process's record of ``origin`` (scheme://host:port)."""
    found = _by_origin.get(origin)
    if found is None:
        with _registry_lock:
            found = _by_origin.setdefault(origin, ServerIdle(origin))
    return found


def _forget_in_child() -> None:
    """A forked child starts with fresh records: a lock the parent held would stay held."""
    global _registry_lock
    _by_origin.clear()
    _registry_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)


# struct tcp_info (linux/tcp.h): eight u8 fields, then u32s; tcpi_last_ack_recv is the 13th
# (milliseconds since the last segment that carried an ACK: on an idle connection, the FIN).
_LAST_ACK_RECV = struct.Struct("=I")
_LAST_ACK_RECV_AT: Final = 8 + 12 * 4
_TCP_INFO = getattr(socket, "TCP_INFO", None)


def since_peer_close(sock: socket.socket) -> float | None:
    """Seconds since the peer's FIN reached ``sock``, an idle TCP socket it has just been found
    closed on (Linux's ``TCP_INFO``); None where the system does not say."""
    if _TCP_INFO is None:
        return None
    try:
        info = sock.getsockopt(socket.IPPROTO_TCP, _TCP_INFO, _LAST_ACK_RECV_AT + 4)
    except (OSError, ValueError):
        return None
    if len(info) < _LAST_ACK_RECV_AT + 4:
        return None
    return float(_LAST_ACK_RECV.unpack_from(info, _LAST_ACK_RECV_AT)[0]) / 1000.0
