"""llmclient's WebSocket transport (RFC 6455): the framing of the ``websockets`` package's
sans-I/O protocol under llmclient's own connection set-up (``transport/connect.py``, ``tls.py``,
``proxy.py``), a sync driver on a blocking socket and an asyncio one, pings on silence.

Needs the ``ws`` extra (``pip install 'llmclient[ws]'``): importing this package without the
``websockets`` package raises an ImportError that names it. ``import llmclient`` never imports
it.

    session.py       Session: bytes in, events out (Opened, Message, Pong, Closed); no I/O
    heartbeat.py     Heartbeat: when to ping, when a missing pong means a dead peer (pure)
    setup.py         WebSocketOptions, the route (direct or a CONNECT tunnel), the TLS context
    sync_driver.py   connect() -> SyncWebSocket   (send, send_text, recv, ping, close, abort)
    async_driver.py  connect() -> AsyncWebSocket  (the same, awaited)
    errors.py        HandshakeError, WebSocketClosed, WebSocketProtocolError, MessageTooBig,
                     WebSocketTimeout (all WebSocketError)
"""

from __future__ import annotations

from ._require import require_websockets

require_websockets()  # fail here, naming the extra, rather than deep inside a connect

from .async_driver import AsyncWebSocket  # noqa: E402
from .async_driver import connect as connect_async  # noqa: E402
from .errors import (  # noqa: E402
    HandshakeError,
    MessageTooBig,
    WebSocketClosed,
    WebSocketError,
    WebSocketProtocolError,
    WebSocketTimeout,
)
from .heartbeat import Heartbeat  # noqa: E402
from .session import Session  # noqa: E402
from .setup import WebSocketOptions  # noqa: E402
from .sync_driver import SyncWebSocket  # noqa: E402
from .sync_driver import connect as connect_sync  # noqa: E402

__all__ = [
    "AsyncWebSocket",
    "HandshakeError",
    "Heartbeat",
    "MessageTooBig",
    "Session",
    "SyncWebSocket",
    "WebSocketClosed",
    "WebSocketError",
    "WebSocketOptions",
    "WebSocketProtocolError",
    "WebSocketTimeout",
    "connect_async",
    "connect_sync",
]
