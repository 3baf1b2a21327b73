"""A request that provably never reached the server goes to another connection at once, outside
``max_retries``; one that may have reached it does not (``transport/lanes.py``, "Never sent,
placed again").

The race behind the nginx GOAWAY failure (tests/interop/test_nginx.py): the pool chose a
connection, then the server's GOAWAY was read (by another thread's read, or with a PING's
answer) before the request's stream opened, and the driver raised a plain "connection not
usable" that no retry rule could read. Here the GOAWAY comes in the same packet as the answer
to the PING the pool sends before reusing an idle connection, so the window is hit every time.
Every test runs on ``OpenAI`` and ``AsyncOpenAI`` (``drive``) with ``max_retries=0``.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import threading
import time
from typing import Any

import httpx
import pytest

import llmclient
from llmclient.transport import lanes
from llmclient.transport.http1 import AsyncConnection as H1AsyncConnection
from llmclient.transport.http1 import SyncConnection as H1SyncConnection
from llmclient.transport.http1_parser import ClosedBeforeSent
from llmclient.transport.http2 import HTTP2ProtocolError
from llmclient.transport.http2 import pool as h2pool
from llmclient.transport.http2.errors import ConnectionUnusable
from tests._both import Drive

from .hostile_h2 import ACK, GOAWAY, PING, RST_STREAM, HostileH2Server, Peer, answer_properly, frame

MSG = [{"role": "user", "content": "hi"}]
REFUSED_STREAM = 0x7


def _client(drive: Drive, server: HostileH2Server) -> Any:
    return drive.client(base_url=server.base_url, api_key="k", timeout=20, max_retries=0)


def _goaway_with_the_ping_answer(peer: Peer) -> None:
    """Answer the first request; to the PING the pool sends before reusing the connection,
    answer PING ACK and GOAWAY(last_stream_id = that first stream) in one write."""
    peer.settings()
    sid = peer.read_request()
    assert sid is not None
    peer.answer(sid)
    while (f := peer.read_frame()) is not None:
        ftype, flags, _, payload = f
        if ftype == PING and not flags & ACK:
            peer.send(frame(PING, ACK, 0, payload) + frame(GOAWAY, 0, 0, struct.pack(">II", sid, 0)))
            break
    while peer.read_frame() is not None:
        pass


def test_a_connection_that_read_goaway_after_the_pool_chose_it_costs_no_retry(
        drive: Drive, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(h2pool, "PING_AFTER_IDLE_S", 0.0)  # every reuse of an idle connection PINGs
    with HostileH2Server(_goaway_with_the_ping_answer, answer_properly) as server:
        c = _client(drive, server)
        first = drive(c.chat.completions.create(model="m", messages=MSG))
        second = drive(c.chat.completions.create(model="m", messages=MSG))
    assert first.choices[0].message.content == second.choices[0].message.content == "Hello world"
    assert second.timings.retries == 0  # placed on a new connection inside the transport
    assert second.timings.replaced == 1 and first.timings.replaced == 0
    assert second.timings.connection_reused is False
    assert server.connections == 2


def _refuse_first(peer: Peer) -> None:
    """RST_STREAM(REFUSED_STREAM) the first request (RFC 9113 section 8.7: not processed), then
    answer the rest on the same connection."""
    peer.settings()
    sid = peer.read_request()
    assert sid is not None
    peer.send(frame(RST_STREAM, 0, sid, struct.pack(">I", REFUSED_STREAM)))
    while (sid := peer.read_request()) is not None:
        peer.answer(sid)


def test_a_refused_stream_goes_again_at_once_without_a_retry(drive: Drive) -> None:
    with HostileH2Server(_refuse_first) as server:
        answer = drive(_client(drive, server).chat.completions.create(model="m", messages=MSG))
    assert answer.choices[0].message.content == "Hello world"
    assert answer.timings.retries == 0 and answer.timings.replaced == 1
    assert server.requests == 2 and server.connections == 1


def _refuse_all(peer: Peer) -> None:
    peer.settings()
    while (sid := peer.read_request()) is not None:
        peer.send(frame(RST_STREAM, 0, sid, struct.pack(">I", REFUSED_STREAM)))


def test_a_server_that_refuses_every_stream_gets_a_bounded_number_of_resends(drive: Drive) -> None:
    # The transport's placements and the pipeline's free re-sends share one bound: the request
    # goes 1 + MAX_REPLACEMENTS times, never MAX_REPLACEMENTS x MAX_FREE_RETRIES.
    with HostileH2Server(_refuse_all, _refuse_all) as server:
        c = _client(drive, server)
        with pytest.raises(llmclient.APIConnectionError) as info:
            drive(c.chat.completions.create(model="m", messages=MSG))
        time.sleep(0.2)  # the server thread counts the last HEADERS
    assert "REFUSED_STREAM" in str(info.value)
    assert server.requests == 1 + lanes.MAX_REPLACEMENTS


# -- the drivers' typed verdicts --------------------------------------------------------------------


def _goaway_at_once(peer: Peer) -> None:
    peer.settings()
    peer.send(frame(GOAWAY, 0, 0, struct.pack(">II", 0, 0)))
    while peer.read_frame() is not None:
        pass


def _request(url: str) -> httpx.Request:
    return httpx.Request("POST", url, content=b"{}", extensions={"timeout": {"read": 5, "write": 5, "connect": 5}})


def test_the_sync_driver_refuses_a_stream_on_a_connection_that_read_goaway() -> None:
    from llmclient.transport.http2.sync_driver import connect_sync

    with HostileH2Server(_goaway_at_once) as server:
        request = _request(server.base_url + "/chat/completions")
        conn = connect_sync(request.url, lanes.shared_ssl_context(), request)
        deadline = time.monotonic() + 10
        while conn.state.goaway_last_id is None and time.monotonic() < deadline:
            conn.check_idle()  # reads the GOAWAY, as another thread's read would
            time.sleep(0.01)
        with pytest.raises(HTTP2ProtocolError) as info:
            conn.request(request)
        conn.close()
        time.sleep(0.1)
    assert isinstance(info.value.error, ConnectionUnusable) and info.value.error.reason == "goaway"
    assert info.value.unprocessed and lanes.never_sent(info.value)
    assert server.requests == 0  # nothing of it was written


def test_the_async_driver_refuses_a_stream_on_a_connection_that_read_goaway() -> None:
    from llmclient.transport.http2.async_driver import connect_async

    async def go(server: HostileH2Server) -> BaseException:
        request = _request(server.base_url + "/chat/completions")
        conn = await connect_async(request.url, lanes.shared_ssl_context(), request)
        deadline = time.monotonic() + 10
        while conn.state.goaway_last_id is None and time.monotonic() < deadline:
            await asyncio.sleep(0.01)  # the event loop feeds the GOAWAY in
        try:
            await conn.request(request)
        except HTTP2ProtocolError as exc:
            return exc
        finally:
            await conn.aclose()
        raise AssertionError("the request was placed on a connection that read GOAWAY")

    with HostileH2Server(_goaway_at_once) as server:
        err = asyncio.run(go(server))
        time.sleep(0.1)
    assert isinstance(err, HTTP2ProtocolError) and isinstance(err.error, ConnectionUnusable)
    assert err.unprocessed and server.requests == 0


class _Listener:
    """A TCP listener that accepts one connection and records every byte it receives."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.received = b""
        self.conn: socket.socket | None = None
        self.accepted = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        self.conn, _ = self.sock.accept()
        self.accepted.set()

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
        self.sock.close()


