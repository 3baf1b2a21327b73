"""HTTP/2 for the client (RFC 9113): our own, because an LLM client needs a small part of it.

Client streams only: no server push, no priorities. Each layer knows only the one below it::

    pool.py          SyncPool / AsyncPool: one lane's connections (GOAWAY, idle PING, expiry)
      sync_driver.py   SyncConnection: a blocking socket shared by threads
      async_driver.py  AsyncConnection: an asyncio Protocol
        common.py        httpx's face: request headers, responses, errors as httpx classes
        state.py         H2State: the protocol as plain state, bytes in, events and frames out
          events.py        what the state reports, one typed event per thing that happened
          errors.py        typed failures (GOAWAY's last-stream-id, a reset's code, unprocessed)
          hpack.py         header compression (RFC 7541)
          frames.py        the wire: frame types, flags, error codes, settings, the preface

``state``, ``events``, ``errors``, ``hpack`` and ``frames`` do no I/O and import no sockets,
threads, event loop or httpx (a test holds them to that): they are tested frame by frame and
fuzzed against the maintained ``h2`` state machine. The drivers own the I/O and the waiting;
the pool owns which connection a request goes to. The package exports the pools and the
errors; the drivers, with HPACK's tables, load with the first HTTP/2 connection.
"""

from __future__ import annotations

from .common import HTTP2ProtocolError
from .errors import (
    ConnectionLost,
    GoAwayError,
    H2Error,
    NotHTTP2,
    PeerProtocolError,
    StreamCancelled,
    StreamResetError,
)
from .pool import AsyncPool, SyncPool

__all__ = [
    "AsyncPool",
    "ConnectionLost",
    "GoAwayError",
    "H2Error",
    "HTTP2ProtocolError",
    "NotHTTP2",
    "PeerProtocolError",
    "StreamCancelled",
    "StreamResetError",
    "SyncPool",
]
