"""Our own HTTP/2 client connections (RFC 9113): the protocol as plain state, sync and async I/O.

Why not httpcore + h2: measured per non-streamed chat call, the httpx -> httpcore -> h2 ->
hpack -> hyperframe stack spent ~95% of llmclient's client CPU (HPACK alone ~120 us a call;
for streams h2 builds ``repr(frame)`` of every received frame, re-serialising it, for a trace
log that is off). An LLM client needs a small part of HTTP/2: client streams, no server push,
no priorities. Done here in a few hundred lines it costs a fraction. httpcore still carries
HTTP/1.1 (see _transport.py).

Layout:

* :class:`H2State` - the protocol, no I/O: ``receive(bytes)`` parses frames and updates
  streams; request methods append frames to ``out``. Flow control both ways (we advertise a 4 MiB
  stream window and a 16 MiB connection window, and return credit as the application consumes
  data, so a slow reader bounds what is buffered), SETTINGS, PING, GOAWAY, RST_STREAM,
  CONTINUATION, padding, HPACK (_hpack.py).
* :class:`SyncConnection` - a socket shared by threads: whoever waits for data reads the socket
  for everyone (one reader at a time, like httpcore), under one lock for the state.
* :class:`AsyncConnection` - an asyncio Protocol: the event loop feeds ``data_received`` and
  wakes exactly the streams that got something.

Errors are httpx's exception classes (ConnectError, ReadTimeout ...); the protocol's own are
typed subclasses of RemoteProtocolError (:class:`GoAwayError` with its last-stream-id,
:class:`StreamResetError` with its code, :class:`PeerProtocolError` for a server that broke
RFC 9113, :class:`NotHTTP2`), each saying in ``unprocessed`` whether the request may be sent
again at once: the retry rules (_retry.py) read that, never the text. The peer is held to the
protocol as h2 holds it (frame sizes, flow-control windows both ways, stream states, caps on
frames that carry nothing and on replies a peer that does not read makes us queue); each
violation fails the connection and wakes every stream on it at once. Trace events use httpcore's names (``connection.connect_tcp.started`` ...)
so :class:`~llmclient._timings.CallRecord` reads both stacks the same way.
"""

from __future__ import annotations

import socket
import ssl
import struct
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import TYPE_CHECKING, Any, Final, cast

import httpx

from ._connect import open_async, open_sync, request_timeout
from ._hpack import Decoder, Encoder, HPACKError
from ._logging import logger

if TYPE_CHECKING:
    import asyncio

__all__ = [
    "AsyncConnection",
    "ConnectionLost",
    "GoAwayError",
    "H2Error",
    "H2State",
    "NotHTTP2",
    "PeerProtocolError",
    "StreamResetError",
    "SyncConnection",
    "connect_sync",
]

PREFACE: Final = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = range(10)
END_STREAM = ACK = 0x1
END_HEADERS, PADDED, PRIORITY_FLAG = 0x4, 0x8, 0x20
# Error codes (RFC 9113 section 7).
NO_ERROR, PROTOCOL_ERROR, INTERNAL_ERROR, FLOW_CONTROL_ERROR = 0, 1, 2, 3
STREAM_CLOSED, FRAME_SIZE_ERROR, REFUSED_STREAM, CANCEL, COMPRESSION_ERROR = 5, 6, 7, 8, 9
ENHANCE_YOUR_CALM = 11

# Settings identifiers (RFC 9113 section 6.5.2).
_S_HEADER_TABLE_SIZE, _S_ENABLE_PUSH, _S_MAX_CONCURRENT_STREAMS = 1, 2, 3
_S_INITIAL_WINDOW_SIZE, _S_MAX_FRAME_SIZE, _S_MAX_HEADER_LIST_SIZE = 4, 5, 6

STREAM_WINDOW: Final = 4 * 1024 * 1024  # what each response may send before we read it
CONNECTION_WINDOW: Final = 16 * 1024 * 1024
MAX_HEADER_LIST: Final = 256 * 1024
MAX_FRAME_IN: Final = 16384  # we never raise SETTINGS_MAX_FRAME_SIZE from its default
# Frames that carry nothing forward (empty DATA, empty CONTINUATION, PING, SETTINGS, PRIORITY,
# unknown types) allowed in a row before the peer is told to calm down: a flood of them would
# otherwise re-arm the read timeout forever (CVE-2019-9518, CVE-2019-9512, CVE-2024-27316).
MAX_IDLE_FRAMES: Final = 1000
MAX_CONTINUATIONS: Final = 64  # per header block: 64 x 16 KiB is past MAX_HEADER_LIST anyway
# Async: replies to the peer's PINGs and SETTINGS held for a peer that does not read (the
# sync driver blocks on its write timeout instead).
MAX_CONTROL_BACKLOG: Final = 256 * 1024
_DEFAULT_WINDOW: Final = 65535
_MAX_WINDOW: Final = 2**31 - 1
_READ_SIZE: Final = 256 * 1024

_FRAME_HEADER = struct.Struct(">BHBBI")  # 24-bit length (as 8 + 16), type, flags, stream id
_U32 = struct.Struct(">I")
_SETTING = struct.Struct(">HI")
_GOAWAY = struct.Struct(">II")

# Connection-specific headers that HTTP/2 forbids (RFC 9113 section 8.2.2); Host becomes
# :authority.
_DROPPED_HEADERS: Final = frozenset(
    {b"host", b"connection", b"keep-alive", b"proxy-connection", b"transfer-encoding", b"upgrade"}
)
_CODE_NAMES: Final = {
    0: "NO_ERROR", 1: "PROTOCOL_ERROR", 2: "INTERNAL_ERROR", 3: "FLOW_CONTROL_ERROR",
    4: "SETTINGS_TIMEOUT", 5: "STREAM_CLOSED", 6: "FRAME_SIZE_ERROR", 7: "REFUSED_STREAM",
    8: "CANCEL", 9: "COMPRESSION_ERROR", 10: "CONNECT_ERROR", 11: "ENHANCE_YOUR_CALM",
    12: "INADEQUATE_SECURITY", 13: "HTTP_1_1_REQUIRED",
}


def code_name(code: int) -> str:
    return _CODE_NAMES.get(code, f"0x{code:x}")


def frame(ftype: int, flags: int, stream_id: int, payload: bytes = b"") -> bytes:
    n = len(payload)
    return _FRAME_HEADER.pack(n >> 16, n & 0xFFFF, ftype, flags, stream_id) + payload


# -- errors: typed, so that callers (retries, fallback) read attributes, never text ----------


class H2Error(httpx.RemoteProtocolError):
    """An HTTP/2 connection or stream failed. ``unprocessed`` is True only where the protocol
    guarantees the server did not process the request, so it may be sent again at once."""

    unprocessed: bool = False


