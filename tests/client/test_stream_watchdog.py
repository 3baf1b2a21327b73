"""Streams that never hang and never lose what arrived (issue 32): the stall watchdog
(``stream_idle_timeout``), and the partial answer a cut or stalled stream's error carries.

Against the real reference server (its ``stall_after`` and ``cut_after`` faults, HTTP/2 and
HTTP/1.1) and misbehaving peers: one written here, that answers a stream's headers and one
chunk, then only SSE keep-alive comments; a hostile HTTP/2 peer silent after its headers. Each test runs on ``OpenAI`` and ``AsyncOpenAI``.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import httpx
import pytest

import llmclient
from llmclient.pipeline.partial import PartialTracker
from llmclient.pipeline.watchdog import (
    body_read_timeout,
    check_idle_timeout,
    stall_message,
    stalled,
)
from tests._both import Drive

from .hostile_h2 import END_HEADERS, HEADERS, HostileH2Server, Peer, frame

MSG = [{"role": "user", "content": "Tell a long story."}]
IDLE = 2.0  # the tests' idle limit: long beside loopback chunks, short beside a test's budget


# -- the pure decisions ------------------------------------------------------------------------
def test_the_idle_limit_caps_a_streams_read_timeout() -> None:
    assert body_read_timeout(600.0, 60.0) == 60.0
    assert body_read_timeout(5.0, 60.0) == 5.0
    assert body_read_timeout(None, 60.0) == 60.0
    assert body_read_timeout(600.0, None) == 600.0
    assert body_read_timeout(None, None) is None


def test_stalled_once_the_idle_limit_has_passed() -> None:
    assert not stalled(10.0, 0.0, None)
    assert not stalled(59.9, 0.0, 60.0)
    assert stalled(60.0, 0.0, 60.0)


@pytest.mark.parametrize("bad", [0, -1, float("inf"), "60", True])
def test_a_bad_idle_limit_is_refused_by_name(bad: object) -> None:
    with pytest.raises(ValueError, match="stream_idle_timeout"):
        check_idle_timeout(bad)
    with pytest.raises(ValueError, match="stream_idle_timeout"):
        llmclient.OpenAI(api_key="k", base_url="http://127.0.0.1:9/v1", stream_idle_timeout=bad)  # type: ignore[arg-type]


def test_the_message_says_how_long_after_what_and_which_kind_of_silence() -> None:
    silent = stall_message(61.2, 60.0, 1, keepalives=False)
    assert "61.2 s after 1 event;" in silent
    assert "nothing arrived" in silent
    assert "keep-alive" in stall_message(60.0, 60.0, 7, keepalives=True)


def test_the_partial_answer_merges_text_and_tool_call_fragments() -> None:
    t = PartialTracker()
    for chunk in (
        {"id": "chatcmpl-1", "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]},
        {"id": "chatcmpl-1", "choices": [{"index": 0, "delta": {"content": "Hel"}},
                                         {"index": 1, "delta": {"content": "Bon"}}]},
        {"id": "chatcmpl-1", "choices": [{"index": 0, "delta": {"content": "lo"}}]},
        {"choices": [{"index": 1, "delta": {"tool_calls": [
            {"index": 0, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{\"a\""}}]}}]},
        {"choices": [{"index": 1, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": ": 1}"}}]},
                      "finish_reason": "tool_calls"}]},
    ):
        t.chunk(chunk, chunk["choices"])
    assert t.finished() == {0: False, 1: True}
    a = t.answer()
    assert (a.events, a.response_id, a.text) == (5, "chatcmpl-1", "Hello")
    assert a.choices[1].text == "Bon"
    assert a.choices[1].finish_reason == "tool_calls"
    assert a.choices[1].tool_calls == [{"id": "call_1", "type": "function",
                                        "function": {"name": "f", "arguments": "{\"a\": 1}"}}]
    r = PartialTracker()
    r.event({"type": "response.created", "sequence_number": 0, "response": {"id": "resp_1"}})
    r.event({"type": "response.output_text.delta", "sequence_number": 1, "delta": "Hi"})
    assert (r.answer().response_id, r.answer().last_sequence_number, r.answer().text) == ("resp_1", 1, "Hi")


# -- against the reference server ---------------------------------------------------------------
@pytest.fixture(params=["h2", "h1"])
def server(request: pytest.FixtureRequest, ref_server, ref_server_h1):
    return ref_server if request.param == "h2" else ref_server_h1


def _read(drive: Drive, stream) -> list:
    return drive.iterate(stream)


def test_a_stalled_stream_ends_at_the_idle_limit_with_what_arrived(drive: Drive, server) -> None:
    client = drive.client(base_url=server.base_url, api_key="k", max_retries=0)
    ask = {"model": "gpt-4o-mini", "messages": MSG, "max_tokens": 40, "stream": True, "seed": 1,
           "temperature": 0}
    stream = drive(client.chat.completions.create(**ask, stream_idle_timeout=IDLE,
                                                  extra_headers={"x-fault": "stall_after=3"}))
    with pytest.raises(llmclient.APITimeoutError) as caught:
        _read(drive, stream)
    err = caught.value
    assert "Stream stalled: no event for" in err.message
    assert "after 3 events" in err.message
    assert "nothing arrived" in err.message
    assert err.trace_id and err.trace_id in str(err)
    assert err.partial.events == 3  # the role chunk and two pieces of text
    assert err.partial.text != ""
    assert err.partial.response_id.startswith("chatcmpl")
    assert err.partial.choices[0].finish_reason is None
    # The same stream read to its end (no fault) begins with exactly that text.
    whole = _read(drive, drive(client.chat.completions.create(**ask)))
    text = "".join(c.choices[0].delta.content or "" for c in whole if c.choices)
    assert text.startswith(err.partial.text)
    assert len(text) > len(err.partial.text)


def test_the_client_wide_limit_applies_and_none_turns_it_off(drive: Drive, ref_server) -> None:
    client = drive.client(base_url=ref_server.base_url, api_key="k", max_retries=0,
                          stream_idle_timeout=IDLE)
    stream = drive(client.chat.completions.create(
        model="gpt-4o-mini", messages=MSG, max_tokens=40, stream=True,
        extra_headers={"x-fault": "stall_after=2"}))
    with pytest.raises(llmclient.APITimeoutError, match="Stream stalled"):
        _read(drive, stream)
    # Off: the read timeout is what ends the stall, and it says so (partial attached too).
    stream = drive(client.chat.completions.create(
        model="gpt-4o-mini", messages=MSG, max_tokens=40, stream=True, stream_idle_timeout=None,
        timeout=httpx.Timeout(30.0, read=IDLE), extra_headers={"x-fault": "stall_after=2"}))
    with pytest.raises(llmclient.APITimeoutError) as caught:
        _read(drive, stream)
    assert "Stream read timed out" in caught.value.message
    assert caught.value.partial.events == 2
    off = client.with_options(stream_idle_timeout=None)
    assert off._options.stream_idle_timeout is None


def test_a_cut_responses_stream_carries_its_id_and_last_sequence_number(drive: Drive, ref_server) -> None:
    client = drive.client(base_url=ref_server.base_url, api_key="k", max_retries=0)
    stream = drive(client.responses.create(model="gpt-4o-mini", input="Tell a long story.",
                                           max_output_tokens=64, stream=True,
                                           extra_headers={"x-fault": "cut_after=6"}))
    with pytest.raises(llmclient.IncompleteStreamError) as caught:
        _read(drive, stream)
    partial = caught.value.partial
    assert partial.events == 6
    assert partial.last_sequence_number == 5
    assert partial.response_id.startswith("resp_")
    assert partial.text != ""


def test_a_cut_tool_call_keeps_its_fragments(drive: Drive, ref_server) -> None:
    client = drive.client(base_url=ref_server.base_url, api_key="k", max_retries=0)
    tools = [{"type": "function", "function": {"name": "lookup", "parameters": {
        "type": "object", "properties": {"q": {"type": "string"}}}}}]
    stream = drive(client.chat.completions.create(
        model="gpt-4o-mini", messages=MSG, tools=tools, tool_choice="required", max_tokens=12,
        stream=True, extra_headers={"x-fault": "cut_after=2"}))
    with pytest.raises(llmclient.IncompleteStreamError) as caught:
        _read(drive, stream)
    (call,) = caught.value.partial.choices[0].tool_calls
    assert call["function"]["name"] == "lookup"
    assert call["id"]


# -- a peer that keeps the stream alive with comments while it stalls ------------------------------
class KeepAlivePeer:
    """HTTP/1.1: a stream's headers, one chunk, then ``: keep-alive`` every 0.2 s until the
    client hangs up (as a proxy or a server with SSE pings does for a stalled upstream)."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self._stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                got = conn.recv(65536)
                if not got:
                    return
                data += got
            head = (b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                    b"transfer-encoding: chunked\r\n\r\n")
            first = (b'data: {"id":"chatcmpl-k","object":"chat.completion.chunk","created":1,'
                     b'"model":"m","choices":[{"index":0,"delta":{"role":"assistant",'
                     b'"content":"Once"},"finish_reason":null}]}\n\n')
            try:
                conn.sendall(head + _chunk(first))
                while not self._stop.wait(0.2):
                    conn.sendall(_chunk(b": keep-alive\n\n"))
            except OSError:
                return  # the client hung up

    def close(self) -> None:
        self._stop.set()
        self.listener.close()


