"""A tiny in-process TCP server that `measure_network` talks to through the forwarder.

Protocol (one command per connection, chosen by the first byte):
- `E`: echo every byte back until EOF (RTT probes).
- `S` + 8-byte big-endian n: send n bytes (download probe).
- `K` + 8-byte big-endian n: read n bytes, reply with two big-endian doubles, the
  time.monotonic() of the first and last read, and the length of the first read (upload
  probe; same process, so the same clock as the client).
"""

from __future__ import annotations

import socket
import struct
import threading
import time

__all__ = ["ProbeServer"]

_CHUNK = 256 * 1024


class ProbeServer:
    """Serve the probe protocol on `host`:random, inside network namespace `netns` if given."""

    def __init__(self, host: str = "127.0.0.1", *, netns: str | None = None) -> None:
        self.host = host
        self.netns = netns
        self.address: tuple[str, int] = (host, 0)
        self._sock: socket.socket | None = None
        self._error: BaseException | None = None
        self._ready = threading.Event()
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._accept_loop, name="netem-probe", daemon=True)

    def __enter__(self) -> ProbeServer:
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            raise self._error
        return self

    def __exit__(self, *exc: object) -> None:
        self._closed.set()
        if self._sock is not None:
            # shutdown() wakes the blocked accept() on Linux; close() alone would not.
            try:
                self._sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self._sock.close()
        self._thread.join(timeout=5)

    def _accept_loop(self) -> None:
        try:
            if self.netns is not None:
                # Only this thread moves; sockets it creates (and their accepted peers)
                # belong to the namespace, the rest of the process stays where it was.
                from ._netns import enter_netns

                enter_netns(self.netns)
            self._sock = socket.create_server((self.host, 0), backlog=128)
            self.address = self._sock.getsockname()[:2]
        except BaseException as exc:
            self._error = exc
            return
        finally:
            self._ready.set()
        while not self._closed.is_set():
            try:
                assert self._sock is not None
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            try:
                command = _recv_exact(conn, 1)
                if command == b"E":
                    while data := conn.recv(_CHUNK):
                        conn.sendall(data)
                elif command == b"S":
                    (n,) = struct.unpack(">Q", _recv_exact(conn, 8))
                    block = b"\xa5" * min(n, _CHUNK)
                    while n > 0:
                        conn.sendall(block[: min(n, _CHUNK)])
                        n -= min(n, _CHUNK)
                elif command == b"K":
                    (n,) = struct.unpack(">Q", _recv_exact(conn, 8))
                    first = last = 0.0
                    first_len = 0
                    while n > 0:
                        data = conn.recv(min(n, _CHUNK))
                        if not data:
                            return
                        last = time.monotonic()
                        if not first:
                            first, first_len = last, len(data)
                        n -= len(data)
                    conn.sendall(struct.pack(">ddQ", first, last, first_len))
            except OSError:
                return


def _recv_exact(conn: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        data = conn.recv(n - len(buf))
        if not data:
            raise ConnectionError("probe peer closed early")
        buf += data
    return bytes(buf)
