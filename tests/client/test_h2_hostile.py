"""A hostile HTTP/2 peer (tests/client/hostile_h2.py) against ``OpenAI`` and ``AsyncOpenAI`` (``drive``).

Each script breaks RFC 9113 (or floods) on the first connection. The call must fail with an
APIConnectionError that names the protocol error and carries the trace id, as soon as the
evidence arrives: the read timeout is 20 s, so a call that waits it out fails these tests as
an APITimeoutError. The next call on the same client must succeed on a fresh connection.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

import pytest

import llmclient
from tests._both import Drive

from .hostile_h2 import (
    CONTINUATION,
    DATA,
    END_HEADERS,
    END_STREAM,
    GOAWAY,
    HEADERS,
    PING,
    RST_STREAM,
    HostileH2Server,
    Peer,
    answer_properly,
    frame,
)

MSG = [{"role": "user", "content": "hi"}]


def _bad_hpack(peer: Peer) -> None:
    peer.settings()
    sid = peer.read_request()
    peer.send(frame(HEADERS, END_HEADERS | END_STREAM, sid or 1, b"\xbf"))  # index 62: empty table
    peer.read_frame()


def _oversize_frame(peer: Peer) -> None:
    peer.settings()
    sid = peer.read_request() or 1
    peer.send(frame(HEADERS, END_HEADERS, sid, peer.headers_block()))
    peer.send(struct.pack(">BHBBI", 0x10, 0, DATA, 0, sid) + b"x" * 100)  # announces 1 MiB
    peer.read_frame()


def _flood(make: Callable[[int], bytes], opener: Callable[[Peer, int], bytes]) -> Callable[[Peer], None]:
    def script(peer: Peer) -> None:
        peer.settings()
        sid = peer.read_request() or 1
        peer.send(opener(peer, sid))
        chunk = make(sid) * 1000
        for _ in range(2000):  # 2 million frames at most; the client gives up long before
            try:
                peer.sock.sendall(chunk)
            except OSError:
                return
    return script


_continuation_flood = _flood(lambda sid: frame(CONTINUATION, 0, sid),
                             lambda peer, sid: frame(HEADERS, 0, sid, peer.headers_block()))
_empty_data_flood = _flood(lambda sid: frame(DATA, 0, sid),
                           lambda peer, sid: frame(HEADERS, END_HEADERS, sid, peer.headers_block()))
_ping_flood = _flood(lambda sid: frame(PING, 0, 0, b"12345678"), lambda peer, sid: b"")


def _reset_no_error_before_the_end(peer: Peer) -> None:
    peer.settings()
    sid = peer.read_request() or 1
    peer.send(frame(HEADERS, END_HEADERS, sid, peer.headers_block()), frame(DATA, 0, sid, b'{"id": '),
              frame(RST_STREAM, 0, sid, struct.pack(">I", 0)))
    _answer_the_rest(peer)  # a stream error: the connection goes on


def _informational_with_end_stream(peer: Peer) -> None:
    peer.settings()
    sid = peer.read_request() or 1
    block = bytes(peer.encoder.encode([(":status", "103")]))
    peer.send(frame(HEADERS, END_HEADERS | END_STREAM, sid, block))
    _answer_the_rest(peer)  # a stream error: the connection goes on


def _answer_the_rest(peer: Peer) -> None:
    while (sid := peer.read_request()) is not None:
        peer.answer(sid)


# name: (script, what the error says, connections by the end: 2 where the connection failed)
SCRIPTS: dict[str, tuple[Callable[[Peer], None], str, int]] = {
    "bad HPACK index": (_bad_hpack, "COMPRESSION_ERROR", 2),
    "frame over SETTINGS_MAX_FRAME_SIZE": (_oversize_frame, "FRAME_SIZE_ERROR", 2),
    "CONTINUATION flood": (_continuation_flood, "ENHANCE_YOUR_CALM", 2),
    "empty DATA flood": (_empty_data_flood, "ENHANCE_YOUR_CALM", 2),
    "PING flood, never reading": (_ping_flood, "ENHANCE_YOUR_CALM", 2),
    "RST_STREAM(NO_ERROR) before END_STREAM": (_reset_no_error_before_the_end, "NO_ERROR: before the response ended", 1),
    "1xx with END_STREAM": (_informational_with_end_stream, "informational 103", 1),
}


def _call(drive: Drive, base_url: str, **kw: Any) -> Any:
    """(the first call's answer or error, the second call's answer) on one client."""
    c = drive.client(base_url=base_url, api_key="k", timeout=kw.pop("timeout", 20), max_retries=0, **kw)
    try:
        first: Any
        try:
            first = drive(c.chat.completions.create(model="m", messages=MSG))
        except llmclient.APIError as exc:
            first = exc
        second = drive(c.chat.completions.create(model="m", messages=MSG))
        return first, second
    finally:
        drive(c.close())


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_a_protocol_violation_fails_the_call_at_once_and_the_next_call_works(drive: Drive, name: str) -> None:
    script, why, connections = SCRIPTS[name]
    with HostileH2Server(script) as server:
        first, second = _call(drive, server.base_url)
    assert isinstance(first, llmclient.APIConnectionError), first
    assert not isinstance(first, llmclient.APITimeoutError), f"waited out the read timeout: {first}"
    assert why in str(first)
    assert first.trace_id and first.trace_id in str(first)
    assert second.choices[0].message.content == "Hello world"
    assert server.connections == connections


def _silent(peer: Peer) -> None:
    peer.settings()
    while peer.read_frame() is not None:  # reads, never answers
        pass


def test_a_connection_that_timed_out_is_not_used_again(drive: Drive) -> None:
    with HostileH2Server(_silent) as server:
        first, second = _call(drive, server.base_url, timeout=1.0)
    assert isinstance(first, llmclient.APITimeoutError)
    assert second.choices[0].message.content == "Hello world"
    assert server.connections == 2


def _answer_then_cut_mid_frame(peer: Peer) -> None:
    peer.settings()
    sid = peer.read_request() or 1
    peer.answer(sid)
    sid = peer.read_request() or 3
    peer.send(frame(HEADERS, END_HEADERS, sid, peer.headers_block())[:12])  # half the HEADERS
    peer.sock.close()


def test_a_response_cut_after_its_first_bytes_is_never_sent_again(drive: Drive) -> None:
    # The connection is reused (the stale keep-alive race would qualify) but response bytes had
    # arrived: the request ran, and max_retries=0 forbids a re-send.
    with HostileH2Server(_answer_then_cut_mid_frame) as server:
        c = drive.client(base_url=server.base_url, api_key="k", timeout=20, max_retries=0)
        results: list[Any] = []
        for _ in range(3):
            try:
                results.append(drive(c.chat.completions.create(model="m", messages=MSG)))
            except llmclient.APIError as exc:
                results.append(exc)
        drive(c.close())
        requests = server.requests
    assert results[0].choices[0].message.content == "Hello world"
    assert isinstance(results[1], llmclient.APIConnectionError)
    assert not isinstance(results[1], llmclient.APITimeoutError)
    assert results[2].choices[0].message.content == "Hello world"
    assert requests == 3  # one each: the cut one was not re-sent


def _goaway_above(peer: Peer) -> None:
    # Refuses the first request with GOAWAY(last_stream_id=0): never processed, so the client
    # may and must send it again at once on a fresh connection, even with max_retries=0.
    peer.settings()
    peer.read_request()
    peer.send(frame(GOAWAY, 0, 0, struct.pack(">II", 0, 0)))
    while peer.read_frame() is not None:
        pass


def test_a_stream_above_goaway_last_stream_id_is_sent_again_at_once(drive: Drive) -> None:
    with HostileH2Server(_goaway_above, answer_properly) as server:
        first, second = _call(drive, server.base_url)
    assert first.choices[0].message.content == "Hello world"
    assert second.choices[0].message.content == "Hello world"
    assert server.connections == 2
