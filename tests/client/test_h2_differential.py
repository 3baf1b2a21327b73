"""Differential fuzzing of our HTTP/2 state machine against ``h2`` (python-hyper, a maintained
implementation): the same server frame sequences, fed one frame at a time to both clients with
the same streams open; the frame at which each declares a connection error must be the same.

Where we are deliberately stricter or more lenient than h2, the difference is named in
:data:`KNOWN` with the rule that makes it, and the test checks that such a case is really that.
"""

from __future__ import annotations

import struct

import h2.config
import h2.connection
import h2.exceptions
import hpack
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmclient.transport.http2.frames import (
    CONTINUATION,
    DATA,
    END_HEADERS,
    END_STREAM,
    GOAWAY,
    HEADERS,
    PADDED,
    PING,
    PRIORITY,
    PUSH_PROMISE,
    RST_STREAM,
    SETTINGS,
    WINDOW_UPDATE,
    frame,
)
from llmclient.transport.http2.state import (
    CONNECTION_WINDOW,
    STREAM_WINDOW,
    H2State,
)

PRIORITY_FLAG, ACK = 0x20, 0x1
REQUEST = [(b":method", b"GET"), (b":path", b"/"), (b":scheme", b"http"), (b":authority", b"x")]
SERVER_PREFACE = frame(SETTINGS, 0, 0) + frame(SETTINGS, ACK, 0)


def _ours() -> H2State:
    state = H2State()
    state.initiate()
    for _ in range(2):
        state.open_stream(REQUEST, end_stream=True)
    state.receive(SERVER_PREFACE)
    assert state.error is None
    return state


def _theirs() -> h2.connection.H2Connection:
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding=None))
    conn.local_settings.initial_window_size = STREAM_WINDOW  # as ours advertises
    conn.local_settings.enable_push = 0
    conn.initiate_connection()
    conn.increment_flow_control_window(CONNECTION_WINDOW - 65535)
    for sid in (1, 3):
        conn.send_headers(sid, REQUEST, end_stream=True)
    conn.receive_data(SERVER_PREFACE)
    conn.data_to_send()
    return conn


_enc = hpack.Encoder()
_BLOCKS = [
    _enc.encode([(b":status", b"200"), (b"content-type", b"application/json")]),
    hpack.Encoder().encode([(b":status", b"103")]),
    hpack.Encoder().encode([(b"content-type", b"text/plain")]),  # no :status
    b"\xbf",  # index 62 of an empty dynamic table
    b"",
]
_sid = st.sampled_from([1, 3, 0, 2, 5, 7])
_flags = st.sets(st.sampled_from([END_STREAM, END_HEADERS, PADDED, PRIORITY_FLAG])).map(sum)


def _headers(sid: int, flags: int, block: bytes, pad: int) -> bytes:
    payload = block
    if flags & PRIORITY_FLAG:
        payload = b"\0\0\0\0\x10" + payload
    if flags & PADDED:
        payload = bytes((pad,)) + payload + b"\0" * min(pad, 3)
    return frame(HEADERS, flags, sid, payload)


def _data(sid: int, flags: int, n: int, pad: int) -> bytes:
    payload = b"x" * n
    flags &= END_STREAM | PADDED
    if flags & PADDED:
        payload = bytes((pad,)) + payload + b"\0" * min(pad, 3)
    return frame(DATA, flags, sid, payload)


_frame = st.one_of(
    st.builds(_headers, _sid, _flags, st.sampled_from(_BLOCKS), st.integers(0, 5)),
    st.builds(lambda sid, last, b: frame(CONTINUATION, END_HEADERS if last else 0, sid, b),
              _sid, st.booleans(), st.sampled_from(_BLOCKS)),
    st.builds(_data, _sid, _flags, st.integers(0, 64), st.integers(0, 70)),
    st.builds(lambda sid, code, n: frame(RST_STREAM, 0, sid, struct.pack(">I", code)[:n]),
              _sid, st.sampled_from([0, 1, 2, 7, 8]), st.sampled_from([4, 4, 4, 3])),
    st.builds(lambda sid, inc, n: frame(WINDOW_UPDATE, 0, sid, struct.pack(">I", inc)[:n]),
              _sid, st.sampled_from([0, 1, 1000, 2**31 - 1]), st.sampled_from([4, 4, 4, 2])),
    st.builds(lambda sid, ack, n: frame(PING, ACK if ack else 0, sid, b"\0" * n),
              st.sampled_from([0, 0, 1]), st.booleans(), st.sampled_from([8, 8, 7])),
    st.builds(lambda sid, ack, pairs: frame(SETTINGS, ACK if ack else 0, sid,
                                            b"".join(struct.pack(">HI", k, v) for k, v in pairs)),
              st.sampled_from([0, 0, 1]), st.booleans(),
              st.lists(st.tuples(st.sampled_from([1, 2, 3, 4, 5, 6, 99]),
                                 st.sampled_from([0, 1, 2, 100, 16384, 2**24, 2**31])), max_size=2)),
    st.builds(lambda sid, last, code: frame(GOAWAY, 0, sid, struct.pack(">II", last, code)),
              st.sampled_from([0, 0, 1]), st.sampled_from([0, 1, 3, 99]), st.sampled_from([0, 2])),
    st.builds(lambda sid, n: frame(PRIORITY, 0, sid, b"\0\0\0\0\x10"[:n]), _sid, st.sampled_from([5, 4])),
    st.builds(lambda sid: frame(PUSH_PROMISE, END_HEADERS, sid, b"\0\0\0\2" + _BLOCKS[0]), _sid),
    st.builds(lambda sid: frame(0x20, 0, sid, b"unknown"), _sid),
)


