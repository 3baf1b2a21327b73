"""An HTTP/2 connection idle for a while is PINGed before reuse: a flow dropped silently (a NAT
or load balancer that forgets it, no FIN, no RST) must cost a PING timeout and a new
connection, not a call hanging until its read timeout.

A small TCP relay sits between the client and the real reference server; ``freeze()`` makes
it swallow bytes on the connections it has, like a middlebox that lost their state. Through
``OpenAI`` and ``AsyncOpenAI`` (``drive``: each test runs on both).
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import httpx
import pytest

import llmclient
from llmclient.transport import lanes as _transport
from tests._both import Drive

MSG = [{"role": "user", "content": "hi"}]


class Relay:
    def __init__(self, port: int) -> None:
        self.target = port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.frozen: set[int] = set()  # ids of accepted connections that now swallow bytes
        self.accepted = 0
        self._socks: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target))
            self._socks += [client, upstream]
            n = self.accepted
            self.accepted += 1
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(n, a, b), daemon=True).start()

    def _pipe(self, n: int, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                if n not in self.frozen:
                    dst.sendall(data)
        except OSError:
            pass

    def freeze(self) -> None:
        self.frozen.update(range(self.accepted))

    def close(self) -> None:
        self.listener.close()
        for s in self._socks:
            try:
                s.close()
            except OSError:
                pass


@pytest.fixture(scope="module")
def model(ref_server: Any) -> str:
    return str(httpx.get(ref_server.base_url + "/models", timeout=10).json()["data"][0]["id"])


@pytest.fixture
def relay(ref_server: Any) -> Any:
    r = Relay(ref_server.port)
    yield r
    r.close()


def _age_connections(drive: Drive, client: Any, seconds: float) -> None:
    """Pretend every connection of this client's transport has been idle ``seconds`` (the async
    client's transport is its loop's, reached from within that loop)."""
    def age() -> None:
        for rec in client._transport._origins.values():
            for lane in rec.lanes:
                for conn in lane.transport._conns:
                    conn.last_used -= seconds

    async def age_in_loop() -> None:
        age()

    if drive.is_async:
        drive(age_in_loop())
    else:
        age()


def test_idle_connection_that_answers_ping_is_reused(drive: Drive, relay: Relay, model: str) -> None:
    c = drive.client(base_url=f"http://127.0.0.1:{relay.port}/v1", api_key="k", max_retries=0)
    drive(c.chat.completions.create(model=model, messages=MSG, max_tokens=2))
    _age_connections(drive, c, _transport.PING_AFTER_IDLE_S + 1)
    r = drive(c.chat.completions.create(model=model, messages=MSG, max_tokens=2))
    assert r.timings.connection_reused is True and relay.accepted == 1
    llmclient.close_all()


def test_silently_dropped_connection_is_replaced_after_a_ping_timeout(drive: Drive, relay: Relay,
                                                                       model: str) -> None:
    c = drive.client(base_url=f"http://127.0.0.1:{relay.port}/v1", api_key="k", max_retries=0, timeout=60)
    drive(c.chat.completions.create(model=model, messages=MSG, max_tokens=2))
    relay.freeze()
    _age_connections(drive, c, _transport.PING_AFTER_IDLE_S + 1)
    start = time.monotonic()
    r = drive(c.chat.completions.create(model=model, messages=MSG, max_tokens=2))
    took = time.monotonic() - start
    assert r.choices[0].message.content
    assert r.timings.connection_reused is False and relay.accepted == 2
    assert took < 30, "the call waited for its read timeout on the dead connection"
    llmclient.close_all()