class NotHTTP2(H2Error):
    """The peer does not speak HTTP/2 (ALPN chose http/1.1, or h2c was answered in HTTP/1.x):
    it could not have read our request as one."""

    unprocessed = True


class PeerProtocolError(H2Error):
    """The server broke RFC 9113 (or flooded us): we sent GOAWAY(``code``) and closed."""

    def __init__(self, code: int, why: str) -> None:
        super().__init__(f"HTTP/2 protocol error from the server ({code_name(code)}): {why}")
        self.code = code


class GoAwayError(H2Error):
    """The server sent GOAWAY and will not process this stream (it is above last-stream-id;
    RFC 9113 section 6.8: such a request "can be safely retried")."""

    unprocessed = True

    def __init__(self, stream_id: int, last_stream_id: int, code: int) -> None:
        super().__init__(f"server sent GOAWAY ({code_name(code)}, last_stream_id:{last_stream_id}): "
                         f"stream {stream_id} was not processed")
        self.stream_id, self.last_stream_id, self.code = stream_id, last_stream_id, code


class StreamResetError(H2Error):
    """The server reset the stream (RST_STREAM); REFUSED_STREAM means it was not processed
    (RFC 9113 section 8.7)."""

    def __init__(self, stream_id: int, code: int, why: str = "") -> None:
        detail = why or ("not processed" if code == REFUSED_STREAM else "")
        super().__init__(f"the server reset stream {stream_id} ({code_name(code)}"
                         f"{': ' + detail if detail else ''})")
        self.stream_id, self.code = stream_id, code
        self.unprocessed = code == REFUSED_STREAM


class ConnectionLost(H2Error):
    """The connection closed (or broke) before the stream's response ended."""


class _ConnectionError(Exception):
    """Raised inside :meth:`H2State.receive`: GOAWAY(code), then every stream fails."""

    def __init__(self, code: int, why: str) -> None:
        super().__init__(why)
        self.code = code


class Stream:
    """One request/response exchange on a connection."""

    __slots__ = (
        "data", "ended", "error", "headers", "id", "local_closed", "recv_window", "send_window",
        "unacked", "waiter",
    )

    def __init__(self, stream_id: int, send_window: int) -> None:
        self.id = stream_id
        self.headers: list[tuple[bytes, bytes]] | None = None
        self.data: list[bytes] = []
        self.ended = False  # the server sent END_STREAM
        self.local_closed = False  # we sent END_STREAM (or RST_STREAM)
        self.error: Exception | None = None
        self.send_window = send_window
        self.recv_window = STREAM_WINDOW  # what the server may still send before our credit
        self.unacked = 0  # bytes the application consumed that we have not credited back
        self.waiter: Any = None  # async: the future the stream's reader awaits


