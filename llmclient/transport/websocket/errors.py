"""The WebSocket transport's errors: each names the URL, what happened and what to do.

    WebSocketError                 .url (userinfo masked)
     ├── HandshakeError            the upgrade was answered with another status than 101:
     │                             .status, .headers, .body, .retryable
     ├── WebSocketClosed           the connection is closed (.code, .reason, .by_server: the
     │                             server started the close); a send after close too
     ├── WebSocketProtocolError    the server broke RFC 6455 (a malformed frame, a bad
     │    │                        handshake answer); the connection was failed with 1002
     │    └── MessageTooBig        a message over ``max_size`` (closed with 1009)
     └── WebSocketTimeout          (also TimeoutError) no answer to the handshake, no message
                                   within ``recv(timeout=)``, or no pong within ping_timeout

Opening the TCP connection, TLS and a proxy's CONNECT fail as the HTTP transport's do
(``httpx.ConnectError``, ``httpx.ConnectTimeout``, ``transport.proxy.ProxyError``).

Pure: no socket, no ``websockets`` import.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..._redact import redact_text, redact_url

__all__ = [
    "HandshakeError",
    "MessageTooBig",
    "WebSocketClosed",
    "WebSocketError",
    "WebSocketProtocolError",
    "WebSocketTimeout",
    "close_meaning",
    "handshake_advice",
]

# RFC 6455 section 7.4.1, and the IANA registry's 1012-1014.
_CLOSE_MEANINGS = {
    1000: "normal closure",
    1001: "going away (the server is shutting down or the connection reached its age limit)",
    1002: "protocol error",
    1003: "unsupported data",
    1005: "no status code",
    1006: "abnormal closure: the connection was lost without a close frame",
    1007: "invalid data (not UTF-8 in a text message)",
    1008: "policy violation",
    1009: "message too big",
    1010: "a required extension was not negotiated",
    1011: "internal server error",
    1012: "service restart",
    1013: "try again later",
    1014: "bad gateway",
    1015: "TLS handshake failure",
}


def close_meaning(code: int | None) -> str:
    if code is None:
        return "no close frame"
    if 4000 <= code <= 4999:
        return "an application's own code"
    return _CLOSE_MEANINGS.get(code, "an unregistered code")


class WebSocketError(Exception):
    """Base of the WebSocket transport's errors; ``url`` names the socket, userinfo masked."""

    def __init__(self, message: str, url: str) -> None:
        self.url = redact_url(url)
        super().__init__(redact_text(message))


def handshake_advice(status: int, headers: Sequence[tuple[str, str]]) -> str:
    """What to do about a refused upgrade (pure): the status names the cause."""
    get = {k.lower(): v for k, v in headers}.get
    if status in (401, 403):
        return ("the server refused the credentials sent with the handshake: check the API key "
                "(the Authorization header) and that it may use this endpoint")
    if status == 404:
        return ("nothing answers WebSockets at this path: the server does not offer the "
                "Responses WebSocket mode here (use the HTTP API, or point websocket_base_url "
                "at a server that does)")
    if status == 426:
        wanted = get("upgrade") or get("sec-websocket-version")
        return ("the server (or a proxy in front of it) did not accept this upgrade"
                + (f" and asked for {wanted!r}" if wanted else "")
                + ": it does not offer WebSockets here, use the HTTP API")
    if status in (301, 302, 303, 307, 308):
        where = get("location")
        return ("the server redirects the handshake" + (f" to {where}" if where else "")
                + ": WebSocket redirects are not followed, set websocket_base_url to the "
                  "final address")
    if status == 429 or status >= 500:
        return "the server is busy or failing: try again later"
    if status == 200:
        return ("the server answered the upgrade as a plain HTTP request: it (or a proxy in "
                "front of it) does not speak WebSockets; a proxy needs to pass the Upgrade "
                "and Connection headers")
    return "the server does not accept a WebSocket here"


class HandshakeError(WebSocketError):
    """The server answered the WebSocket upgrade with ``status`` instead of 101."""

    def __init__(self, url: str, status: int, reason: str, headers: Sequence[tuple[str, str]],
                 body: bytes) -> None:
        self.status = status
        self.reason = reason
        self.headers = list(headers)
        self.body = body
        self.retryable = status == 429 or status >= 500
        text = body[:300].decode("utf-8", "replace").strip()
        detail = f": {text}" if text else ""
        advice = handshake_advice(status, headers)
        super().__init__(f"WebSocket upgrade to {redact_url(url)} refused: HTTP {status}"
                         f"{' ' + reason if reason else ''}{detail}. "
                         f"{advice[0].upper()}{advice[1:]}.", url)


class WebSocketClosed(WebSocketError):
    """The connection is closed. ``code``/``reason``: of the close frame that started the
    closing handshake (``by_server``: the server's); 1006 when it was lost without one."""

    def __init__(self, url: str, code: int | None, reason: str = "", by_server: bool = False,
                 action: str = "") -> None:
        self.code = 1006 if code is None else code
        self.reason = reason
        self.by_server = by_server
        who = ("the server closed it" if by_server else
               "it was lost" if self.code == 1006 else "the client closed it")
        why = f" ({reason})" if reason else ""
        lead = f"cannot {action}: " if action else ""
        super().__init__(f"{lead}the WebSocket to {redact_url(url)} is closed: {who} with code "
                         f"{self.code}, {close_meaning(self.code)}{why}", url)

    @property
    def clean(self) -> bool:
        """Closed by a closing handshake with 1000 (normal) or 1001 (going away)."""
        return self.code in (1000, 1001)


class WebSocketProtocolError(WebSocketError):
    """The server broke the WebSocket protocol; the connection was failed (1002)."""


class MessageTooBig(WebSocketProtocolError):
    """A message from the server over ``max_size``; the connection was closed with 1009."""


class WebSocketTimeout(WebSocketError, TimeoutError):
    """No handshake answer, no message, or no pong in time."""
