"""Our HTTP/2 protocol state and HPACK, without sockets: frames in, frames out.

The same code runs against real servers (granian, hypercorn) in test_ref_server.py and
test_client_fake.py; here each rule of RFC 9113 / RFC 7541 we rely on is pinned on its own,
and HPACK is checked both ways against the ``hpack`` package (an independent implementation).
"""

from __future__ import annotations

import struct

import hpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmclient._redact import SECRET_HEADERS
from llmclient.transport.http2.errors import (
    ConnectionLost,
    GoAwayError,
    NotHTTP2,
    PeerProtocolError,
    StreamResetError,
)
from llmclient.transport.http2.events import (
    ConnectionFailed,
    ConnectionTerminated,
    DataReceived,
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
from llmclient.transport.http2.frames import (
    ACK,
    CONTINUATION,
    DATA,
    END_HEADERS,
    END_STREAM,
    GOAWAY,
    HEADERS,
    PADDED,
    PING,
    PREFACE,
    PRIORITY,
    PUSH_PROMISE,
    RST_STREAM,
    SETTINGS,
    WINDOW_UPDATE,
    frame,
)
from llmclient.transport.http2.hpack import Decoder, Encoder, HPACKError
from llmclient.transport.http2.state import (
    MAX_IDLE_FRAMES,
    STREAM_WINDOW,
    H2State,
    Stream,
)

# -- HPACK ------------------------------------------------------------------------------------

_token = st.binary(min_size=1, max_size=12).map(lambda b: bytes(c % 26 + 97 for c in b))
_header = st.tuples(
    st.one_of(st.sampled_from([b"content-type", b"authorization", b"traceparent", b"x-request-id",
                               b"content-length", b":path", b"user-agent"]), _token),
    st.binary(max_size=80),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(_header, max_size=14), min_size=1, max_size=12), st.sampled_from([4096, 256, 0]))
def test_our_encoder_decodes_with_the_hpack_package(blocks: list[list[tuple[bytes, bytes]]], size: int) -> None:
    enc, ref = Encoder(), hpack.Decoder()
    for i, headers in enumerate(blocks):
        if i == len(blocks) // 2:
            enc.set_max_table_size(size)  # a SETTINGS_HEADER_TABLE_SIZE change mid-connection
        assert [tuple(h) for h in ref.decode(enc.encode(headers), raw=True)] == headers


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(_header, max_size=14), min_size=1, max_size=12))
def test_our_decoder_reads_the_hpack_package(blocks: list[list[tuple[bytes, bytes]]]) -> None:
    ref, dec = hpack.Encoder(), Decoder()
    ref.header_table_size = 4096
    for headers in blocks:
        assert dec.decode(ref.encode(headers, huffman=True)) == headers


def test_repeated_headers_become_one_byte_and_credentials_are_never_indexed() -> None:
    enc = Encoder()
    headers = [(b"user-agent", b"llmclient/1"), (b"authorization", b"Bearer sk-secret")]
    first, second = enc.encode(headers), enc.encode(headers)
    assert len(second) < len(first)
    assert second[0] == 0x80 | 62  # user-agent now in the dynamic table
    assert b"sk-secret" in second  # ... the key is sent literally, flagged never-indexed
    ref = hpack.Decoder()
    ref.decode(first, raw=True)
    decoded = ref.decode(second, raw=True)
    assert decoded[1].indexable is False
    assert ref.header_table.dynamic_entries.__len__() == 1


def test_varying_values_do_not_churn_the_table() -> None:
    enc = Encoder()
    for i in range(500):
        enc.encode([(b"x-request-id", f"{i:032x}".encode())])
    assert len(enc._entries) == 1


@pytest.mark.parametrize("block, why", [
    (b"\xbf", "out of range"),  # index 62 with an empty dynamic table
    (b"\x40\x85ab", "past the end"),  # literal name of 5 bytes, only 2 there
    (b"\x3f\xe2\x1f", "over our limit"),  # table size update to 4097
    (b"\x00\x81\xff\x00", "Huffman"),  # a Huffman string that is all EOS padding
])
def test_decoder_refuses_bad_blocks(block: bytes, why: str) -> None:
    with pytest.raises(HPACKError, match=why):
        Decoder(max_table_size=4096).decode(block)