def _first_error_ours(frames: list[bytes]) -> int | None:
    state = _ours()
    for i, f in enumerate(frames):
        state.receive(f)
        if state.error is not None:
            return i
    return None


def _first_error_theirs(frames: list[bytes]) -> int | None:
    conn = _theirs()
    for i, f in enumerate(frames):
        try:
            conn.receive_data(f)
        except h2.exceptions.ProtocolError:
            return i
    return None


def _kind(f: bytes) -> tuple[int, int, int, int]:
    n = int.from_bytes(f[:3], "big")
    return f[3], f[4], struct.unpack(">I", f[5:9])[0], n


def _enables_push(f: bytes) -> bool:
    """A SETTINGS frame (not an ACK) whose payload sets SETTINGS_ENABLE_PUSH to 1."""
    payload = f[9:]
    if f[4] & ACK or len(payload) % 6:
        return False
    return any(struct.unpack(">HI", payload[i:i + 6]) == (0x2, 1) for i in range(0, len(payload), 6))


def _known(frames: list[bytes], ours: int | None, theirs: int | None) -> str | None:
    """The rule behind a difference we chose, or None."""
    at = min(x for x in (ours, theirs) if x is not None)
    ftype, _flags, sid, _n = _kind(frames[at])
    if ours == at and theirs != at and ftype in (HEADERS, DATA, WINDOW_UPDATE, RST_STREAM) and (sid % 2 == 0 or sid >= 5):
        # RFC 9113 section 5.1: a frame on an idle stream (one we never opened; a server opens
        # none without PUSH_PROMISE, which we disable) is a connection error PROTOCOL_ERROR;
        # h2 treats streams it has no record of as closed.
        return "frame on an idle stream"
    if ours == at and theirs != at and ftype in (DATA, HEADERS) and sid in (1, 3):
        # Section 5.1 "half-closed (remote)": after END_STREAM, DATA or HEADERS is
        # STREAM_CLOSED. h2 resets only that stream; we end the connection.
        return "frame after END_STREAM"
    if theirs == at and ours != at and ftype in (HEADERS, CONTINUATION) and sid in (1, 3):
        # A malformed response (no :status, 1xx with END_STREAM, a second HEADERS without
        # END_STREAM, a pseudo-header twice), its block ended by the HEADERS frame or by a
        # CONTINUATION: section 8.1.1 makes it a stream error; h2 raises a connection error.
        return "malformed response is a stream error"
    if theirs == at and ours != at and ftype == WINDOW_UPDATE and sid in (1, 3):
        # Section 6.9 / 6.9.1: an increment of 0, or one past 2^31-1, on a stream is a stream
        # error (we reset the stream); h2 ends the connection.
        return "stream window error is a stream error"
    if ours == at and theirs != at and ftype == SETTINGS and sid == 0 and _enables_push(frames[at]):
        # RFC 9113 section 6.5.2: a client MUST treat SETTINGS_ENABLE_PUSH = 1 from a server as
        # a connection error PROTOCOL_ERROR (a server may only send 0); h2 follows RFC 7540,
        # where any 0 or 1 is accepted.
        return "server enables push"
    if theirs == at and ours != at and any(_kind(f)[0] == GOAWAY for f in frames[:at]):
        # Section 6.8: after GOAWAY the server goes on answering streams up to last-stream-id
        # (and may send control frames); h2 closes its state machine at GOAWAY and refuses
        # every later frame.
        return "frames after GOAWAY"
    return None


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_frame, min_size=1, max_size=8))
def test_we_end_the_connection_where_h2_does(frames: list[bytes]) -> None:
    ours, theirs = _first_error_ours(frames), _first_error_theirs(frames)
    if ours == theirs:
        return
    why = _known(frames, ours, theirs)
    assert why is not None, (
        f"connection error at frame {ours} (ours) vs {theirs} (h2): "
        f"{[_kind(f) for f in frames]}"
    )


def test_a_server_that_enables_push_ends_the_connection() -> None:
    # Found by the differential test above: ENABLE_PUSH = 1, then 0, in one SETTINGS frame.
    # RFC 9113 section 6.5.2 makes a 1 from a server a connection error; h2 (RFC 7540) takes it.
    push_on = frame(SETTINGS, 0, 0, struct.pack(">HI", 0x2, 1) + struct.pack(">HI", 0x2, 0))
    assert _first_error_ours([push_on]) == 0 and _first_error_theirs([push_on]) is None
    assert _known([push_on], 0, None) == "server enables push"
    push_off = frame(SETTINGS, 0, 0, struct.pack(">HI", 0x2, 0))
    assert _first_error_ours([push_off]) is None and _first_error_theirs([push_off]) is None


def test_a_malformed_block_ended_by_continuation_is_a_stream_error_only() -> None:
    # Found by the differential test above: HEADERS without END_HEADERS, then a CONTINUATION
    # that ends the block; the block carries :status twice (malformed, section 8.3). h2 ends
    # the connection at the CONTINUATION; we fail only the stream (section 8.1.1).
    block = b"\x88_\x8b\x1du\xd0b\r&=LtA\xea"
    frames = [frame(HEADERS, 0, 1, block), frame(CONTINUATION, END_HEADERS, 1, block)]
    assert _first_error_ours(frames) is None
    assert _first_error_theirs(frames) == 1
    state = _ours()
    events = [e for f in frames for e in state.receive(f)]
    assert [type(e).__name__ for e in events] == ["StreamFailed"], events
    assert "pseudo-header after :status" in str(events[0].error)
    assert _known(frames, None, 1) == "malformed response is a stream error"
