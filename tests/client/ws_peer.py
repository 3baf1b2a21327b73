"""A WebSocket peer on a raw socket, for what no well-behaved server does: a malformed frame,
text that is not UTF-8, a message in fragments, pings left unanswered, a 426. One connection
per test, served on a thread; ``handler(conn, key)`` runs after the request head was read."""

from __future__ import annotations

import base64
import hashlib
import socket
import struct
import threading
from collections.abc import Callable
from typing import Any

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"  # RFC 6455 section 1.3
TEXT, BINARY, CONT, CLOSE, PING, PONG = 0x1, 0x2, 0x0, 0x8, 0x9, 0xA


def accept_value(key: str) -> str:
    return base64.b64encode(hashlib.sha1(key.encode() + GUID).digest()).decode()


def frame(opcode: int, payload: bytes = b"", fin: bool = True, rsv: int = 0) -> bytes:
    """A server frame (unmasked)."""
    head = bytes([(0x80 if fin else 0) | (rsv << 4) | opcode])
    n = len(payload)
    if n < 126:
        head += bytes([n])
    elif n < 65536:
        head += bytes([126]) + struct.pack("!H", n)
    else:
        head += bytes([127]) + struct.pack("!Q", n)
    return head + payload


def read_frame(conn: socket.socket) -> tuple[int, bytes]:
    """One client frame (masked): (opcode, payload)."""
    def exact(n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = conn.recv(n - len(data))
            if not chunk:
                raise EOFError
            data += chunk
        return data

    b0, b1 = exact(2)
    n = b1 & 0x7F
    if n == 126:
        n = struct.unpack("!H", exact(2))[0]
    elif n == 127:
        n = struct.unpack("!Q", exact(8))[0]
    mask = exact(4)
    data = bytes(b ^ mask[i % 4] for i, b in enumerate(exact(n)))
    return b0 & 0x0F, data


def switching(key: str) -> bytes:
    return (f"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Accept: {accept_value(key)}\r\n\r\n").encode()


class RawPeer:
    def __init__(self, handler: Callable[[socket.socket, str], Any]) -> None:
        self.handler = handler
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.port = self.sock.getsockname()[1]
        self.request = b""
        self.seen: list[tuple[int, bytes]] = []  # client frames the handler read
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/v1/responses"

    def _serve(self) -> None:
        try:
            conn, _ = self.sock.accept()
        except OSError:
            return
        with conn:
            try:
                while b"\r\n\r\n" not in self.request:
                    chunk = conn.recv(4096)
                    if not chunk:
                        return
                    self.request += chunk
                key = next(line.split(b":", 1)[1].strip().decode()
                           for line in self.request.split(b"\r\n")
                           if line.lower().startswith(b"sec-websocket-key:"))
                self.handler(conn, key)
            except (OSError, EOFError):
                pass
            except BaseException as exc:  # the test reads it
                self.error = exc

    def read(self, conn: socket.socket) -> tuple[int, bytes]:
        got = read_frame(conn)
        self.seen.append(got)
        return got

    def close(self) -> None:
        self.sock.close()
        self.thread.join(10)