def test_decoder_caps_the_header_list() -> None:
    enc = hpack.Encoder()
    block = enc.encode([(b"x-big", b"v" * 5000)])
    with pytest.raises(HPACKError, match="header list"):
        Decoder(max_header_list_size=1024).decode(block)


# -- frames -----------------------------------------------------------------------------------


def _frames(data: bytes) -> list[tuple[int, int, int, bytes]]:
    out, pos = [], 0
    while pos < len(data):
        hi, lo, t, f, sid = struct.unpack_from(">BHBBI", data, pos)
        n = (hi << 16) | lo
        out.append((t, f, sid, data[pos + 9:pos + 9 + n]))
        pos += 9 + n
    return out


def _ready(**settings_values: int) -> H2State:
    state = H2State()
    state.initiate()
    assert bytes(state.out).startswith(PREFACE)
    state.out.clear()
    payload = b"".join(struct.pack(">HI", k, v) for k, v in {
        3: settings_values.get("max_streams", 100), 4: settings_values.get("window", 65535),
    }.items())
    state.receive(frame(SETTINGS, 0, 0, payload))
    assert _frames(bytes(state.out)) == [(SETTINGS, ACK, 0, b"")]
    state.out.clear()
    return state


def _response_headers(status: bytes = b"200", **extra: bytes) -> bytes:
    return hpack.Encoder().encode([(b":status", status), *extra.items()])


def test_a_request_and_its_response() -> None:
    state = _ready()
    s = state.open_stream([(b":method", b"GET"), (b":path", b"/v1/models")], end_stream=True)
    (t, f, sid, _), = _frames(bytes(state.out))
    assert (t, f & (END_STREAM | END_HEADERS), sid) == (HEADERS, END_STREAM | END_HEADERS, 1)
    events = state.receive(frame(HEADERS, END_HEADERS, 1, _response_headers()) + frame(DATA, 0, 1, b"ab")
                           + frame(DATA, END_STREAM, 1, b"cd"))
    assert events == [ResponseReceived(1, [(b":status", b"200")]), DataReceived(1, b"ab", 2),
                      DataReceived(1, b"cd", 2), StreamEnded(1)]
    assert s.headers == [(b":status", b"200")] and s.data == [b"ab", b"cd"] and s.ended
    assert 1 not in state.streams  # both sides closed
    assert state.open_stream([], end_stream=True).id == 3