class H2State:
    """Client-side HTTP/2 state: bytes in, frames out (``out``), no I/O, not thread-safe.

    Every failure is one of the typed errors above; :meth:`receive` returns every stream whose
    state changed, the ones a connection error failed included, so a driver wakes them all."""

    def __init__(self) -> None:
        self.out = bytearray()
        self.streams: dict[int, Stream] = {}
        self.next_id = 1
        self.encoder = Encoder()
        self.decoder = Decoder(max_header_list_size=MAX_HEADER_LIST)
        # The server's settings as they apply to what we send.
        self.max_streams = 100  # until its SETTINGS say otherwise
        self.send_initial_window = _DEFAULT_WINDOW
        self.send_window = _DEFAULT_WINDOW  # connection-level
        self.max_frame_out = 16384
        self.settings_received = False
        self.goaway_last_id: int | None = None
        self.error: Exception | None = None  # set once the connection is unusable
        self.stale = False  # a read timed out here: no new streams (httpcore does the same)
        self.cleartext = False  # h2c with prior knowledge (RFC 9113 section 3.3), not TLS+ALPN
        self.recv_window = CONNECTION_WINDOW  # what the server may still send, all streams
        self.recv_unacked = 0  # connection-level credit not yet returned
        self.pings_acked = 0
        self.idle_frames = 0  # frames in a row that carried nothing forward
        self._inbuf = b""
        # (stream id, flags, block, CONTINUATION frames so far) while a header block is open
        self._header_block: tuple[int, int, bytearray, list[int]] | None = None

    # -- what we send --------------------------------------------------------------------------

    def initiate(self) -> None:
        settings = b"".join(_SETTING.pack(k, v) for k, v in (
            (_S_ENABLE_PUSH, 0),
            (_S_MAX_CONCURRENT_STREAMS, 100),
            (_S_INITIAL_WINDOW_SIZE, STREAM_WINDOW),
            (_S_MAX_HEADER_LIST_SIZE, MAX_HEADER_LIST),
        ))
        self.out += PREFACE + frame(SETTINGS, 0, 0, settings)
        self.out += frame(WINDOW_UPDATE, 0, 0, _U32.pack(CONNECTION_WINDOW - _DEFAULT_WINDOW))

    @property
    def usable(self) -> bool:
        """New streams may start here."""
        return (self.error is None and self.goaway_last_id is None and not self.stale
                and self.next_id < _MAX_WINDOW and len(self.streams) < self.max_streams)

    def open_stream(self, headers: list[tuple[bytes, bytes]], end_stream: bool) -> Stream:
        sid = self.next_id
        self.next_id += 2
        self.idle_frames = 0
        stream = Stream(sid, self.send_initial_window)
        self.streams[sid] = stream
        block = self.encoder.encode(headers)
        flags = END_STREAM if end_stream else 0
        stream.local_closed = end_stream
        limit = self.max_frame_out
        if len(block) <= limit:
            self.out += frame(HEADERS, flags | END_HEADERS, sid, block)
        else:
            self.out += frame(HEADERS, flags, sid, block[:limit])
            for i in range(limit, len(block), limit):
                last = END_HEADERS if i + limit >= len(block) else 0
                self.out += frame(CONTINUATION, last, sid, block[i:i + limit])
        return stream

    def send_data(self, stream: Stream, data: memoryview, end_stream: bool) -> int:
        """Queue as much of ``data`` as the windows allow; the count queued (END_STREAM goes
        with the last byte, or alone when ``data`` is empty)."""
        if stream.local_closed or stream.id not in self.streams:
            return len(data)  # the server already answered or reset it: nothing more to send
        sent, total = 0, len(data)
        while sent < total:
            n = min(total - sent, self.send_window, stream.send_window, self.max_frame_out)
            if n <= 0:
                return sent
            last = end_stream and sent + n == total
            self.out += frame(DATA, END_STREAM if last else 0, stream.id, bytes(data[sent:sent + n]))
            self.send_window -= n
            stream.send_window -= n
            sent += n
        if end_stream and total == 0:
            self.out += frame(DATA, END_STREAM, stream.id)
        if end_stream:
            stream.local_closed = True
        return sent

    def consumed(self, stream: Stream, n: int) -> None:
        """The application read ``n`` bytes of ``stream``: return the credit in batches."""
        stream.unacked += n
        self.recv_unacked += n
        if stream.unacked >= STREAM_WINDOW // 2 and not stream.ended:
            self.out += frame(WINDOW_UPDATE, 0, stream.id, _U32.pack(stream.unacked))
            stream.recv_window += stream.unacked
            stream.unacked = 0
        self._maybe_credit_connection()

    def reset(self, stream: Stream, code: int = CANCEL) -> None:
        """Cancel a stream (RFC 9113 section 8.7): the server stops generating."""
        if self.streams.pop(stream.id, None) is not None and self.error is None:
            self.out += frame(RST_STREAM, 0, stream.id, _U32.pack(code))
            # Credit what the server sent and nobody will read.
            pending = sum(len(d) for d in stream.data)
            stream.data.clear()
            self.recv_unacked += pending
        stream.local_closed = True
        if stream.error is None and not stream.ended:
            stream.error = httpx.StreamClosed()

    def ping(self, payload: bytes = b"\0" * 8) -> None:
        self.out += frame(PING, 0, 0, payload)

    def close(self) -> None:
        if self.error is None:
            self.out += frame(GOAWAY, 0, 0, _GOAWAY.pack(0, NO_ERROR))
            self.fail(ConnectionLost("connection closed by the client"))

    # -- what we receive -----------------------------------------------------------------------

    def receive(self, data: bytes) -> list[Stream]:
        """Parse what arrived; the streams that got something (headers, data, end, error)."""
        if self.error is not None:
            return []
        if self._inbuf:
            data = self._inbuf + data
            self._inbuf = b""
        touched: list[Stream] = []
        pos, n = 0, len(data)
        unpack = _FRAME_HEADER.unpack_from
        try:
            if not self.settings_received and n and data[:1] != b"\0":
                # Every HTTP/2 server begins with SETTINGS, whose length fits 3 bytes starting
                # with 0 (section 3.4); "HTTP/1.1 400" does not.
                raise NotHTTP2(f"the server did not answer in HTTP/2: {bytes(data[:40])!r}")
            while n - pos >= 9:
                hi, lo, ftype, flags, sid = unpack(data, pos)
                length = (hi << 16) | lo
                if length > MAX_FRAME_IN:  # section 4.2: over our SETTINGS_MAX_FRAME_SIZE
                    raise _ConnectionError(FRAME_SIZE_ERROR, f"frame of {length} bytes (type {ftype})")
                if not self.settings_received and ftype != SETTINGS:
                    raise NotHTTP2(f"the server did not answer in HTTP/2: {bytes(data[:40])!r}")
                end = pos + 9 + length
                if end > n:
                    break
                payload = data[pos + 9:end]
                pos = end
                sid &= 0x7FFFFFFF
                self._on_frame(ftype, flags, sid, payload, touched)
        except _ConnectionError as exc:
            self.out += frame(GOAWAY, 0, 0, _GOAWAY.pack(0, exc.code) + str(exc).encode()[:200])
            touched += self.fail(PeerProtocolError(exc.code, str(exc)))
            return touched
        except NotHTTP2 as exc:
            touched += self.fail(exc)
            return touched
        except HPACKError as exc:
            self.out += frame(GOAWAY, 0, 0, _GOAWAY.pack(0, COMPRESSION_ERROR))
            touched += self.fail(PeerProtocolError(COMPRESSION_ERROR, f"header block: {exc}"))
            return touched
        if pos < n:
            self._inbuf = bytes(data[pos:])
        return touched

    def _on_frame(self, ftype: int, flags: int, sid: int, payload: bytes, touched: list[Stream]) -> None:
        if self._header_block is not None and ftype != CONTINUATION:
            raise _ConnectionError(PROTOCOL_ERROR, "expected CONTINUATION")
        if ftype == DATA:
            self._on_data(sid, flags, payload, touched)
        elif ftype == HEADERS:
            self._on_headers(sid, flags, payload, touched)
        elif ftype == CONTINUATION:
            self._on_continuation(sid, flags, payload, touched)
        elif ftype == SETTINGS:
            self._idle_frame()
            self._on_settings(sid, flags, payload)
        elif ftype == WINDOW_UPDATE:
            self._on_window_update(sid, payload, touched)
        elif ftype == PING:
            self._idle_frame()
            if sid:
                raise _ConnectionError(PROTOCOL_ERROR, f"PING on stream {sid}")
            if len(payload) != 8:
                raise _ConnectionError(FRAME_SIZE_ERROR, f"PING of {len(payload)} bytes")
            if flags & ACK:
                self.pings_acked += 1
            else:
                self.out += frame(PING, ACK, 0, payload)
        elif ftype == RST_STREAM:
            self._on_rst(sid, payload, touched)
        elif ftype == GOAWAY:
            self._on_goaway(sid, payload, touched)
        elif ftype == PUSH_PROMISE:
            raise _ConnectionError(PROTOCOL_ERROR, "PUSH_PROMISE with push disabled")
        else:  # PRIORITY and unknown frame types are ignored (section 5.5), but counted
            if ftype == PRIORITY and sid == 0:
                raise _ConnectionError(PROTOCOL_ERROR, "PRIORITY on stream 0")  # section 6.3
            if ftype == PRIORITY and len(payload) != 5:
                raise _ConnectionError(FRAME_SIZE_ERROR, f"PRIORITY of {len(payload)} bytes")
            self._idle_frame()

    def _idle_frame(self) -> None:
        self.idle_frames += 1
        if self.idle_frames > MAX_IDLE_FRAMES:
            raise _ConnectionError(ENHANCE_YOUR_CALM,
                                   f"{self.idle_frames} frames in a row that carry no response data")

    def connection_lost(self, why: str = "Server disconnected without sending a response.") -> list[Stream]:
        """The socket closed or broke; the streams this fails."""
        if self.error is not None:
            return []
        if self.cleartext and not self.settings_received and not self._inbuf:
            # h2c: a server that speaks HTTP/2 sends SETTINGS first, before it reads a request
            # (section 3.4); one that closes on our preface without a byte does not speak it.
            return self.fail(NotHTTP2(f"the server closed the connection on the h2c preface ({why})"))
        if self.goaway_last_id is not None:
            why = f"{why} (after GOAWAY, last_stream_id:{self.goaway_last_id})"
        return self.fail(ConnectionLost(why))

    def fail(self, exc: Exception) -> list[Stream]:
        """The connection is over: every open stream gets ``exc`` (streams already ended keep
        their data); the streams failed here."""
        if self.error is None:
            self.error = exc
        failed = [s for s in self.streams.values() if s.error is None and not s.ended]
        for stream in failed:
            stream.error = exc
        self.streams.clear()
        return failed

    def _stream_for(self, ftype: str, sid: int) -> Stream | None:
        """The open stream a frame is for; None for one we closed. A frame on stream 0, on an
        even (server-initiated) or not yet opened stream is a connection error (section 5.1)."""
        stream = self.streams.get(sid)
        if stream is None and (sid == 0 or sid % 2 == 0 or sid >= self.next_id):
            raise _ConnectionError(PROTOCOL_ERROR, f"{ftype} on idle stream {sid}")
        return stream

    @staticmethod
    def _unpad(flags: int, payload: bytes) -> bytes:
        if flags & PADDED:
            if not payload:
                raise _ConnectionError(FRAME_SIZE_ERROR, "padded frame with no pad length")
            pad = payload[0]
            if pad >= len(payload):
                raise _ConnectionError(PROTOCOL_ERROR, "padding longer than the frame")
            return payload[1:len(payload) - pad]
        return payload

    def _on_data(self, sid: int, flags: int, payload: bytes, touched: list[Stream]) -> None:
        stream = self._stream_for("DATA", sid)
        size = len(payload)
        self.recv_window -= size
        if self.recv_window < 0:  # section 6.9.1: beyond the window we advertised
            raise _ConnectionError(FLOW_CONTROL_ERROR, "DATA beyond the connection window")
        body = self._unpad(flags, payload) if flags & PADDED else payload
        if not body and not flags & END_STREAM:
            self._idle_frame()
        else:
            self.idle_frames = 0
        if stream is None:  # reset by us, or ended: credit the connection window at once
            self.recv_unacked += size
            self._maybe_credit_connection()
            return
        if stream.headers is None:
            raise _ConnectionError(PROTOCOL_ERROR, f"DATA before HEADERS on stream {sid}")
        if stream.ended:
            raise _ConnectionError(STREAM_CLOSED, f"DATA after END_STREAM on stream {sid}")
        stream.recv_window -= size
        if stream.recv_window < 0:
            raise _ConnectionError(FLOW_CONTROL_ERROR, f"DATA beyond the window of stream {sid}")
        if size != len(body):
            self.recv_unacked += size - len(body)  # padding: nobody reads it
        if body:
            stream.data.append(body)
        if flags & END_STREAM:
            self._remote_end(stream)
        touched.append(stream)

    def _maybe_credit_connection(self) -> None:
        if self.recv_unacked >= CONNECTION_WINDOW // 2:
            self.out += frame(WINDOW_UPDATE, 0, 0, _U32.pack(self.recv_unacked))
            self.recv_window += self.recv_unacked
            self.recv_unacked = 0

    def _remote_end(self, stream: Stream) -> None:
        stream.ended = True
        if stream.local_closed:
            self.streams.pop(stream.id, None)

    def _on_headers(self, sid: int, flags: int, payload: bytes, touched: list[Stream]) -> None:
        self._stream_for("HEADERS", sid)
        if flags & PADDED:
            payload = self._unpad(flags, payload)
        if flags & PRIORITY_FLAG:
            if len(payload) < 5:
                raise _ConnectionError(FRAME_SIZE_ERROR, "HEADERS too short for its priority")
            payload = payload[5:]
        if flags & END_HEADERS:
            self._headers_done(sid, flags, payload, touched)
        else:
            self._header_block = (sid, flags, bytearray(payload), [0])

    def _on_continuation(self, sid: int, flags: int, payload: bytes, touched: list[Stream]) -> None:
        block = self._header_block
        if block is None or block[0] != sid:
            raise _ConnectionError(PROTOCOL_ERROR, f"unexpected CONTINUATION on stream {sid}")
        block[2].extend(payload)
        block[3][0] += 1
        if len(block[2]) > MAX_HEADER_LIST * 2 or block[3][0] > MAX_CONTINUATIONS:
            raise _ConnectionError(ENHANCE_YOUR_CALM,
                                   f"header block of {block[3][0]} CONTINUATION frames, {len(block[2])} bytes")
        if flags & END_HEADERS:
            self._header_block = None
            self._headers_done(sid, block[1], bytes(block[2]), touched)

    def _headers_done(self, sid: int, flags: int, block: bytes, touched: list[Stream]) -> None:
        headers = self.decoder.decode(block)  # always: the HPACK table must stay in step
        self.idle_frames = 0
        stream = self.streams.get(sid)
        if stream is None:
            return
        if stream.ended:
            raise _ConnectionError(STREAM_CLOSED, f"HEADERS after END_STREAM on stream {sid}")
        if stream.headers is None:
            status = headers[0][1] if headers and headers[0][0] == b":status" else b""
            if status[:1] == b"1" and len(status) == 3 and status.isdigit():
                if flags & END_STREAM:  # section 8.1: an informational response never ends one
                    self._stream_error(stream, f"informational {status.decode()} response "
                                               "with END_STREAM", touched)
                return  # 1xx informational: the real response follows
            if len(status) != 3 or not status.isdigit():
                self._stream_error(stream, "response has no valid :status", touched)
                return
            stream.headers = headers
        elif not flags & END_STREAM:  # section 8.1: trailers must end the stream
            self._stream_error(stream, "second HEADERS without END_STREAM", touched)
            return
        # else: trailers, which the OpenAI API does not use
        if flags & END_STREAM:
            self._remote_end(stream)
        touched.append(stream)

    def _stream_error(self, stream: Stream, why: str, touched: list[Stream]) -> None:
        """A malformed response (section 8.1.1): this stream fails, the connection goes on."""
        stream.error = StreamResetError(stream.id, PROTOCOL_ERROR, f"malformed: {why}")
        self.reset(stream, PROTOCOL_ERROR)
        touched.append(stream)

    def _on_settings(self, sid: int, flags: int, payload: bytes) -> None:
        if sid:
            raise _ConnectionError(PROTOCOL_ERROR, f"SETTINGS on stream {sid}")
        if flags & ACK:
            if payload:
                raise _ConnectionError(FRAME_SIZE_ERROR, "SETTINGS ACK with a payload")
            return
        if len(payload) % 6:
            raise _ConnectionError(FRAME_SIZE_ERROR, "SETTINGS length not a multiple of 6")
        for i in range(0, len(payload), 6):
            key, value = _SETTING.unpack_from(payload, i)
            if key == _S_MAX_CONCURRENT_STREAMS:
                self.max_streams = value
            elif key == _S_INITIAL_WINDOW_SIZE:
                if value > _MAX_WINDOW:
                    raise _ConnectionError(FLOW_CONTROL_ERROR, "initial window over 2^31-1")
                delta = value - self.send_initial_window
                self.send_initial_window = value
                for stream in self.streams.values():
                    stream.send_window += delta
                    if stream.send_window > _MAX_WINDOW:
                        raise _ConnectionError(FLOW_CONTROL_ERROR, f"window of stream {stream.id} over 2^31-1")
            elif key == _S_MAX_FRAME_SIZE:
                if not 16384 <= value <= 16777215:
                    raise _ConnectionError(PROTOCOL_ERROR, f"SETTINGS_MAX_FRAME_SIZE {value}")
                self.max_frame_out = value
            elif key == _S_HEADER_TABLE_SIZE:
                self.encoder.set_max_table_size(min(value, 4096))
            elif key == _S_ENABLE_PUSH and value != 0:
                # Section 6.5.2: a server that sends it at all must send 0.
                raise _ConnectionError(PROTOCOL_ERROR, f"SETTINGS_ENABLE_PUSH {value} from a server")
        self.settings_received = True
        self.out += frame(SETTINGS, ACK, 0)

    def _on_window_update(self, sid: int, payload: bytes, touched: list[Stream]) -> None:
        if len(payload) != 4:
            raise _ConnectionError(FRAME_SIZE_ERROR, f"WINDOW_UPDATE of {len(payload)} bytes")
        increment = _U32.unpack(payload)[0] & 0x7FFFFFFF
        if sid == 0:
            if increment == 0:
                raise _ConnectionError(PROTOCOL_ERROR, "WINDOW_UPDATE of 0 on the connection")
            self.send_window += increment
            if self.send_window > _MAX_WINDOW:
                raise _ConnectionError(FLOW_CONTROL_ERROR, "connection window over 2^31-1")
            return
        stream = self._stream_for("WINDOW_UPDATE", sid)
        if stream is None:
            return
        if increment == 0:
            self._stream_error(stream, "WINDOW_UPDATE of 0", touched)
            return
        stream.send_window += increment
        if stream.send_window > _MAX_WINDOW:
            stream.error = StreamResetError(sid, FLOW_CONTROL_ERROR, "stream window over 2^31-1")
            self.reset(stream, FLOW_CONTROL_ERROR)
            touched.append(stream)

    def _on_rst(self, sid: int, payload: bytes, touched: list[Stream]) -> None:
        if len(payload) != 4:
            raise _ConnectionError(FRAME_SIZE_ERROR, f"RST_STREAM of {len(payload)} bytes")
        if self._stream_for("RST_STREAM", sid) is None:
            return
        stream = self.streams.pop(sid)
        code = _U32.unpack(payload)[0]
        stream.local_closed = True
        if stream.ended:
            return  # the server had answered in full and tells us to stop sending (section 8.1)
        # NO_ERROR before END_STREAM is not a complete response either: the answer was cut.
        stream.error = StreamResetError(sid, code, "before the response ended" if code == NO_ERROR else "")
        touched.append(stream)

    def _on_goaway(self, sid: int, payload: bytes, touched: list[Stream]) -> None:
        if sid:
            raise _ConnectionError(PROTOCOL_ERROR, f"GOAWAY on stream {sid}")
        if len(payload) < 8:
            raise _ConnectionError(FRAME_SIZE_ERROR, f"GOAWAY of {len(payload)} bytes")
        self._idle_frame()
        last_id, code = _GOAWAY.unpack_from(payload)
        last_id &= 0x7FFFFFFF
        if self.goaway_last_id is not None:
            last_id = min(last_id, self.goaway_last_id)  # it may only go down (section 6.8)
        self.goaway_last_id = last_id
        logger.debug("server sent GOAWAY (%s, last_stream_id:%d)", code_name(code), last_id)
        # Streams above last_stream_id were not processed (RFC 9113 section 6.8): they fail
        # now and are re-sent at once elsewhere. Streams at or below it may have been
        # processed, so they are never re-sent for free: they are read to their end, and a
        # server that never answers one is the caller's read timeout, as for any request.
        for stream_id in [s for s in self.streams if s > last_id]:
            stream = self.streams.pop(stream_id)
            stream.error = GoAwayError(stream_id, last_id, code)
            touched.append(stream)


