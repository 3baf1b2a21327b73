"""One WebSocket client connection without I/O: bytes in, events out (RFC 6455).

The framing is the ``websockets`` package's sans-I/O protocol (``websockets.client.
ClientProtocol``), the library the official client's WebSocket mode builds on; around it,
:class:`Session` adds what a driver needs and the protocol leaves to its own I/O layers: the
handshake's answer as an :class:`Opened` event or a :class:`HandshakeError` naming the status,
fragmented messages put back together, text messages checked to be UTF-8 (RFC 6455 section
8.1), the protocol's failures as typed errors, and the bytes to write after each step.

No socket, thread, event loop or clock here (the drivers own those): a test feeds it bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from websockets.client import ClientProtocol
from websockets.exceptions import InvalidURI, PayloadTooBig, ProtocolError
from websockets.extensions.permessage_deflate import (
    PerMessageDeflate,
    enable_client_permessage_deflate,
)
from websockets.frames import CloseCode, Frame, Opcode
from websockets.http11 import Response
from websockets.protocol import Protocol, State
from websockets.streams import StreamReader
from websockets.uri import parse_uri

from .errors import (
    HandshakeError,
    MessageTooBig,
    WebSocketClosed,
    WebSocketError,
    WebSocketProtocolError,
)

__all__ = ["DEFLATE", "MAX_SIZE", "Closed", "Event", "Message", "Opened", "Pong", "Session",
           "http_equivalent"]

DEFLATE: Final = "deflate"
_TEXT, _BINARY, _CONT, _PONG, _CLOSE = (Opcode.TEXT, Opcode.BINARY, Opcode.CONT, Opcode.PONG,
                                        Opcode.CLOSE)
# The largest message accepted: a response.completed event carries the whole response (its
# text and tool calls), well under this. The official client sets no limit.
MAX_SIZE: Final = 64 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Opened:
    """The server accepted the upgrade (101)."""

    headers: tuple[tuple[str, str], ...]
    extensions: tuple[str, ...]  # negotiated, e.g. ("permessage-deflate",)


@dataclass(frozen=True, slots=True)
class Message:
    data: bytes  # a text message's UTF-8 bytes (checked), or a binary message's
    text: bool


@dataclass(frozen=True, slots=True)
class Pong:
    data: bytes


@dataclass(frozen=True, slots=True)
class Closed:
    """The closing handshake is done or the connection was lost (``code`` 1006)."""

    code: int
    reason: str
    by_server: bool  # the server started the closing handshake


Event = Opened | Message | Pong | Closed


def http_equivalent(url: str) -> str:
    """The http(s) URL a ws(s) URL is matched as for proxies (``HTTPS_PROXY`` for wss)."""
    scheme, rest = url.split(":", 1)
    return {"ws": "http", "wss": "https"}.get(scheme.lower(), scheme) + ":" + rest


# Where websockets' parser waits between frames: ``Protocol.parse`` suspended in the reader's
# ``at_eof`` (its loop's first step, before any byte of the next frame is taken). ``discard``
# (after a close) waits in ``at_eof`` too, but under another generator. Looked up by code object
# on the installed websockets; where its parser is made otherwise, no frame is read here.
_PARSE_CODE = getattr(getattr(Protocol, "parse", None), "__code__", None)
_AT_EOF_CODE = getattr(getattr(StreamReader, "at_eof", None), "__code__", None)


def _at_frame_start(p: Any) -> bool:
    """Whether ``p``'s parser waits for a new frame with nothing of it buffered."""
    if p.reader.buffer or _AT_EOF_CODE is None:
        return False
    outer, g = None, p.parser
    inner = getattr(g, "gi_yieldfrom", None)
    while inner is not None:
        outer, g = g, inner
        inner = getattr(g, "gi_yieldfrom", None)
    return (outer is not None and getattr(g, "gi_code", None) is _AT_EOF_CODE
            and getattr(outer, "gi_code", None) is _PARSE_CODE)