def test_an_http1_connection_reset_before_the_request_is_written_says_unprocessed() -> None:
    listener = _Listener()
    sock = socket.create_connection(("127.0.0.1", listener.port))
    assert listener.accepted.wait(10) and listener.conn is not None
    listener.conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    listener.conn.close()  # RST: the server is gone
    listener.conn = None
    time.sleep(0.2)  # the RST arrives
    pool = llmclient.transport.http1.SyncPool(lambda _r: sock, 1, 30.0)
    conn = H1SyncConnection(sock, pool)
    with pytest.raises(ClosedBeforeSent) as info:
        conn.request(_request(f"http://127.0.0.1:{listener.port}/v1/chat/completions"))
    listener.close()
    assert info.value.unprocessed and lanes.never_sent(info.value)
    assert conn.closed


def test_an_async_http1_connection_whose_fin_arrived_writes_nothing() -> None:
    listener = _Listener()
    got: list[bytes] = []

    async def go() -> BaseException:
        loop = asyncio.get_running_loop()
        pool = llmclient.transport.http1.AsyncPool(lambda *_: None, 1, 30.0)
        transport, conn = await loop.create_connection(lambda: H1AsyncConnection(pool), "127.0.0.1", listener.port)
        assert listener.accepted.wait(10) and listener.conn is not None
        listener.conn.shutdown(socket.SHUT_WR)  # FIN: the server closes its side
        deadline = time.monotonic() + 10
        while not conn.closed and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        try:
            await conn.request(_request(f"http://127.0.0.1:{listener.port}/v1/chat/completions"))
        except ClosedBeforeSent as exc:
            return exc
        finally:
            transport.close()
        raise AssertionError("a request was written to a connection whose FIN had arrived")

    err = asyncio.run(go())
    assert listener.conn is not None
    listener.conn.settimeout(1)
    try:
        while data := listener.conn.recv(65536):
            got.append(data)
    except OSError:
        pass
    listener.close()
    assert err.unprocessed and b"".join(got) == b""