# -- shared by the sync and async connections -------------------------------------------------


def request_headers(request: httpx.Request) -> list[tuple[bytes, bytes]]:
    url = request.url
    authority = url.netloc
    headers = [
        (b":method", request.method.encode("ascii")),
        (b":authority", authority),
        (b":scheme", url.scheme.encode("ascii")),
        (b":path", url.raw_path),
    ]
    for name, value in request.headers.raw:
        name = name.lower()
        if name not in _DROPPED_HEADERS:
            headers.append((name, value))
    return headers


def make_response(stream: Stream, body: Any) -> httpx.Response:
    headers = stream.headers or []
    status = int(headers[0][1])
    return httpx.Response(
        status,
        headers=[(n, v) for n, v in headers if not n.startswith(b":")],
        stream=body,
        extensions={"http_version": b"HTTP/2", "stream_id": stream.id},
    )


def _origin(url: httpx.URL) -> tuple[str, int, bool]:
    tls = url.scheme == "https"
    return url.host, url.port or (443 if tls else 80), tls


# -- sync -------------------------------------------------------------------------------------


def connect_sync(url: httpx.URL, ssl_context: ssl.SSLContext, request: httpx.Request,
                 open_tcp: Callable[[str, int, float | None], socket.socket] | None = None) -> SyncConnection:
    """Open a connection (TCP, TLS with ALPN h2 when https) and send the HTTP/2 preface.
    ``open_tcp(host, port, timeout)``, when given, makes the TCP part (a proxy's tunnel)."""
    host, port, tls = _origin(url)
    if tls:
        ssl_context.set_alpn_protocols(["h2", "http/1.1"])
    sock = open_sync(host, port, ssl_context if tls else None, request, open_tcp)
    if tls:
        alpn = cast(ssl.SSLSocket, sock).selected_alpn_protocol()
        if alpn != "h2":
            sock.close()
            raise NotHTTP2(f"{host}:{port} chose {alpn or 'no protocol'} over ALPN")
    conn = SyncConnection(sock)
    conn.state.cleartext = not tls
    conn.start(request_timeout(request, "connect"))
    return conn


