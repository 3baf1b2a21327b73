"""A misbehaving HTTP/1.1 server against ``OpenAI`` and ``AsyncOpenAI`` (``drive``; llmclient/transport/http1.py).

A real socket on loopback; the first connection runs a script that breaks RFC 9112 (garbage
status line, a huge header, a body shorter than its Content-Length, a close mid-body ...),
every later one answers properly. The call must fail with an APIConnectionError naming the
fault, with the trace id, as soon as the evidence arrives (the read timeout is 20 s: a call
that waits it out fails as an APITimeoutError); the next call must work on a fresh connection.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import orjson
import pytest

import llmclient
from tests._both import Drive

MSG = [{"role": "user", "content": "hi"}]
ANSWER = orjson.dumps({
    "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello world"},
                 "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3},
})


def _chunk(event: dict[str, Any]) -> bytes:
    data = b"data: " + orjson.dumps(event) + b"\n\n"
    return b"%x\r\n%s\r\n" % (len(data), data)


def _delta(text: str | None, finish: str | None = None) -> dict[str, Any]:
    delta = {} if text is None else {"content": text}
    return {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


class Peer:
    def __init__(self, sock: socket.socket, server: HostileH1Server) -> None:
        self.sock, self.server, self.buf = sock, server, b""

    def read_request(self) -> bool:
        """Read one whole request (head + Content-Length body); False when the client closed."""
        while b"\r\n\r\n" not in self.buf:
            if not self._recv():
                return False
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        while len(self.buf) < length:
            if not self._recv():
                return False
        self.buf = self.buf[length:]
        with self.server.lock:
            self.server.requests += 1
        return True

    def _recv(self) -> bool:
        try:
            data = self.sock.recv(65536)
        except OSError:
            return False
        self.buf += data
        return bool(data)

    def send(self, data: bytes) -> None:
        with contextlib.suppress(OSError):
            self.sock.sendall(data)

    def answer(self) -> None:
        self.send(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
                  % (len(ANSWER), ANSWER))


def answer_properly(peer: Peer) -> None:
    while peer.read_request():
        peer.answer()


class HostileH1Server:
    """``first`` runs on the first connection, ``then`` on every later one."""

    def __init__(self, first: Callable[[Peer], None], then: Callable[[Peer], None] = answer_properly) -> None:
        self.first, self.then = first, then
        self.lock = threading.Lock()
        self.connections = 0
        self.requests = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.base_url = f"http://127.0.0.1:{self._listener.getsockname()[1]}/v1"
        self._socks: list[socket.socket] = []

    def __enter__(self) -> HostileH1Server:
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._listener.close()
        for sock in self._socks:
            with contextlib.suppress(OSError):
                sock.close()

    def _accept(self) -> None:
        while True:
            try:
                sock, _ = self._listener.accept()
            except OSError:
                return
            self._socks.append(sock)
            with self.lock:
                self.connections += 1
                script = self.first if self.connections == 1 else self.then
            threading.Thread(target=self._run, args=(script, sock), daemon=True).start()

    def _run(self, script: Callable[[Peer], None], sock: socket.socket) -> None:
        try:
            script(Peer(sock, self))
        finally:
            with contextlib.suppress(OSError):
                sock.close()


# -- scripts: each breaks the protocol once, on the first connection ------------------------


def _garbage_status_line(peer: Peer) -> None:
    peer.read_request()
    peer.send(b"SSH-2.0-OpenSSH_9.2p1\r\n")
    time.sleep(30)  # and keeps the connection open: only the parser can end the wait


def _huge_header(peer: Peer) -> None:
    peer.read_request()
    peer.send(b"HTTP/1.1 200 OK\r\nx-big: " + b"a" * (200 * 1024))
    time.sleep(30)


def _short_body(peer: Peer) -> None:
    peer.read_request()
    peer.send(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n"
              + ANSWER[:10])


def _bad_chunk(peer: Peer) -> None:
    peer.read_request()
    peer.send(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n"
              b"zz\r\n")
    time.sleep(30)


def _conflicting_lengths(peer: Peer) -> None:
    peer.read_request()
    peer.send(b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\ncontent-length: 7\r\n\r\nhello")
    time.sleep(30)


def _close_without_answer(peer: Peer) -> None:
    peer.read_request()


SCRIPTS: dict[str, tuple[Callable[[Peer], None], str]] = {
    "garbage status line": (_garbage_status_line, "not an HTTP/1.x status line"),
    "huge header": (_huge_header, "response head over 65536 bytes"),
    "body shorter than Content-Length": (_short_body, "after 10 of 1000 body bytes"),
    "bad chunk size": (_bad_chunk, "bad chunk-size line"),
    "conflicting Content-Length": (_conflicting_lengths, "conflicting Content-Length"),
    "closed without an answer": (_close_without_answer, "without sending a response"),
}


def _client(drive: Drive, base_url: str, **kw: Any) -> Any:
    return drive.client(base_url=base_url, api_key="k", timeout=kw.pop("timeout", 20), max_retries=0,
                        http2=False, **kw)


def _calls(drive: Drive, base_url: str, n: int = 2, stream: bool = False, **kw: Any) -> list[Any]:
    c = _client(drive, base_url, **kw)
    out: list[Any] = []
    for _ in range(n):
        try:
            if stream:
                out.append("".join(ch.choices[0].delta.content or "" for ch in
                                   drive.iterate(drive(c.chat.completions.create(model="m", messages=MSG,
                                                                                 stream=True)))))
            else:
                out.append(drive(c.chat.completions.create(model="m", messages=MSG)))
        except llmclient.APIError as exc:
            out.append(exc)
    drive(c.close())
    return out


@pytest.fixture(autouse=True)
def _fresh_transports() -> Iterator[None]:
    # Every server here is new, but its port may repeat one an earlier test's pool holds.
    llmclient.close_all()
    yield
    llmclient.close_all()


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_a_broken_response_fails_the_call_at_once_and_the_next_call_works(drive: Drive, name: str) -> None:
    script, why = SCRIPTS[name]
    with HostileH1Server(script) as server:
        first, second = _calls(drive, server.base_url)
        connections = server.connections
    assert isinstance(first, llmclient.APIConnectionError), first
    assert not isinstance(first, llmclient.APITimeoutError), f"waited out the read timeout: {first}"
    assert why in str(first)
    assert first.trace_id and first.trace_id in str(first)
    assert second.choices[0].message.content == "Hello world"
    assert connections == 2  # the broken connection was not used again


def _stream_cut_mid_body(peer: Peer) -> None:
    peer.read_request()
    peer.send(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
              + _chunk(_delta("Hel")) + _chunk(_delta("lo")))
    time.sleep(0.2)


def _stream_properly(peer: Peer) -> None:
    while peer.read_request():
        peer.send(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
                  + _chunk(_delta("Hello")) + _chunk(_delta(" world", "stop"))
                  + b"%x\r\ndata: [DONE]\n\n\r\n0\r\n\r\n" % len(b"data: [DONE]\n\n"))


def test_a_stream_cut_mid_body_fails_naming_it_and_the_next_stream_works(drive: Drive) -> None:
    with HostileH1Server(_stream_cut_mid_body, _stream_properly) as server:
        first, second = _calls(drive, server.base_url, stream=True)
    assert isinstance(first, llmclient.APIConnectionError), first
    assert "inside a chunked body" in str(first) and first.trace_id in str(first)
    assert second == "Hello world"


def _answer_then_close_idle(peer: Peer) -> None:
    peer.read_request()
    peer.answer()  # keep-alive, by all it says
    time.sleep(0.3)  # then closes it while the client holds it idle (uvicorn does after 5 s)


def test_an_idle_connection_the_server_closed_is_dropped_without_wasting_a_request(drive: Drive) -> None:
    with HostileH1Server(_answer_then_close_idle) as server:
        c = _client(drive, server.base_url)
        first = drive(c.chat.completions.create(model="m", messages=MSG))
        drive.sleep(0.8)
        second = drive(c.chat.completions.create(model="m", messages=MSG))
        drive(c.close())
        requests, connections = server.requests, server.connections
    assert first.choices[0].message.content == second.choices[0].message.content == "Hello world"
    assert (requests, connections) == (2, 2)  # none sent into the closed connection


def _answer_with_trailing_garbage(peer: Peer) -> None:
    peer.read_request()
    peer.send(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%sEXTRA"
              % (len(ANSWER), ANSWER))
    time.sleep(30)


def test_bytes_past_content_length_close_the_connection_and_the_answer_stands(drive: Drive) -> None:
    with HostileH1Server(_answer_with_trailing_garbage) as server:
        first, second = _calls(drive, server.base_url)
        connections = server.connections
    assert first.choices[0].message.content == second.choices[0].message.content == "Hello world"
    assert connections == 2


def _slow_stream(peer: Peer) -> None:
    peer.read_request()
    peer.send(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
              + _chunk(_delta("Hello")))
    time.sleep(30)


def test_a_stream_closed_early_closes_its_connection_and_the_next_call_opens_another(drive: Drive) -> None:
    with HostileH1Server(_slow_stream) as server:
        c = _client(drive, server.base_url)
        s = drive(c.chat.completions.create(model="m", messages=MSG, stream=True))
        (chunk,) = drive.iterate(s, limit=1)
        assert chunk.choices[0].delta.content == "Hello"
        drive(s.close())
        second = drive(c.chat.completions.create(model="m", messages=MSG))
        drive(c.close())
        connections = server.connections
    assert second.choices[0].message.content == "Hello world"
    assert connections == 2  # the unfinished response's connection was not reused
