"""The HTTP/2 protocol as plain state (RFC 9113), client side: bytes in, events and frames out.

:class:`H2State` holds a connection's streams, windows, settings and HPACK tables. A driver
hands it the bytes it read (:meth:`H2State.receive`) and gets back the typed events they caused
(:mod:`.events`); whatever must go to the server (requests, acknowledgements, window updates,
resets) is appended to ``H2State.out`` for the driver to write. Nothing here does I/O, keeps
time or knows who is waiting: no sockets, no threads, no event loop, no httpx (a test holds
the module to that), so the same state runs under the sync and the async driver and is tested
frame by frame.

The peer is held to the protocol as h2 holds it: frame sizes, flow-control windows both ways,
stream states, caps on frames that carry nothing (CVE-2019-9518, CVE-2019-9512,
CVE-2024-27316) and on header blocks split into CONTINUATION frames. A connection error sends
GOAWAY(code) and fails every open stream at once; a malformed response fails its stream only.
Failures are the typed errors of :mod:`.errors`.
"""

from __future__ import annotations

import struct
from typing import Final

from ..._logging import logger
from .errors import (
    ConnectionLost,
    GoAwayError,
    NotHTTP2,
    PeerProtocolError,
    StreamCancelled,
    StreamResetError,
)
from .events import (
    ConnectionFailed,
    ConnectionTerminated,
    DataReceived,
    Event,
    InformationalResponseReceived,
    PingAcknowledged,
    PingReceived,
    ResponseReceived,
    SettingsAcknowledged,
    SettingsReceived,
    StreamEnded,
    StreamFailed,
    StreamReset,
    TrailersReceived,
    WindowUpdated,
)
from .frames import (
    ACK,
    CANCEL,
    COMPRESSION_ERROR,
    CONTINUATION,
    DATA,
    END_HEADERS,
    END_STREAM,
    ENHANCE_YOUR_CALM,
    FLOW_CONTROL_ERROR,
    FRAME_HEADER,
    FRAME_SIZE_ERROR,
    GOAWAY,
    HEADERS,
    NO_ERROR,
    PADDED,
    PING,
    PREFACE,
    PRIORITY,
    PRIORITY_FLAG,
    PROTOCOL_ERROR,
    PUSH_PROMISE,
    RST_STREAM,
    S_ENABLE_PUSH,
    S_HEADER_TABLE_SIZE,
    S_INITIAL_WINDOW_SIZE,
    S_MAX_CONCURRENT_STREAMS,
    S_MAX_FRAME_SIZE,
    S_MAX_HEADER_LIST_SIZE,
    SETTINGS,
    STREAM_CLOSED,
    WINDOW_UPDATE,
    code_name,
    frame,
)
from .hpack import Decoder, Encoder, HPACKError

__all__ = [
    "CONNECTION_WINDOW", "MAX_CONTINUATIONS", "MAX_FRAME_IN", "MAX_HEADER_LIST", "MAX_IDLE_FRAMES",
    "STREAM_WINDOW", "H2State", "Stream",
]

STREAM_WINDOW: Final = 4 * 1024 * 1024  # what each response may send before we read it
CONNECTION_WINDOW: Final = 16 * 1024 * 1024
MAX_HEADER_LIST: Final = 256 * 1024
MAX_FRAME_IN: Final = 16384  # we never raise SETTINGS_MAX_FRAME_SIZE from its default
# Frames that carry nothing forward (empty DATA, empty CONTINUATION, PING, SETTINGS, PRIORITY,
# unknown types) allowed in a row before the peer is told to calm down: a flood of them would
# otherwise re-arm the read timeout forever (CVE-2019-9518, CVE-2019-9512, CVE-2024-27316).
MAX_IDLE_FRAMES: Final = 1000
MAX_CONTINUATIONS: Final = 64  # per header block: 64 x 16 KiB is past MAX_HEADER_LIST anyway
_DEFAULT_WINDOW: Final = 65535
_MAX_WINDOW: Final = 2**31 - 1

_U32 = struct.Struct(">I")
_SETTING = struct.Struct(">HI")
_GOAWAY = struct.Struct(">II")


class _ConnectionError(Exception):
    """Raised inside :meth:`H2State.receive`: GOAWAY(code), then every stream fails."""

    def __init__(self, code: int, why: str) -> None:
        super().__init__(why)
        self.code = code