def _chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


@pytest.fixture
def keepalive_peer() -> Iterator[KeepAlivePeer]:
    peer = KeepAlivePeer()
    yield peer
    peer.close()


def test_keepalive_comments_are_not_progress(drive: Drive, keepalive_peer: KeepAlivePeer) -> None:
    client = drive.client(base_url=f"http://127.0.0.1:{keepalive_peer.port}/v1", api_key="k",
                          max_retries=0, http2=False, stream_idle_timeout=1.0)
    stream = drive(client.chat.completions.create(model="m", messages=MSG, stream=True))
    with pytest.raises(llmclient.APITimeoutError) as caught:
        _read(drive, stream)
    err = caught.value
    assert "after 1 event;" in err.message
    assert "keep-alive" in err.message
    assert err.partial.text == "Once"


# -- a hostile HTTP/2 peer that stalls right after the response headers -----------------------------
def _headers_then_silence(peer: Peer) -> None:
    """HEADERS (200, text/event-stream) for each request, then nothing: no DATA, no end."""
    peer.settings()
    while (sid := peer.read_request()) is not None:
        block = bytes(peer.encoder.encode([(":status", "200"), ("content-type", "text/event-stream")]))
        peer.send(frame(HEADERS, END_HEADERS, sid, block))


@pytest.mark.parametrize("max_retries", [0, 1])
def test_a_peer_silent_after_its_headers_is_a_stall_at_the_idle_limit(drive: Drive, max_retries: int) -> None:
    with HostileH2Server(_headers_then_silence, _headers_then_silence) as peer:
        client = drive.client(base_url=peer.base_url, api_key="k", max_retries=max_retries,
                              stream_idle_timeout=1.0, timeout=30)
        stream = drive(client.chat.completions.create(model="m", messages=MSG, stream=True))
        with pytest.raises(llmclient.APITimeoutError) as caught:
            _read(drive, stream)
    err = caught.value
    assert "after 0 events; nothing arrived" in err.message  # not the 30 s read timeout
    assert err.partial.events == 0
    # Nothing was shown: the stream is sent again within max_retries, then the stall is raised.
    assert stream.timings.resumes == max_retries
    assert peer.requests == 1 + max_retries