def test_each_frame_reports_one_typed_event() -> None:
    state = H2State()
    state.initiate()
    assert state.receive(frame(SETTINGS, 0, 0, struct.pack(">HI", 3, 7))) == [SettingsReceived({3: 7})]
    assert state.max_streams == 7
    assert state.receive(frame(SETTINGS, ACK, 0)) == [SettingsAcknowledged()]
    a = state.open_stream([(b":method", b"POST")], end_stream=False)
    b = state.open_stream([(b":method", b"GET")], end_stream=True)
    assert state.receive(frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", 10))) == [WindowUpdated(0, 10)]
    assert state.receive(frame(WINDOW_UPDATE, 0, a.id, struct.pack(">I", 5))) == [WindowUpdated(a.id, 5)]
    assert state.receive(frame(HEADERS, END_HEADERS, b.id, _response_headers(b"103"))) == [
        InformationalResponseReceived(b.id, [(b":status", b"103")])]
    state.receive(frame(HEADERS, END_HEADERS, b.id, _response_headers()))
    assert state.receive(frame(HEADERS, END_HEADERS | END_STREAM, b.id, hpack.Encoder().encode([(b"x", b"1")]))) == [
        TrailersReceived(b.id, [(b"x", b"1")]), StreamEnded(b.id)]
    events = state.receive(frame(RST_STREAM, 0, a.id, struct.pack(">I", 7)))
    assert events == [StreamReset(a.id, 7), StreamFailed(a.id, a.error)]
    assert isinstance(a.error, StreamResetError) and a.error.unprocessed  # REFUSED_STREAM


def test_frames_split_anywhere_are_reassembled() -> None:
    state = _ready()
    s = state.open_stream([(b":method", b"GET")], end_stream=True)
    wire = frame(HEADERS, END_HEADERS, 1, _response_headers()) + frame(DATA, END_STREAM, 1, b"hello")
    for i in range(len(wire)):
        state.receive(wire[i:i + 1])
    assert s.headers is not None and s.data == [b"hello"] and s.ended


def test_padding_and_continuation() -> None:
    state = _ready()
    s = state.open_stream([(b":method", b"GET")], end_stream=True)
    block = _response_headers(**{"x-a": b"1" * 40})
    padded = bytes([3]) + b"body" + b"\0\0\0"
    events = state.receive(frame(HEADERS, 0, 1, block[:5]) + frame(CONTINUATION, END_HEADERS, 1, block[5:])
                           + frame(DATA, END_STREAM | PADDED, 1, padded))
    # The padding counts against the windows: flow_controlled_length is the whole payload.
    assert events[1:] == [DataReceived(1, b"body", len(padded)), StreamEnded(1)]
    assert s.headers == [(b":status", b"200"), (b"x-a", b"1" * 40)] and s.data == [b"body"]


def test_ping_is_answered_and_settings_acknowledged() -> None:
    state = _ready()
    assert state.receive(frame(PING, 0, 0, b"12345678")) == [PingReceived(b"12345678")]
    assert _frames(bytes(state.out)) == [(PING, ACK, 0, b"12345678")]
    state.out.clear()
    state.ping(b"87654321")
    assert state.receive(frame(PING, ACK, 0, b"87654321")) == [PingAcknowledged(b"87654321")]
    assert state.pings_acked == 1


def test_goaway_fails_only_streams_above_last_stream_id_and_reads_the_rest_to_the_end() -> None:
    state = _ready()
    a = state.open_stream([(b":method", b"GET")], end_stream=True)
    b = state.open_stream([(b":method", b"GET")], end_stream=True)
    c = state.open_stream([(b":method", b"GET")], end_stream=True)
    state.receive(frame(HEADERS, END_HEADERS, 1, _response_headers()))
    events = state.receive(frame(GOAWAY, 0, 0, struct.pack(">II", 3, 0) + b"bye"))
    assert events == [ConnectionTerminated(0, 3, b"bye"), StreamFailed(5, c.error)]
    assert isinstance(c.error, GoAwayError) and c.error.unprocessed
    assert (c.error.last_stream_id, c.error.stream_id) == (3, 5)
    assert a.error is None and b.error is None  # covered: may have run, so kept and read
    assert not state.usable
    state.receive(frame(HEADERS, END_HEADERS, 3, _response_headers()))
    state.receive(frame(DATA, END_STREAM, 1, b"done") + frame(DATA, END_STREAM, 3, b"too"))
    assert a.ended and a.data == [b"done"] and a.error is None
    assert b.ended and b.data == [b"too"] and b.error is None
    state.connection_lost()
    assert a.error is None and b.error is None


def test_a_covered_stream_the_server_never_answers_is_not_marked_unprocessed() -> None:
    state = _ready()
    a = state.open_stream([(b":method", b"GET")], end_stream=True)
    state.receive(frame(GOAWAY, 0, 0, struct.pack(">II", 1, 0)))
    assert a.error is None
    assert state.connection_lost() == [StreamFailed(1, a.error), ConnectionFailed(a.error)]
    assert isinstance(a.error, ConnectionLost) and not a.error.unprocessed
    assert "last_stream_id:1" in str(a.error)


def test_rst_stream_is_an_error_for_that_stream_only() -> None:
    state = _ready()
    a = state.open_stream([(b":method", b"GET")], end_stream=True)
    b = state.open_stream([(b":method", b"GET")], end_stream=True)
    state.receive(frame(RST_STREAM, 0, 1, struct.pack(">I", 2)))
    assert isinstance(a.error, StreamResetError) and a.error.code == 2
    assert "INTERNAL_ERROR" in str(a.error) and not a.error.unprocessed
    assert b.error is None and state.usable


def test_send_data_respects_windows_and_frame_size() -> None:
    state = _ready(window=20000)
    s = state.open_stream([(b":method", b"POST")], end_stream=False)
    state.out.clear()
    body = memoryview(b"x" * 70000)
    sent = state.send_data(s, body, end_stream=True)
    assert sent == 20000  # the stream window, in frames of at most 16384
    assert [len(p) for t, f, sid, p in _frames(bytes(state.out))] == [16384, 3616]
    state.out.clear()
    state.receive(frame(WINDOW_UPDATE, 0, 1, struct.pack(">I", 100000)))
    sent = state.send_data(s, body[20000:], end_stream=True)
    assert sent == 65535 - 20000  # what the connection window had left
    state.receive(frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", 100000)))
    rest = body[20000 + sent:]
    assert state.send_data(s, rest, end_stream=True) == len(rest)
    assert _frames(bytes(state.out))[-1][1] & END_STREAM


def test_consumed_data_is_credited_back_in_batches() -> None:
    state = _ready()
    s = state.open_stream([(b":method", b"GET")], end_stream=True)
    state.receive(frame(HEADERS, END_HEADERS, 1, _response_headers()))
    state.out.clear()
    state.consumed(s, STREAM_WINDOW // 2 - 1)
    assert not state.out
    state.consumed(s, 1)
    assert _frames(bytes(state.out)) == [(WINDOW_UPDATE, 0, 1, struct.pack(">I", STREAM_WINDOW // 2))]


def test_reset_by_us_sends_rst_and_credits_unread_data() -> None:
    state = _ready()
    s = state.open_stream([(b":method", b"GET")], end_stream=True)
    state.receive(frame(HEADERS, END_HEADERS, 1, _response_headers()) + frame(DATA, 0, 1, b"z" * 1000))
    state.out.clear()
    state.reset(s)
    assert _frames(bytes(state.out)) == [(RST_STREAM, 0, 1, struct.pack(">I", 8))]
    assert state.recv_unacked == 1000
    state.receive(frame(DATA, 0, 1, b"late"))  # in flight when we reset: ignored, credited
    assert state.recv_unacked == 1004 and s.data == []


def test_a_server_answering_in_http1_is_not_http2() -> None:
    state = H2State()
    state.initiate()
    state.receive(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n")
    assert isinstance(state.error, NotHTTP2)


@pytest.mark.parametrize("wire, why", [
    (frame(PUSH_PROMISE, END_HEADERS, 1, b"\0\0\0\2"), "PUSH_PROMISE"),
    (frame(DATA, 0, 1, b"x"), "DATA before HEADERS"),
    (frame(SETTINGS, 0, 0, b"\0\5\0\0\0\1"), "MAX_FRAME_SIZE"),
    (frame(HEADERS, 0, 1, b"\x88") + frame(DATA, 0, 1, b"x"), "CONTINUATION"),
])
def test_protocol_errors_end_the_connection_with_goaway(wire: bytes, why: str) -> None:
    state = _ready()
    s = state.open_stream([(b":method", b"GET")], end_stream=True)
    state.receive(wire)
    assert isinstance(state.error, PeerProtocolError) and why in str(state.error)
    assert s.error is state.error
    assert _frames(bytes(state.out))[-1][0] == GOAWAY


def _answering(state: H2State) -> Stream:
    s = state.open_stream([(b":method", b"GET")], end_stream=True)
    state.receive(frame(HEADERS, END_HEADERS, s.id, _response_headers()))
    return s


def test_data_beyond_the_stream_window_is_a_flow_control_error() -> None:
    state = _ready()
    s = _answering(state)
    chunk = frame(DATA, 0, s.id, b"x" * 16384)
    state.receive(chunk * (STREAM_WINDOW // 16384))  # exactly the window: fine
    assert state.error is None
    state.receive(frame(DATA, 0, s.id, b"x"))
    assert isinstance(state.error, PeerProtocolError) and "FLOW_CONTROL_ERROR" in str(state.error)
    assert s.error is state.error


def test_credit_returned_reopens_the_window() -> None:
    state = _ready()
    s = _answering(state)
    chunk = frame(DATA, 0, s.id, b"x" * 16384)
    for _ in range(3):  # three windows' worth, read as it arrives
        for _ in range(STREAM_WINDOW // 16384):
            state.receive(chunk)
            state.consumed(s, sum(map(len, s.data)))
            s.data.clear()
    assert state.error is None


@pytest.mark.parametrize("wire, why", [
    (frame(DATA, 0, 7, b"x"), "idle stream 7"),  # never opened
    (frame(HEADERS, END_HEADERS, 2, b"\x88"), "idle stream 2"),  # server-initiated, no push
    (frame(PRIORITY, 0, 0, b"\0\0\0\0\x10"), "PRIORITY on stream 0"),
    (frame(PING, 0, 0, b"1234567"), "PING of 7 bytes"),
    (frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", 0)), "WINDOW_UPDATE of 0"),
    (frame(SETTINGS, ACK, 0, b"\0\0\0\0\0\0"), "SETTINGS ACK with a payload"),
    (struct.pack(">BHBBI", 0, 16385, DATA, 0, 1), "frame of 16385 bytes"),
])
def test_protocol_violations_are_connection_errors(wire: bytes, why: str) -> None:
    state = _ready()
    _answering(state)
    state.receive(wire)
    assert isinstance(state.error, PeerProtocolError) and why in str(state.error)
    assert _frames(bytes(state.out))[-1][0] == GOAWAY


def test_frames_that_carry_nothing_are_capped() -> None:
    state = _ready()
    s = _answering(state)
    state.receive(frame(DATA, 0, s.id) * MAX_IDLE_FRAMES)
    assert state.error is None
    state.receive(frame(DATA, 0, s.id, b"progress") + frame(DATA, 0, s.id) * MAX_IDLE_FRAMES)
    assert state.error is None  # the count restarts with every frame that carries data
    state.receive(frame(PING, 0, 0, b"12345678"))
    assert isinstance(state.error, PeerProtocolError) and "ENHANCE_YOUR_CALM" in str(state.error)


def test_an_h2c_connection_closed_before_any_byte_is_not_http2() -> None:
    state = H2State()
    state.cleartext = True
    state.initiate()
    s = state.open_stream([(b":method", b"GET")], end_stream=True)
    assert [e.stream_id for e in state.connection_lost()] == [s.id, 0]  # the stream, the connection
    assert isinstance(s.error, NotHTTP2) and s.error.unprocessed
    tls = H2State()  # over TLS, ALPN said h2: a close is a lost connection, never a fallback
    tls.initiate()
    t = tls.open_stream([(b":method", b"GET")], end_stream=True)
    tls.connection_lost()
    assert isinstance(t.error, ConnectionLost) and not t.error.unprocessed


@pytest.mark.parametrize("name", sorted(SECRET_HEADERS))
def test_every_credential_header_is_sent_never_indexed(name: str) -> None:
    enc, ref = Encoder(), hpack.Decoder()
    headers = [(name.encode(), b"secret-value")]
    ref.decode(enc.encode(headers), raw=True)
    decoded = ref.decode(enc.encode(headers), raw=True)
    assert decoded[0].indexable is False and len(ref.header_table.dynamic_entries) == 0


# -- layering ---------------------------------------------------------------------------------

_PURE = ("state", "events", "errors", "hpack", "frames")
_IO = {"socket", "ssl", "select", "selectors", "threading", "asyncio", "time", "httpx", "httpcore", "anyio"}


@pytest.mark.parametrize("module", _PURE)
def test_the_protocol_modules_do_no_io(module: str) -> None:
    """The state and what it is made of import no sockets, threads, event loop, clock or
    httpx: that is what lets the same state run under both drivers and be tested frame by frame."""
    import ast
    import pathlib

    import llmclient.transport.http2

    path = pathlib.Path(llmclient.transport.http2.__file__).parent / f"{module}.py"
    imported: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            imported |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            imported.add(node.module.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            assert node.module in _PURE, f"{module}.py imports .{node.module}, which is not pure"
    assert not imported & _IO, f"{module}.py imports {sorted(imported & _IO)}"
