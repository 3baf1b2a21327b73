"""A misbehaving HTTP/2 server for the tests: raw frames on a real socket, one script per
connection.

``HostileH2Server(first, then)`` listens on loopback; the first connection runs the script
``first``, every later one ``then`` (by default :func:`answer_properly`, so a test can check
that the client's next call succeeds on a fresh connection). A script is given a
:class:`Peer`: the socket, a frame reader that has already consumed the client's preface, and
helpers to send frames. The server counts connections and requests (HEADERS frames that opened
a stream) so a test can tell whether a request was sent twice.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import hpack
import orjson

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = range(10)
END_STREAM, ACK, END_HEADERS = 0x1, 0x1, 0x4

ANSWER = orjson.dumps({
    "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello world"},
                 "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3},
})


def frame(ftype: int, flags: int, stream_id: int, payload: bytes = b"") -> bytes:
    n = len(payload)
    return struct.pack(">BHBBI", n >> 16, n & 0xFFFF, ftype, flags, stream_id) + payload


@dataclass
class Peer:
    sock: socket.socket
    server: HostileH2Server
    encoder: hpack.Encoder = field(default_factory=hpack.Encoder)
    buf: bytes = b""

    def read_frame(self) -> tuple[int, int, int, bytes] | None:
        """The client's next frame (type, flags, stream id, payload); None when it closed."""
        while len(self.buf) < 9 or len(self.buf) < 9 + int.from_bytes(self.buf[:3], "big"):
            try:
                chunk = self.sock.recv(65536)
            except OSError:
                return None
            if not chunk:
                return None
            self.buf += chunk
        n = int.from_bytes(self.buf[:3], "big")
        ftype, flags, sid = self.buf[3], self.buf[4], struct.unpack(">I", self.buf[5:9])[0] & 0x7FFFFFFF
        payload, self.buf = self.buf[9:9 + n], self.buf[9 + n:]
        if ftype == HEADERS:
            with self.server.lock:
                self.server.requests += 1
        return ftype, flags, sid, payload

    def read_request(self) -> int | None:
        """Read frames until a request is complete (END_STREAM); its stream id."""
        while (f := self.read_frame()) is not None:
            ftype, flags, sid, _ = f
            if ftype in (HEADERS, DATA) and flags & END_STREAM:
                return sid
        return None

    def send(self, *frames: bytes) -> None:
        with contextlib.suppress(OSError):
            self.sock.sendall(b"".join(frames))

    def settings(self) -> None:
        self.send(frame(SETTINGS, 0, 0, struct.pack(">HI", 3, 100)), frame(SETTINGS, ACK, 0))

    def headers_block(self, status: int = 200) -> bytes:
        return bytes(self.encoder.encode([(":status", str(status)), ("content-type", "application/json")]))

    def answer(self, sid: int) -> None:
        self.send(frame(HEADERS, END_HEADERS, sid, self.headers_block()), frame(DATA, END_STREAM, sid, ANSWER))


def answer_properly(peer: Peer) -> None:
    """A well-behaved HTTP/2 server: answers every request with :data:`ANSWER`."""
    peer.settings()
    while (sid := peer.read_request()) is not None:
        peer.answer(sid)


class HostileH2Server:
    def __init__(self, first: Callable[[Peer], None],
                 then: Callable[[Peer], None] = answer_properly) -> None:
        self.scripts = (first, then)
        self.lock = threading.Lock()
        self.connections = 0
        self.requests = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._threads: list[threading.Thread] = []
        self._socks: list[socket.socket] = []
        self._closed = False

    def __enter__(self) -> HostileH2Server:
        t = threading.Thread(target=self._accept, daemon=True)
        t.start()
        self._threads.append(t)
        return self

    def __exit__(self, *exc: object) -> None:
        self._closed = True
        self._listener.close()
        for s in self._socks:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                sock, _ = self._listener.accept()
            except OSError:
                return
            self._socks.append(sock)
            with self.lock:
                index = self.connections
                self.connections += 1
            t = threading.Thread(target=self._serve, args=(sock, index), daemon=True)
            t.start()

    def _serve(self, sock: socket.socket, index: int) -> None:
        peer = Peer(sock, self)
        got = b""
        while len(got) < len(PREFACE):
            try:
                chunk = sock.recv(len(PREFACE) - len(got))
            except OSError:
                return
            if not chunk:
                return
            got += chunk
        try:
            self.scripts[min(index, 1)](peer)
        finally:
            with contextlib.suppress(OSError):
                sock.close()
