"""A server's idle timeout, learned from the closes it makes (``llmclient/transport/idle.py``).

hypercorn closes an HTTP/2 connection idle for its keep-alive timeout with no GOAWAY, so a call
written at that instant fails as "Server disconnected", never provably unprocessed (a CI run
failed that way: tests/client/conftest.py). Once two closes agree, the pool stops reusing a
connection idle past 90 % of the timeout. Real servers: hypercorn (sync learns from Linux's
TCP_INFO, async from the event loop), and a raw-socket peer that closes a reused connection
as the call arrives (the race itself, every time). All with ``max_retries=0``, sync and async.
"""

from __future__ import annotations

import contextlib
import socket
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

import llmclient
from llmclient.transport import idle
from llmclient.transport.idle import MARGIN, ServerIdle, reuse_limit, server_idle, since_peer_close
from tests._both import Drive

from .fakeserver import HypercornServer
from .hostile_h2 import HostileH2Server, Peer

MSG = [{"role": "user", "content": "hi"}]
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="TCP_INFO is Linux's")


@pytest.fixture(autouse=True)
def _forget_learned_limits() -> Iterator[None]:
    """What a test taught the process about its server's port is not left for a later server
    that gets the same port."""
    yield
    for record in list(idle._by_origin.values()):
        record._seen.clear()
        record.limit = None


# -- the decision ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("seen", "limit"), [
    ([], None),
    ([5.0], None),  # one close: a restart looks the same
    ([5.0, 5.2], 4.5),
    ([5.2, 5.0, 30.0], 4.5),
    ([2.0, 5.0, 5.1], 4.5),  # a restart at 2 s agrees with nothing
    ([2.0, 9.0], None),
    ([0.01, 0.012], None),  # closes right after a call are not idle timeouts
    ([1.0, 1.2], 0.9),  # 20 % apart: the same timeout
    ([1.0, 1.3], None),
])
def test_reuse_limit(seen: list[float], limit: float | None) -> None:
    got = reuse_limit(seen)
    assert got == pytest.approx(limit) if limit is not None else got is None


def test_server_idle_keeps_the_newest_observations() -> None:
    record = ServerIdle("http://x")
    record.observe(5.0)
    assert record.limit is None and not record.too_idle(100.0)
    record.observe(5.1)
    assert record.limit == pytest.approx(4.5)
    assert record.too_idle(4.6) and not record.too_idle(4.4)
    for _ in range(idle.KEEP):  # the server was reconfigured: only the newest closes count
        record.observe(60.0)
    assert record.limit == pytest.approx(54.0)


def test_one_record_per_origin_per_process() -> None:
    assert server_idle("http://a.example:1") is server_idle("http://a.example:1")
    assert server_idle("http://a.example:1") is not server_idle("http://a.example:2")


@linux_only
def test_since_peer_close_reads_when_the_fin_came() -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    with contextlib.closing(listener), socket.create_connection(listener.getsockname()) as ours:
        theirs, _ = listener.accept()
        ours.sendall(b"x")
        theirs.recv(1)
        theirs.sendall(b"y")
        ours.recv(1)
        time.sleep(0.2)
        before = time.monotonic()
        theirs.close()
        after = time.monotonic()
        assert ours.recv(1) == b""  # the FIN is here
        time.sleep(0.3)
        since = since_peer_close(ours)
        now = time.monotonic()
        assert since is not None
        # kernel jiffies: a few milliseconds either way
        assert now - after - 0.02 <= since <= now - before + 0.02


# -- hypercorn: idle closes with no GOAWAY ----------------------------------------------------------


@pytest.fixture
def short_keep_alive() -> Iterator[HypercornServer]:
    server = HypercornServer(keep_alive_s=0.5).start()
    yield server
    server.stop()


def _origin(base_url: str) -> str:
    return base_url.removesuffix("/v1")


def _learn(drive: Drive, c: Any, record: ServerIdle, gap: float) -> None:
    """Calls ``gap`` s apart, the server closing the connection in each gap, until the limit
    is learned (two closes agreeing: twice, unless the machine's load stretched one)."""
    for _ in range(5):
        assert drive(c.chat.completions.create(model="m", messages=MSG)).choices[0].message.content
        if record.limit is not None:
            return
        drive.sleep(gap)
    pytest.fail(f"no reuse limit learned from {list(record._seen)}")


def test_hypercorn_idle_closes_are_learned_and_never_raced(drive: Drive,
                                                           short_keep_alive: HypercornServer) -> None:
    origin = _origin(short_keep_alive.base_url)
    record = server_idle(origin)
    c = drive.client(base_url=short_keep_alive.base_url, max_retries=0)
    # 1.5 s: the server closes at 0.5 s; the sync pool looks at a connection idle over 1 s
    # (lanes.IDLE_CHECK_AFTER_S) and reads the FIN's time, the async one is told at once
    _learn(drive, c, record, 1.5)
    assert record.limit is not None
    seen = list(record._seen)
    assert all(0.45 <= s < 1.5 for s in seen), seen  # the server's timeout, not our gap
    # calls right after each other still share the connection
    assert drive(c.chat.completions.create(model="m", messages=MSG)).timings.connection_reused is True
    assert drive(c.chat.completions.create(model="m", messages=MSG)).timings.connection_reused is True
    # at the server's timeout, where a reused connection races its close: a new one, every time
    for _ in range(5):
        drive.sleep(record.limit + 0.02)
        r = drive(c.chat.completions.create(model="m", messages=MSG))
        assert r.choices[0].message.content == "Hello world" and r.timings.connection_reused is False


# -- the race itself: the server closes the reused connection as the call arrives -----------------


def _answer_one_then_close(peer: Peer) -> None:
    """Answers a connection's first call; on its next one, closes with no GOAWAY, unanswered
    (what hypercorn does when the call meets its idle timeout)."""
    peer.settings()
    sid = peer.read_request()
    if sid is None:
        return
    peer.answer(sid)
    if peer.read_request() is not None:
        with contextlib.suppress(OSError):
            peer.sock.shutdown(socket.SHUT_RDWR)
        peer.sock.close()


def test_a_call_lost_to_an_idle_close_teaches_the_limit(drive: Drive) -> None:
    with HostileH2Server(_answer_one_then_close, _answer_one_then_close) as server:
        record = server_idle(_origin(server.base_url))
        c = drive.client(base_url=server.base_url, max_retries=0)
        gap, lost = 0.6, 0
        for _ in range(5):
            assert drive(c.chat.completions.create(model="m", messages=MSG)).timings.connection_reused is False
            drive.sleep(gap)
            # the reused connection is closed under the call: lost (never provably
            # unprocessed), and the idle it had is an observation
            with pytest.raises(llmclient.APIConnectionError, match=r"Server disconnected|reset"):
                drive(c.chat.completions.create(model="m", messages=MSG))
            lost += 1
            if record.limit is not None:
                break
        assert record.limit is not None and record.limit <= gap * MARGIN * 1.3 and lost >= 2
        calls = server.requests
        # from now on a connection idle that long is not reused: the call opens a new one
        assert drive(c.chat.completions.create(model="m", messages=MSG)).timings.connection_reused is False
        drive.sleep(gap)
        r = drive(c.chat.completions.create(model="m", messages=MSG))
        assert r.choices[0].message.content == "Hello world" and r.timings.connection_reused is False
        assert server.requests == calls + 2  # each call sent once
