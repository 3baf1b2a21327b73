"""Waiting for a connection is its own phase: its own limit (httpx's ``Timeout.pool``, not the
connect timeout: openai-python #2539) and its own timing (``timings.pool_wait_ms``).

HTTP/1.1: a pool at its cap (1 connection here) makes the second call wait for the first's
connection. HTTP/2: a call that finds another one opening the lane's connection waits for it
(a relay holds the TLS handshake for a while). On ``OpenAI`` and ``AsyncOpenAI`` (``drive``),
against the reference server. No duration is asserted beyond "waited" / "did not".
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

import llmclient
from llmclient.transport import lanes
from tests._both import Drive

MSG = [{"role": "user", "content": "hi"}]


@pytest.fixture(scope="module")
def model(ref_server: Any) -> str:
    return str(httpx.get(ref_server.base_url + "/models", timeout=10).json()["data"][0]["id"])


def _calls(drive: Drive, c: Any, model: str, first_headers: dict[str, str]) -> list[Any]:
    """Two calls: the first holds its connection (its headers), the second starts 0.1 s later;
    after one call alone, so the connection is open and the origin's protocol known."""
    drive(c.chat.completions.create(model=model, messages=MSG, max_tokens=2))
    def first() -> Any:
        return c.chat.completions.create(model=model, messages=MSG, max_tokens=2, extra_headers=first_headers)

    def second() -> Any:
        return c.chat.completions.create(model=model, messages=MSG, max_tokens=2)

    if not drive.is_async:
        def late() -> Any:
            time.sleep(0.1)
            return _catch(second)
        return drive.gather([lambda: _catch(first), late], workers=2)

    import asyncio

    async def both() -> list[Any]:
        a = asyncio.ensure_future(first())
        await asyncio.sleep(0.1)
        b = asyncio.ensure_future(second())
        return list(await asyncio.gather(a, b, return_exceptions=True))

    return drive(both())


@pytest.fixture
def one_h1_connection(monkeypatch: pytest.MonkeyPatch) -> float:
    """HTTP/1.1 pools made from now on hold one connection; a connection age no other test
    uses, so the client gets a transport (and a pool) of its own."""
    monkeypatch.setattr(lanes, "H1_MAX_CONNECTIONS", 1)
    return 100.0 + time.monotonic() % 100


def test_an_http1_call_queued_for_a_connection_is_not_on_its_connect_timer(
        drive: Drive, ref_server_h1: Any, model: str, one_h1_connection: float) -> None:
    c = drive.client(base_url=ref_server_h1.base_url, api_key="k", max_retries=0,
                     timeout=httpx.Timeout(30, connect=0.2, pool=30), max_connection_age=one_h1_connection)
    held, queued = _calls(drive, c, model, {"x-fault": "stall_ms=700"})
    assert not isinstance(queued, BaseException), queued  # waited ~0.6 s, past connect=0.2: fine
    assert held.timings.pool_wait_ms == 0.0
    assert queued.timings.pool_wait_ms > 0.0
    assert queued.timings.connection_reused is True  # it got the first call's connection


def test_an_http1_call_past_its_pool_timeout_fails_naming_the_pool(
        drive: Drive, ref_server_h1: Any, model: str, one_h1_connection: float) -> None:
    c = drive.client(base_url=ref_server_h1.base_url, api_key="k", max_retries=0,
                     timeout=httpx.Timeout(30, pool=0.1), max_connection_age=one_h1_connection)
    held, queued = _calls(drive, c, model, {"x-fault": "stall_ms=1500"})
    assert held.choices[0].message.content is not None
    assert isinstance(queued, llmclient.APITimeoutError)
    assert "pool phase" in str(queued)


class _SlowHandshake:
    """A TCP relay to ``port`` that holds the server's first bytes (its TLS ServerHello) for
    ``hold_s``: connecting through it takes that long."""

    def __init__(self, port: int, hold_s: float) -> None:
        self.port_to, self.hold_s = port, hold_s
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self._socks: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.port_to))
            self._socks += [client, upstream]
            threading.Thread(target=self._pipe, args=(client, upstream, 0.0), daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, client, self.hold_s), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket, hold: float) -> None:
        try:
            while data := src.recv(65536):
                if hold:
                    time.sleep(hold)
                    hold = 0.0
                dst.sendall(data)
        except OSError:
            pass
        finally:
            try:
                dst.shutdown(socket.SHUT_WR)
            except OSError:
                pass

    def close(self) -> None:
        self.listener.close()
        for s in self._socks:
            s.close()


@pytest.fixture
def slow_tls(ref_server_tls: Any) -> Iterator[_SlowHandshake]:
    relay = _SlowHandshake(ref_server_tls.port, 0.6)
    yield relay
    relay.close()


def _h2_calls(drive: Drive, c: Any, model: str) -> list[Any]:
    def one() -> Any:
        return c.chat.completions.create(model=model, messages=MSG, max_tokens=2)
    if drive.is_async:
        import asyncio

        async def both() -> list[Any]:
            return list(await asyncio.gather(one(), one(), return_exceptions=True))
        return drive(both())
    return drive.gather([lambda: _catch(one), lambda: _catch(one)], workers=2)


def _catch(fn: Any) -> Any:
    try:
        return fn()
    except llmclient.APIError as exc:
        return exc


def test_an_http2_call_waiting_for_another_calls_connect_reports_its_wait(
        drive: Drive, ref_server_tls: Any, slow_tls: _SlowHandshake, model: str) -> None:
    c = drive.client(base_url=f"https://localhost:{slow_tls.port}/v1", api_key="k", max_retries=0,
                     verify=ref_server_tls.ca_path, timeout=httpx.Timeout(30, connect=10, pool=30),
                     max_connection_age=200.0 + time.monotonic() % 100)
    results = _h2_calls(drive, c, model)
    assert all(not isinstance(r, BaseException) for r in results), results
    waits = sorted(r.timings.pool_wait_ms for r in results)
    assert waits[0] == 0.0 and waits[1] > 0.0  # one connected, the other waited for it
    assert sorted(r.timings.connection_reused for r in results) == [False, True]


def test_an_http2_call_past_its_pool_timeout_while_another_connects_fails_naming_the_pool(
        drive: Drive, ref_server_tls: Any, slow_tls: _SlowHandshake, model: str) -> None:
    c = drive.client(base_url=f"https://localhost:{slow_tls.port}/v1", api_key="k", max_retries=0,
                     verify=ref_server_tls.ca_path, timeout=httpx.Timeout(30, connect=10, pool=0.1),
                     max_connection_age=300.0 + time.monotonic() % 100)
    results = _h2_calls(drive, c, model)
    errors = [r for r in results if isinstance(r, BaseException)]
    assert len(errors) == 1 and isinstance(errors[0], llmclient.APITimeoutError), results
    assert "pool phase" in str(errors[0])