class Session:
    """A client WebSocket connection's protocol state.

    ``headers``: sent with the handshake (credentials, ``traceparent``, ``x-request-id``).
    ``compression``: ``"deflate"`` offers permessage-deflate (RFC 7692), None offers nothing.
    """

    def __init__(self, url: str, headers: Sequence[tuple[str, str]] = (), *,
                 compression: str | None = None, max_size: int | None = MAX_SIZE) -> None:
        if compression not in (None, DEFLATE):
            raise ValueError(f"compression must be {DEFLATE!r} or None, got {compression!r}")
        self.url = url
        try:
            uri = parse_uri(url)
        except InvalidURI as exc:
            raise ValueError(f"not a WebSocket URL (ws:// or wss://): {url!r}: {exc}") from None
        self.secure, self.host, self.port = uri.secure, uri.host, uri.port
        self.path = uri.resource_name
        extensions = None
        if compression == DEFLATE:
            extensions = enable_client_permessage_deflate(None)
        self._p = ClientProtocol(uri, extensions=extensions, max_size=max_size)
        # whether plain frames may be read here (_whole_frames): the protocol keeps what it checks
        # under the names read there (websockets 14 and later)
        self._plain = _PARSE_CODE is not None and _AT_EOF_CODE is not None and all(
            hasattr(self._p, name) for name in ("current_size", "max_message_size", "max_fragment_size"))
        self._headers = tuple(headers)
        self._parts: list[bytes] = []  # a fragmented message so far
        self._text = False
        self.closed_event: Closed | None = None
        self.eof_pending = False  # the protocol wants our side of the TCP connection shut
        self._opened = False
        self.failure: WebSocketError | None = None  # the server broke the protocol (receive)

    # -- state -----------------------------------------------------------------------------
    @property
    def open(self) -> bool:
        return self._opened and self._p.state is State.OPEN

    @property
    def closing(self) -> bool:
        """A close frame went out or came in; the TCP connection should end soon."""
        return self._p.state is State.CLOSING or self._p.state is State.CLOSED

    def closed_error(self, action: str = "") -> WebSocketClosed:
        """The error for a connection that is closed (or closing): the server's code if it
        sent one, else ours, else 1006."""
        ev = self.closed_event
        if ev is not None:
            return WebSocketClosed(self.url, ev.code, ev.reason, ev.by_server, action)
        p = self._p
        if p.close_rcvd is not None:
            return WebSocketClosed(self.url, p.close_rcvd.code, p.close_rcvd.reason, True, action)
        if p.close_sent is not None:
            return WebSocketClosed(self.url, p.close_sent.code, p.close_sent.reason, False, action)
        return WebSocketClosed(self.url, 1006, "", False, action)

    # -- handshake -------------------------------------------------------------------------
    def start(self) -> bytes:
        """The handshake request's bytes."""
        request = self._p.connect()
        for name, value in self._headers:
            request.headers[name] = value
        self._p.send_request(request)
        return self._outgoing()

    # -- input -----------------------------------------------------------------------------
    def receive(self, data: bytes) -> list[Event]:
        """Feed bytes from the network; the events they complete. Raises HandshakeError (a
        refused upgrade) and, during the handshake, WebSocketProtocolError. After it, a server
        that breaks the protocol sets :attr:`failure` (WebSocketProtocolError, MessageTooBig):
        the events before the bad frame are returned, the connection is being failed
        (:meth:`outgoing` has its close frame), and the driver raises ``failure`` once those
        events are read."""
        p = self._p
        if self._plain and p.state is State.OPEN and p.current_size is None and self.failure is None \
                and _at_frame_start(p):
            out, data = self._whole_frames(data)
            if not data:
                return out
            p.receive_data(data)
            out += self._events()
            return out
        p.receive_data(data)
        return self._events()

    def _whole_frames(self, data: bytes) -> tuple[list[Event], bytes]:
        """The plain data frames at the start of ``data``, read here, and the bytes left for the
        protocol (from the first frame that is not whole or not plain: a control frame, a
        fragment, reserved bits, a mask, over the size limit). Called only where the protocol's
        parser waits for a new frame with nothing buffered (:func:`_at_frame_start`), so that it
        goes on from a frame boundary; a plain frame is unmasked, final, text or binary, with
        RSV1 only where permessage-deflate was negotiated (inflated by that extension, as the
        parser would, :meth:`_inflate`): the protocol would hand it on unchanged (websockets
        ``Protocol.recv_frame``), and :meth:`_message` checks its text as :meth:`_frame` does.
        A message that comes in one frame is most of a stream's; reading it here costs about a
        third of the protocol's generator-based parse (benchmarks/ws_overhead)."""
        out: list[Event] = []
        p = self._p
        limit = p.max_message_size
        if p.max_fragment_size is not None:
            limit = p.max_fragment_size if limit is None else min(limit, p.max_fragment_size)
        extensions = p.extensions
        if extensions and (len(extensions) != 1 or type(extensions[0]) is not PerMessageDeflate):
            return out, data  # an extension of another kind: its frames are the protocol's
        i, n = 0, len(data)
        while n - i >= 2:
            b0, b1 = data[i], data[i + 1]
            if b1 & 0x80:
                break
            # a compressed message in one frame (RFC 7692: RSV1 set) is inflated here too
            if b0 != 0x81 and b0 != 0x82 and ((b0 != 0xC1 and b0 != 0xC2) or not extensions):
                break
            length, start = b1, i + 2
            if length == 126:
                if n - i < 4:
                    break
                length, start = int.from_bytes(data[i + 2:i + 4], "big"), i + 4
            elif length == 127:
                if n - i < 10:
                    break
                length, start = int.from_bytes(data[i + 2:i + 10], "big"), i + 10
            end = start + length
            if end > n or (limit is not None and length > limit):
                break
            payload = bytes(data[start:end])
            i = end
            if b0 & 0x40:
                inflated = self._inflate(payload, _TEXT if b0 & 0x0F == 1 else _BINARY, limit)
                if inflated is None:  # the protocol failed the connection; the rest is its to discard
                    break
                payload = inflated
            self._message(payload, b0 & 0x0F == 1, out)
            if self.failure is not None:  # not UTF-8: the protocol fails the connection (1007)
                break
        return out, (data[i:] if i else data)

    def _inflate(self, payload: bytes, opcode: Any, limit: int | None) -> bytes | None:
        """A compressed frame's message, through the negotiated extension as websockets'
        ``Frame.parse`` runs it, or None when that fails: then the protocol is failed as its
        ``parse`` fails it (the same close codes, ``parser_exc`` for :meth:`_events`)."""
        p = self._p
        try:
            frame = Frame(opcode, payload, True, True, False, False)
            for extension in reversed(p.extensions):
                frame = extension.decode(frame, max_size=limit)
            frame.check()
        except ProtocolError as exc:
            p.fail(CloseCode.PROTOCOL_ERROR, str(exc))
            p.parser_exc = exc
        except PayloadTooBig as exc:
            exc.set_current_size(p.current_size)
            p.fail(CloseCode.MESSAGE_TOO_BIG, str(exc))
            p.parser_exc = exc
        except Exception as exc:
            p.fail(CloseCode.INTERNAL_ERROR)
            p.parser_exc = exc
        else:
            return bytes(frame.data)
        return None

    def receive_eof(self) -> list[Event]:
        """The server closed the TCP connection."""
        self._p.receive_eof()
        events = self._events()
        if self.closed_event is None:
            self.closed_event = self._closed_now()
            events.append(self.closed_event)
        return events

    def _events(self) -> list[Event]:
        p = self._p
        out: list[Event] = []
        for ev in p.events_received():
            if type(ev) is Frame:
                op = ev.opcode
                if op is _TEXT and ev.fin and self.failure is None:  # the common case, inline
                    data = bytes(ev.data)
                    if data.isascii():  # ASCII is UTF-8: nothing to check
                        out.append(Message(data, True))
                        continue
                self._frame(ev, out)
            elif isinstance(ev, Response):
                self._response(ev, out)
        exc = p.parser_exc if self._opened else p.handshake_exc
        if exc is not None and self.failure is None:
            failure = self._failure(exc)
            if not self._opened and failure is not None:
                raise failure
            self.failure = failure
        if p.state is State.CLOSED and self.closed_event is None:
            self.closed_event = self._closed_now()
            out.append(self.closed_event)
        return out

    def _frame(self, frame: Any, out: list[Event]) -> None:
        op = frame.opcode
        if op is _TEXT or op is _BINARY:
            if frame.fin:
                self._message(bytes(frame.data), op is _TEXT, out)
            else:
                self._parts, self._text = [bytes(frame.data)], op is _TEXT
        elif op is _CONT:
            self._parts.append(bytes(frame.data))
            if frame.fin:
                data, self._parts = b"".join(self._parts), []
                self._message(data, self._text, out)
        elif op is _PONG:
            out.append(Pong(bytes(frame.data)))
        elif op is _CLOSE and self.closed_event is None:
            self.closed_event = self._closed_now()
            out.append(self.closed_event)

    def _message(self, data: bytes, text: bool, out: list[Event]) -> None:
        if self.failure is not None:
            return  # nothing after a failure is delivered
        if text and not data.isascii():  # ASCII is UTF-8; only the rest is decoded to check it
            try:
                data.decode()
            except UnicodeDecodeError as exc:
                self._p.fail(1007, "invalid UTF-8 in a text message")
                self.failure = WebSocketProtocolError(
                    f"the server at {self.url} sent a text message that is not UTF-8 ({exc.reason} "
                    f"at byte {exc.start}); the connection was closed with 1007", self.url)
                return
        out.append(Message(data, text))

    def _response(self, response: Any, out: list[Event]) -> None:
        headers = tuple(response.headers.raw_items())
        if response.status_code != 101:
            raise HandshakeError(self.url, response.status_code, response.reason_phrase, headers,
                                 bytes(response.body or b""))
        if self._p.handshake_exc is not None:
            failure = self._failure(self._p.handshake_exc)
            if failure is not None:
                raise failure
        self._opened = True
        names = tuple(ext.name for ext in self._p.extensions)
        out.append(Opened(headers, names))

    def _failure(self, exc: BaseException) -> WebSocketError | None:
        """The typed error for what the protocol reported (None: the connection just ended)."""
        if type(exc).__name__ == "PayloadTooBig":
            err: WebSocketError = MessageTooBig(
                f"the server at {self.url} sent a message larger than the limit ({exc}); the "
                f"connection was closed with 1009", self.url)
        elif isinstance(exc, EOFError):
            return None  # the connection ended mid-frame: receive_eof reports it as a 1006 close
        elif isinstance(exc, WebSocketError):
            return exc
        else:
            where = "handshake answer" if not self._opened else "frames"
            err = WebSocketProtocolError(f"the server at {self.url} broke the WebSocket protocol "
                                         f"in its {where}: {exc}; the connection was failed", self.url)
        err.__cause__ = exc
        return err

    def _closed_now(self) -> Closed:
        p = self._p
        if p.close_rcvd is not None and p.close_rcvd_then_sent is not False:
            return Closed(p.close_rcvd.code, p.close_rcvd.reason, True)  # the server began it
        if p.close_sent is not None and p.close_rcvd is not None:
            return Closed(p.close_sent.code, p.close_sent.reason, False)  # we began, it answered
        return Closed(1006, "", False)

    # -- output ----------------------------------------------------------------------------
    def send(self, data: bytes | str) -> bytes:
        """A message's frame: text for ``str``, binary for ``bytes``. A closed or closing
        connection raises :class:`WebSocketClosed` naming the send."""
        if not self.open:
            raise self.closed_error("send") if self._opened else WebSocketClosed(
                self.url, None, "the handshake is not done", False, "send")
        if isinstance(data, str):
            self._p.send_text(data.encode())
        else:
            self._p.send_binary(data)
        return self._outgoing()

    def send_text(self, data: bytes) -> bytes:
        """A text message from bytes already UTF-8 (orjson's output), without a decode."""
        if not self.open:
            raise self.closed_error("send")
        self._p.send_text(data)
        return self._outgoing()

    def ping(self, payload: bytes) -> bytes:
        if not self.open:
            raise self.closed_error("ping")
        self._p.send_ping(payload)
        return self._outgoing()

    def close(self, code: int = 1000, reason: str = "") -> bytes:
        """Start the closing handshake (nothing to send when it is already closing)."""
        if self._opened and self._p.state is State.OPEN:
            self._p.send_close(code, reason)
        return self._outgoing()

    def fail(self, code: int, reason: str = "") -> bytes:
        """Fail the connection (RFC 6455 section 7.1.7): a close frame when still open."""
        if self._opened and self._p.state is State.OPEN:
            self._p.fail(code, reason)
        return self._outgoing()

    def outgoing(self) -> bytes:
        return self._outgoing()

    def _outgoing(self) -> bytes:
        writes = self._p.data_to_send()
        if not writes:
            return b""
        if writes[-1] == b"":
            self.eof_pending = True
            writes = [w for w in writes if w]
        return writes[0] if len(writes) == 1 else b"".join(writes)