class _PoolFacts:
    """What a pool asks of a connection, sync or async."""

    state: H2State

    @property
    def usable(self) -> bool:
        return self.state.usable

    @property
    def idle(self) -> bool:
        return not self.state.streams

    @property
    def closed(self) -> bool:
        return self.state.error is not None


class SyncConnection(_PoolFacts):
    """One HTTP/2 connection used from any number of threads."""

    def __init__(self, sock: socket.socket) -> None:
        self.state = H2State()
        self._sock = sock
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._write_lock = threading.Lock()
        self._reading = False
        self._waiting = 0  # threads waiting on the condition for the reader's news
        self._kernel_timeouts = not isinstance(sock, ssl.SSLSocket) and hasattr(socket, "SO_RCVTIMEO")
        if self._kernel_timeouts:
            sock.settimeout(None)
        self._sock_timeout: float | None = -1.0  # nothing set yet
        self.last_used = time.monotonic()

    def start(self, timeout: float | None) -> None:
        with self._lock:
            self.state.initiate()
        self._flush(timeout)

    # -- what the pool asks ----------------------------------------------------------------------

    def check_idle(self) -> None:
        """An idle connection has nothing to read unless the server closed it or sent GOAWAY
        (or a PING): read what is there without blocking."""
        import select

        with self._lock:
            if self._reading or self.state.streams or self.state.error is not None:
                return
            self._reading = True
        try:
            pending = isinstance(self._sock, ssl.SSLSocket) and self._sock.pending()
            if not pending and not select.select([self._sock], [], [], 0)[0]:
                return
            self._set_timeout(0.05)
            try:
                data = self._sock.recv(_READ_SIZE)
            except (TimeoutError, BlockingIOError, ssl.SSLWantReadError):
                return
            except OSError:
                data = b""
            with self._lock:
                if data:
                    self.state.receive(data)
                else:
                    self.state.connection_lost()
        finally:
            with self._cond:
                self._reading = False
                self._cond.notify_all()
        self._flush(1.0)

    def alive(self, timeout: float) -> bool:
        """PING the server and wait for the ACK (RFC 9113 section 6.7): a connection that sat
        idle may have been dropped silently (a NAT or load balancer forgetting it) and would
        otherwise hang the next call until its read timeout."""
        with self._lock:
            if self.state.error is not None:
                return False
            before = self.state.pings_acked
            self.state.ping()
        probe = Stream(0, 0)  # not registered: only the connection's news can wake it
        try:
            self._flush(timeout)
            self._wait(probe, lambda _: self.state.pings_acked > before, timeout)
        except (httpx.TransportError, OSError):
            return False
        return self.state.error is None

    def close(self) -> None:
        with self._lock:
            self.state.close()
        try:
            self._flush(1.0)
        except Exception:
            pass
        try:
            self._sock.close()
        except OSError:
            pass

    # -- one request ---------------------------------------------------------------------------

    def request(self, request: httpx.Request) -> httpx.Response:
        trace = request.extensions.get("trace")
        body = request.content
        headers = request_headers(request)
        view = memoryview(body)
        with self._lock:
            if not self.state.usable:
                raise self.state.error or httpx.RemoteProtocolError("connection not usable")
            stream = self.state.open_stream(headers, end_stream=not body)
            if body:  # as much of the body as the windows allow goes out with the headers
                view = view[self.state.send_data(stream, view, end_stream=True):]
        self.last_used = time.monotonic()
        if trace:
            trace("http2.send_request_headers.started", {"stream_id": stream.id})
        token = request.extensions.get("llmclient.cancel")
        if token is not None:  # another thread may cancel this request (a hedge that lost)
            token.attach(lambda exc: self._cancel_elsewhere(stream, exc))
        write_timeout = request_timeout(request, "write")
        try:
            self._flush(write_timeout)
            if view:
                self._send_body(stream, view, write_timeout, request_timeout(request, "read"))
        except BaseException:
            self._abandon(stream)
            raise
        if trace:
            trace("http2.send_request_body.complete", {"stream_id": stream.id})
        read_timeout = request_timeout(request, "read")
        try:
            self._wait(stream, _has_headers, read_timeout)
        except BaseException:
            self._abandon(stream)
            raise
        if trace:
            trace("http2.receive_response_headers.complete", {"stream_id": stream.id})
        return make_response(stream, _SyncBody(self, stream, read_timeout))

    def _send_body(self, stream: Stream, view: memoryview, write_timeout: float | None,
                   read_timeout: float | None) -> None:
        """The rest of a body that did not fit the flow-control windows."""
        while view:  # out of window: read until the server grants more
            self._wait(stream, lambda s: (s.send_window > 0 and self.state.send_window > 0) or s.ended,
                       read_timeout or write_timeout)
            if stream.ended:
                return
            with self._lock:
                if stream.error is not None:
                    raise stream.error
                n = self.state.send_data(stream, view, end_stream=True)
            view = view[n:]
            self._flush(write_timeout)

    def _abandon(self, stream: Stream) -> None:
        with self._lock:
            self.state.reset(stream)
        try:
            self._flush(1.0)
        except Exception:
            pass

    # -- I/O -------------------------------------------------------------------------------------

    def _flush(self, timeout: float | None) -> None:
        with self._write_lock:
            with self._lock:
                out = self.state.out
                if not out:
                    return
                data = bytes(out)
                out.clear()
            try:
                self._set_timeout(timeout)
                self._sock.sendall(data)
            except (TimeoutError, BlockingIOError) as exc:
                self._broken(httpx.WriteTimeout("write timed out"))
                raise httpx.WriteTimeout("write timed out") from exc
            except OSError as exc:
                err = httpx.WriteError(str(exc) or type(exc).__name__)
                self._broken(err)
                raise err from exc

    def _set_timeout(self, timeout: float | None) -> None:
        if timeout == self._sock_timeout:
            return
        self._sock_timeout = timeout
        if self._kernel_timeouts:
            # A cleartext socket stays blocking, its timeouts in the kernel (SO_RCVTIMEO,
            # SO_SNDTIMEO): each read is one recv() instead of CPython's poll() + recv(), and a
            # stream reads once per packet. Expiry is EAGAIN (BlockingIOError) -> our timeouts.
            seconds = 0.0 if timeout is None else max(timeout, 1e-3)
            tv = struct.pack("ll", int(seconds), int((seconds % 1) * 1e6))
            self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, tv)
            self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, tv)
        else:  # TLS: the ssl module retries SSL_read on EAGAIN, so it keeps Python's timeouts
            self._sock.settimeout(timeout)

    def _broken(self, exc: Exception) -> None:
        with self._cond:
            self.state.fail(exc)
            self._cond.notify_all()

    def _wait(self, stream: Stream, ready: Callable[[Stream], bool], timeout: float | None) -> None:
        """Until ``ready(stream)``: read the socket for everyone, or wait while another thread
        does. Raises the stream's error, or ReadTimeout."""
        while not self._read_once(stream, ready, timeout):
            pass

    def _read_once(self, stream: Stream, ready: Callable[[Stream], bool], timeout: float | None) -> bool:
        """One step of :meth:`_wait`: True once ready. The lock is taken bare (``with
        self._lock``) on this path, the condition only to wait and to wake waiters: it runs
        once per packet of every stream."""
        lock = self._lock
        with lock:
            if ready(stream):
                return True
            if stream.error is not None:
                raise stream.error
            if self.state.error is not None:
                raise self.state.error
            if self._reading:  # another thread reads for us: wait for its news
                self._waiting += 1
                try:
                    if not self._cond.wait(timeout):
                        self.state.stale = True
                        raise httpx.ReadTimeout("read timed out")
                finally:
                    self._waiting -= 1
                return False
            self._reading = True
        error: Exception | None = None
        data = b""
        try:
            # httpx's read timeout bounds each wait for bytes, not the whole response.
            if timeout != self._sock_timeout:
                self._set_timeout(timeout)
            data = self._sock.recv(_READ_SIZE)
        except (TimeoutError, BlockingIOError):
            error = httpx.ReadTimeout("read timed out")
        except OSError as exc:
            text = str(exc) or type(exc).__name__
            with lock:
                self.state.connection_lost(
                    f"Connection reset: {text}" if isinstance(exc, ConnectionResetError) else text)
        except BaseException:
            with lock:
                self._reading = False
                if self._waiting:
                    self._cond.notify_all()
            raise
        with lock:
            self._reading = False
            if error is not None:
                # A connection that kept us waiting a whole read timeout takes no new streams
                # (the next call would likely wait too); its other streams go on.
                self.state.stale = True
            elif data:
                self.state.receive(data)
            else:
                self.state.connection_lost()
            if self._waiting:
                self._cond.notify_all()
            out = bool(self.state.out)
        if out:
            self._flush(1.0 if timeout is None else timeout)
        if error is not None:
            raise error
        return False

    def read_some(self, stream: Stream, timeout: float | None) -> list[bytes]:
        """The data the stream has (waiting for some); [] at its end."""
        while True:
            with self._lock:
                chunks = stream.data
                if chunks:
                    stream.data = []
                    state = self.state
                    state.consumed(stream, sum(map(len, chunks)))
                    out = bool(state.out)
                elif stream.ended:
                    return []
            if chunks:
                if out:
                    self._flush(timeout)
                return chunks
            self._read_once(stream, _has_data_or_end, timeout)

    def _cancel_elsewhere(self, stream: Stream, exc: Exception) -> None:
        """From another thread: fail ``stream`` with ``exc`` and reset it. The thread waiting on
        it wakes (a PING goes with the RST_STREAM, so a thread blocked reading the socket for
        everyone gets bytes to return with) and raises ``exc``."""
        with self._lock:
            if stream.ended and stream.id not in self.state.streams:
                return
            if stream.error is None:
                stream.error = exc
            self.state.reset(stream)
            self.state.ping()
            if self._waiting:
                self._cond.notify_all()
        try:
            self._flush(1.0)
        except Exception as err:
            logger.debug("RST_STREAM not sent: %r", err)

    def cancel(self, stream: Stream) -> None:
        with self._lock:
            if stream.ended and stream.id not in self.state.streams:
                return
            self.state.reset(stream)
        try:
            self._flush(1.0)
        except Exception as exc:
            logger.debug("RST_STREAM not sent: %r", exc)