class Stream:
    """One request/response exchange on a connection: what the server sent so far (``headers``,
    ``data`` not yet read, ``ended``) or the ``error`` it ended with, and its two windows."""

    __slots__ = (
        "data", "ended", "error", "headers", "id", "local_closed", "recv_window", "send_window",
        "unacked",
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


class H2State:
    """Client-side HTTP/2 state: bytes in, frames out (``out``), no I/O, not thread-safe.

    Every failure is one of :mod:`.errors`; :meth:`receive`, :meth:`fail` and
    :meth:`connection_lost` return the events they caused, a :class:`~.events.StreamFailed` for
    every stream a connection error failed included, so a driver wakes each stream's reader."""

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
            (S_ENABLE_PUSH, 0),
            (S_MAX_CONCURRENT_STREAMS, 100),
            (S_INITIAL_WINDOW_SIZE, STREAM_WINDOW),
            (S_MAX_HEADER_LIST_SIZE, MAX_HEADER_LIST),
        ))
        self.out += PREFACE + frame(SETTINGS, 0, 0, settings)
        self.out += frame(WINDOW_UPDATE, 0, 0, _U32.pack(CONNECTION_WINDOW - _DEFAULT_WINDOW))

    @property
    def usable(self) -> bool:
        """New streams may start here."""
        return (self.error is None and self.goaway_last_id is None and not self.stale
                and self.next_id < _MAX_WINDOW and len(self.streams) < self.max_streams)

    def unusable_reason(self) -> str | None:
        """Why no new stream may start here (None: one may); asked only once :attr:`usable`
        said no, to name the cause in :class:`~.errors.ConnectionUnusable`."""
        if self.error is not None:
            return "closed"
        if self.goaway_last_id is not None:
            return "goaway"
        if self.stale:
            return "stale"
        if self.next_id >= _MAX_WINDOW:
            return "stream ids exhausted"
        if len(self.streams) >= self.max_streams:
            return "max_streams"
        return None

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
            stream.error = StreamCancelled(stream.id)

    def ping(self, payload: bytes = b"\0" * 8) -> None:
        self.out += frame(PING, 0, 0, payload)

    def close(self) -> list[Event]:
        """GOAWAY(NO_ERROR): we are done with the connection; its open streams fail."""
        if self.error is None:
            self.out += frame(GOAWAY, 0, 0, _GOAWAY.pack(0, NO_ERROR))
            return self.fail(ConnectionLost("connection closed by the client"))
        return []

    # -- what we receive -----------------------------------------------------------------------

    def receive(self, data: bytes) -> list[Event]:
        """Parse what arrived (any number of bytes: a frame cut short waits for the rest); the
        events it caused, in order."""
        if self.error is not None:
            return []
        if self._inbuf:
            data = self._inbuf + data
            self._inbuf = b""
        events: list[Event] = []
        pos, n = 0, len(data)
        unpack = FRAME_HEADER.unpack_from
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
                self._on_frame(ftype, flags, sid, payload, events)
        except _ConnectionError as exc:
            self.out += frame(GOAWAY, 0, 0, _GOAWAY.pack(0, exc.code) + str(exc).encode()[:200])
            events += self.fail(PeerProtocolError(exc.code, str(exc)))
            return events
        except NotHTTP2 as exc:
            events += self.fail(exc)
            return events
        except HPACKError as exc:
            self.out += frame(GOAWAY, 0, 0, _GOAWAY.pack(0, COMPRESSION_ERROR))
            events += self.fail(PeerProtocolError(COMPRESSION_ERROR, f"header block: {exc}"))
            return events
        if pos < n:
            self._inbuf = bytes(data[pos:])
        return events

    def _on_frame(self, ftype: int, flags: int, sid: int, payload: bytes, events: list[Event]) -> None:
        if self._header_block is not None and ftype != CONTINUATION:
            raise _ConnectionError(PROTOCOL_ERROR, "expected CONTINUATION")
        if ftype == DATA:
            self._on_data(sid, flags, payload, events)
        elif ftype == HEADERS:
            self._on_headers(sid, flags, payload, events)
        elif ftype == CONTINUATION:
            self._on_continuation(sid, flags, payload, events)
        elif ftype == SETTINGS:
            self._idle_frame()
            self._on_settings(sid, flags, payload, events)
        elif ftype == WINDOW_UPDATE:
            self._on_window_update(sid, payload, events)
        elif ftype == PING:
            self._idle_frame()
            if sid:
                raise _ConnectionError(PROTOCOL_ERROR, f"PING on stream {sid}")
            if len(payload) != 8:
                raise _ConnectionError(FRAME_SIZE_ERROR, f"PING of {len(payload)} bytes")
            if flags & ACK:
                self.pings_acked += 1
                events.append(PingAcknowledged(bytes(payload)))
            else:
                self.out += frame(PING, ACK, 0, payload)
                events.append(PingReceived(bytes(payload)))
        elif ftype == RST_STREAM:
            self._on_rst(sid, payload, events)
        elif ftype == GOAWAY:
            self._on_goaway(sid, payload, events)
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

    def connection_lost(self, why: str = "Server disconnected without sending a response.") -> list[Event]:
        """The socket closed or broke; the events this causes (see :meth:`fail`)."""
        if self.error is not None:
            return []
        if self.cleartext and not self.settings_received and not self._inbuf:
            # h2c: a server that speaks HTTP/2 sends SETTINGS first, before it reads a request
            # (section 3.4); one that closes on our preface without a byte does not speak it.
            return self.fail(NotHTTP2(f"the server closed the connection on the h2c preface ({why})"))
        if self.goaway_last_id is not None:
            why = f"{why} (after GOAWAY, last_stream_id:{self.goaway_last_id})"
        return self.fail(ConnectionLost(why))

    def fail(self, exc: Exception) -> list[Event]:
        """The connection is over: every open stream gets ``exc`` (streams already ended keep
        their data). A :class:`~.events.StreamFailed` for each stream failed here, then
        :class:`~.events.ConnectionFailed` (only the first time: the first error stays)."""
        events: list[Event] = []
        for stream in self.streams.values():
            if stream.error is None and not stream.ended:
                stream.error = exc
                events.append(StreamFailed(stream.id, exc))
        self.streams.clear()
        if self.error is None:
            self.error = exc
            events.append(ConnectionFailed(exc))
        return events

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

    def _on_data(self, sid: int, flags: int, payload: bytes, events: list[Event]) -> None:
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
            events.append(DataReceived(sid, body, size))
        if flags & END_STREAM:
            self._remote_end(stream)
            events.append(StreamEnded(sid))

    def _maybe_credit_connection(self) -> None:
        if self.recv_unacked >= CONNECTION_WINDOW // 2:
            self.out += frame(WINDOW_UPDATE, 0, 0, _U32.pack(self.recv_unacked))
            self.recv_window += self.recv_unacked
            self.recv_unacked = 0

    def _remote_end(self, stream: Stream) -> None:
        stream.ended = True
        if stream.local_closed:
            self.streams.pop(stream.id, None)

    def _on_headers(self, sid: int, flags: int, payload: bytes, events: list[Event]) -> None:
        self._stream_for("HEADERS", sid)
        if flags & PADDED:
            payload = self._unpad(flags, payload)
        if flags & PRIORITY_FLAG:
            if len(payload) < 5:
                raise _ConnectionError(FRAME_SIZE_ERROR, "HEADERS too short for its priority")
            payload = payload[5:]
        if flags & END_HEADERS:
            self._headers_done(sid, flags, payload, events)
        else:
            self._header_block = (sid, flags, bytearray(payload), [0])

    def _on_continuation(self, sid: int, flags: int, payload: bytes, events: list[Event]) -> None:
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
            self._headers_done(sid, block[1], bytes(block[2]), events)

    def _headers_done(self, sid: int, flags: int, block: bytes, events: list[Event]) -> None:
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
                                               "with END_STREAM", events)
                else:  # the real response follows
                    events.append(InformationalResponseReceived(sid, headers))
                return
            if len(status) != 3 or not status.isdigit():
                self._stream_error(stream, "response has no valid :status", events)
                return
            if any(name[:1] == b":" for name, _ in headers[1:]):  # section 8.3: :status once, first
                self._stream_error(stream, "a pseudo-header after :status", events)
                return
            stream.headers = headers
            events.append(ResponseReceived(sid, headers))
        elif not flags & END_STREAM:  # section 8.1: trailers must end the stream
            self._stream_error(stream, "second HEADERS without END_STREAM", events)
            return
        else:  # trailers, which the OpenAI API does not use
            events.append(TrailersReceived(sid, headers))
        if flags & END_STREAM:
            self._remote_end(stream)
            events.append(StreamEnded(sid))

    def _stream_error(self, stream: Stream, why: str, events: list[Event]) -> None:
        """A malformed response (section 8.1.1): this stream fails, the connection goes on."""
        stream.error = StreamResetError(stream.id, PROTOCOL_ERROR, f"malformed: {why}")
        self.reset(stream, PROTOCOL_ERROR)
        events.append(StreamFailed(stream.id, stream.error))

    def _on_settings(self, sid: int, flags: int, payload: bytes, events: list[Event]) -> None:
        if sid:
            raise _ConnectionError(PROTOCOL_ERROR, f"SETTINGS on stream {sid}")
        if flags & ACK:
            if payload:
                raise _ConnectionError(FRAME_SIZE_ERROR, "SETTINGS ACK with a payload")
            events.append(SettingsAcknowledged())
            return
        if len(payload) % 6:
            raise _ConnectionError(FRAME_SIZE_ERROR, "SETTINGS length not a multiple of 6")
        changed: dict[int, int] = {}
        for i in range(0, len(payload), 6):
            key, value = _SETTING.unpack_from(payload, i)
            changed[key] = value
            if key == S_MAX_CONCURRENT_STREAMS:
                self.max_streams = value
            elif key == S_INITIAL_WINDOW_SIZE:
                if value > _MAX_WINDOW:
                    raise _ConnectionError(FLOW_CONTROL_ERROR, "initial window over 2^31-1")
                delta = value - self.send_initial_window
                self.send_initial_window = value
                for stream in self.streams.values():
                    stream.send_window += delta
                    if stream.send_window > _MAX_WINDOW:
                        raise _ConnectionError(FLOW_CONTROL_ERROR, f"window of stream {stream.id} over 2^31-1")
            elif key == S_MAX_FRAME_SIZE:
                if not 16384 <= value <= 16777215:
                    raise _ConnectionError(PROTOCOL_ERROR, f"SETTINGS_MAX_FRAME_SIZE {value}")
                self.max_frame_out = value
            elif key == S_HEADER_TABLE_SIZE:
                self.encoder.set_max_table_size(min(value, 4096))
            elif key == S_ENABLE_PUSH and value != 0:
                # Section 6.5.2: a server that sends it at all must send 0.
                raise _ConnectionError(PROTOCOL_ERROR, f"SETTINGS_ENABLE_PUSH {value} from a server")
        self.settings_received = True
        self.out += frame(SETTINGS, ACK, 0)
        events.append(SettingsReceived(changed))

    def _on_window_update(self, sid: int, payload: bytes, events: list[Event]) -> None:
        if len(payload) != 4:
            raise _ConnectionError(FRAME_SIZE_ERROR, f"WINDOW_UPDATE of {len(payload)} bytes")
        increment = _U32.unpack(payload)[0] & 0x7FFFFFFF
        if sid == 0:
            if increment == 0:
                raise _ConnectionError(PROTOCOL_ERROR, "WINDOW_UPDATE of 0 on the connection")
            self.send_window += increment
            if self.send_window > _MAX_WINDOW:
                raise _ConnectionError(FLOW_CONTROL_ERROR, "connection window over 2^31-1")
            events.append(WindowUpdated(0, increment))
            return
        stream = self._stream_for("WINDOW_UPDATE", sid)
        if stream is None:
            return
        if increment == 0:
            self._stream_error(stream, "WINDOW_UPDATE of 0", events)
            return
        stream.send_window += increment
        if stream.send_window > _MAX_WINDOW:
            stream.error = StreamResetError(sid, FLOW_CONTROL_ERROR, "stream window over 2^31-1")
            self.reset(stream, FLOW_CONTROL_ERROR)
            events.append(StreamFailed(sid, stream.error))
        else:
            events.append(WindowUpdated(sid, increment))

    def _on_rst(self, sid: int, payload: bytes, events: list[Event]) -> None:
        if len(payload) != 4:
            raise _ConnectionError(FRAME_SIZE_ERROR, f"RST_STREAM of {len(payload)} bytes")
        if self._stream_for("RST_STREAM", sid) is None:
            return
        stream = self.streams.pop(sid)
        code = _U32.unpack(payload)[0]
        stream.local_closed = True
        events.append(StreamReset(sid, code))
        if stream.ended:
            return  # the server had answered in full and tells us to stop sending (section 8.1)
        # NO_ERROR before END_STREAM is not a complete response either: the answer was cut.
        stream.error = StreamResetError(sid, code, "before the response ended" if code == NO_ERROR else "")
        events.append(StreamFailed(sid, stream.error))

    def _on_goaway(self, sid: int, payload: bytes, events: list[Event]) -> None:
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
        events.append(ConnectionTerminated(code, last_id, bytes(payload[8:])))
        logger.debug("server sent GOAWAY (%s, last_stream_id:%d)", code_name(code), last_id)
        # Streams above last_stream_id were not processed (RFC 9113 section 6.8): they fail
        # now and are re-sent at once elsewhere. Streams at or below it may have been
        # processed, so they are never re-sent for free: they are read to their end, and a
        # server that never answers one is the caller's read timeout, as for any request.
        for stream_id in [s for s in self.streams if s > last_id]:
            stream = self.streams.pop(stream_id)
            stream.error = GoAwayError(stream_id, last_id, code)
            events.append(StreamFailed(stream_id, stream.error))