def _has_headers(stream: Stream) -> bool:
    return stream.headers is not None


def _has_data_or_end(stream: Stream) -> bool:
    return bool(stream.data) or stream.ended


class _SyncBody(httpx.SyncByteStream):
    def __init__(self, conn: SyncConnection, stream: Stream, timeout: float | None) -> None:
        self._conn = conn
        self._stream = stream
        self._timeout = timeout
        self._done = False

    def __iter__(self) -> Iterator[bytes]:
        conn, stream, timeout = self._conn, self._stream, self._timeout
        while True:
            chunks = conn.read_some(stream, timeout)
            if not chunks:
                self._done = True
                return
            # What arrived together is handed on together: one decode pass, not one per frame.
            yield chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def close(self) -> None:
        if not self._done:
            self._done = True
            self._conn.cancel(self._stream)


# -- async ------------------------------------------------------------------------------------


async def connect_async(url: httpx.URL, ssl_context: ssl.SSLContext, request: httpx.Request,
                        open_tcp: Any = None) -> AsyncConnection:
    """See :func:`connect_sync`; ``await open_tcp(host, port, protocol_factory)`` makes the
    TCP part when given."""
    host, port, tls = _origin(url)
    if tls:
        ssl_context.set_alpn_protocols(["h2", "http/1.1"])
    transport, protocol = await open_async(host, port, ssl_context if tls else None, request,
                                           _new_protocol, open_tcp)
    proto = cast(AsyncConnection, protocol)
    if tls:
        ssl_object = transport.get_extra_info("ssl_object")
        alpn = ssl_object.selected_alpn_protocol() if ssl_object is not None else None
        if alpn != "h2":
            transport.close()
            raise NotHTTP2(f"{host}:{port} chose {alpn or 'no protocol'} over ALPN")
    proto.state.cleartext = not tls
    proto.start()
    return proto


def _new_protocol() -> asyncio.Protocol:
    # AsyncConnection has the asyncio.Protocol methods without subclassing it: this module is
    # imported by every client, and most never import asyncio.
    return cast("asyncio.Protocol", AsyncConnection())


class AsyncConnection(_PoolFacts):
    """One HTTP/2 connection on the running event loop (an asyncio Protocol)."""

    def __init__(self) -> None:
        import asyncio

        self.state = H2State()
        self.transport: Any = None
        self._loop = asyncio.get_running_loop()
        self._window_waiters: list[asyncio.Future[None]] = []
        self._drain: asyncio.Future[None] | None = None
        self.last_used = time.monotonic()
        # Until start(): bytes that came with the end of the TLS handshake (a server's SETTINGS
        # often do), held so that nothing is answered before the preface, nor on the TCP
        # transport underneath TLS.
        self._early: list[bytes] | None = []
        self._control_backlog = 0  # replies (PING/SETTINGS ACKs) queued while the peer won't read

    # asyncio.Protocol ----------------------------------------------------------------------------

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        if self._early is not None:
            self._early.append(data)
            return
        state = self.state
        touched = state.receive(data)
        if state.out:
            if self._drain is not None and not self._drain.done():
                self._control_backlog += len(state.out)
                if self._control_backlog > MAX_CONTROL_BACKLOG:
                    touched += state.fail(PeerProtocolError(
                        ENHANCE_YOUR_CALM, f"{self._control_backlog} bytes of replies queued "
                                           "while the server does not read"))
                    state.out.clear()
                    self.transport.abort()
            self._flush()
        for stream in touched:
            self._wake(stream)
        if self._window_waiters:  # body senders waiting for credit, PING probes: news
            waiters, self._window_waiters = self._window_waiters, []
            for fut in waiters:
                if not fut.done():
                    fut.set_result(None)
        if state.error is not None:
            self._wake_all()

    def eof_received(self) -> bool:
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        if isinstance(exc, ConnectionResetError):
            failed = self.state.connection_lost(f"Connection reset: {exc}")
        elif exc is not None:
            failed = self.state.connection_lost(f"Connection lost: {exc}")
        else:
            failed = self.state.connection_lost()
        for stream in failed:
            self._wake(stream)
        self._wake_all()
        if self._drain is not None and not self._drain.done():
            self._drain.set_result(None)

    def pause_writing(self) -> None:
        if self._drain is None or self._drain.done():
            self._drain = self._loop.create_future()

    def resume_writing(self) -> None:
        self._control_backlog = 0
        if self._drain is not None and not self._drain.done():
            self._drain.set_result(None)

    # -- what the pool asks ----------------------------------------------------------------------

    def start(self) -> None:
        """Send the preface; then read what arrived before it (the handshake is complete and
        ``transport`` is the TLS one by now)."""
        early, self._early = self._early, None
        self.state.initiate()
        self._flush()
        if early:
            self.data_received(b"".join(early))

    def check_idle(self) -> None:
        """Nothing to do: the event loop already fed us whatever the server sent."""

    async def alive(self, timeout: float) -> bool:
        """See :meth:`SyncConnection.alive`."""
        state = self.state
        if state.error is not None:
            return False
        before = state.pings_acked
        state.ping()
        self._flush()
        deadline = time.monotonic() + timeout
        while state.pings_acked <= before and state.error is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            fut = self._loop.create_future()
            self._window_waiters.append(fut)  # woken by any frame (and by connection loss)
            try:
                await self._until(fut, remaining, httpx.ReadTimeout)
            except httpx.ReadTimeout:
                return False
        return state.error is None

    async def aclose(self) -> None:
        self.state.close()
        self._flush()
        if self.transport is not None:
            self.transport.close()

    # -- one request -----------------------------------------------------------------------------

    async def request(self, request: httpx.Request) -> httpx.Response:
        trace = request.extensions.get("trace")
        body = request.content
        state = self.state
        if not state.usable:
            raise state.error or httpx.RemoteProtocolError("connection not usable")
        stream = state.open_stream(request_headers(request), end_stream=not body)
        view = memoryview(body)
        if body:  # as much of the body as the windows allow goes out with the headers
            view = view[state.send_data(stream, view, end_stream=True):]
        self.last_used = time.monotonic()
        if trace:
            await trace("http2.send_request_headers.started", {"stream_id": stream.id})
        token = request.extensions.get("llmclient.cancel")
        if token is not None:  # a hedged copy that may lose its race (on this loop)
            token.attach(lambda exc: self._cancel_elsewhere(stream, exc))
        read_timeout = request_timeout(request, "read")
        try:
            self._flush()
            if view or (self._drain is not None and not self._drain.done()):
                await self._send_body(stream, view, request_timeout(request, "write"))
            if trace:
                await trace("http2.send_request_body.complete", {"stream_id": stream.id})
            while stream.headers is None:
                if stream.error is not None:
                    raise stream.error
                await self._wait(stream, read_timeout)
        except BaseException:
            self.cancel(stream)
            raise
        if trace:
            await trace("http2.receive_response_headers.complete", {"stream_id": stream.id})
        return make_response(stream, _AsyncBody(self, stream, read_timeout))

    async def _send_body(self, stream: Stream, view: memoryview, timeout: float | None) -> None:
        """The rest of a body that did not fit the flow-control windows."""
        while view:
            if self._drain is not None and not self._drain.done():
                await self._wait_drain(timeout)
            if stream.ended:
                return
            if stream.error is not None:
                raise stream.error
            n = self.state.send_data(stream, view, end_stream=True)
            view = view[n:]
            self._flush()
            if view and n == 0:
                fut = self._loop.create_future()
                self._window_waiters.append(fut)
                await self._until(fut, timeout, httpx.WriteTimeout)
        if self._drain is not None and not self._drain.done():
            await self._wait_drain(timeout)

    async def _wait_drain(self, timeout: float | None) -> None:
        assert self._drain is not None
        await self._until(self._drain, timeout, httpx.WriteTimeout)
        if self.state.error is not None:
            raise self.state.error

    async def _wait(self, stream: Stream, timeout: float | None) -> None:
        fut = stream.waiter
        if fut is None or fut.done():
            fut = stream.waiter = self._loop.create_future()
        await self._until(fut, timeout, httpx.ReadTimeout)

    async def _until(self, fut: Any, timeout: float | None, exc: type[httpx.TimeoutException]) -> None:
        if timeout is None:
            await fut
            return
        handle = self._loop.call_later(timeout, _expire, fut, exc)
        try:
            await fut
        except httpx.ReadTimeout:
            self.state.stale = True  # see SyncConnection._read_once
            raise
        finally:
            handle.cancel()

    def _wake(self, stream: Stream) -> None:
        fut = stream.waiter
        if fut is not None and not fut.done():
            fut.set_result(None)

    def _wake_all(self) -> None:
        waiters, self._window_waiters = self._window_waiters, []
        for fut in waiters:
            if not fut.done():
                fut.set_result(None)

    def _flush(self) -> None:
        out = self.state.out
        if out and self.transport is not None and not self.transport.is_closing():
            self.transport.write(bytes(out))
        out.clear()

    async def read_some(self, stream: Stream, timeout: float | None) -> list[bytes]:
        while True:
            chunks = stream.data
            if chunks:
                stream.data = []
                self.state.consumed(stream, sum(map(len, chunks)))
                if self.state.out:
                    self._flush()
                return chunks
            if stream.ended:
                return []
            if stream.error is not None:
                raise stream.error
            await self._wait(stream, timeout)

    def cancel(self, stream: Stream) -> None:
        if stream.ended and stream.id not in self.state.streams:
            return
        self.state.reset(stream)
        self._flush()

    def _cancel_elsewhere(self, stream: Stream, exc: Exception) -> None:
        """From a callback on this loop: fail ``stream`` with ``exc`` (the task waiting on it
        wakes and raises it) and reset it."""
        if stream.ended and stream.id not in self.state.streams:
            return
        if stream.error is None:
            stream.error = exc
        self.cancel(stream)
        self._wake(stream)


def _expire(fut: Any, exc: type[httpx.TimeoutException]) -> None:
    if not fut.done():
        fut.set_exception(exc("read timed out" if exc is httpx.ReadTimeout else "write timed out"))


class _AsyncBody(httpx.AsyncByteStream):
    def __init__(self, conn: AsyncConnection, stream: Stream, timeout: float | None) -> None:
        self._conn = conn
        self._stream = stream
        self._timeout = timeout
        self._done = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        conn, stream, timeout = self._conn, self._stream, self._timeout
        while True:
            chunks = await conn.read_some(stream, timeout)
            if not chunks:
                self._done = True
                return
            yield chunks[0] if len(chunks) == 1 else b"".join(chunks)

    async def aclose(self) -> None:
        self.abandon()

    def abandon(self) -> None:
        if not self._done:
            self._done = True
            self._conn.cancel(self._stream)
