"""One warm socket per handshake, shared by a client's conversations: ``responses.connect()``
conversations that end with nothing in flight leave their socket to the client's next one
(``layers/ws_mode.py`` ``Park``, ``api/_async/ws_connection.py``).

The proof is the server's: over the reference server, a ``store=False`` response lives only in
its socket's memory, so a second conversation can continue it (``previous_response_id``) only
on the same socket, and on another one the server answers ``previous_response_not_found``; over
the ``websockets`` package's own server, the connections it accepted and saw end are counted
there. Each test runs ``[sync]`` and ``[async]``; the decisions have tests of their own without
sockets (time is a number passed in)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

import llmclient
from llmclient.layers.ws_mode import PARK_IDLE_S, REUSE_BEFORE_S, Park, park_key
from tests._ws import CONNECT_KEY, TERMINAL
from tests.conftest import RefServer, start_ref_server, stop_ref_server

pytest.importorskip("websockets")

MODEL = "gpt-4o-mini"
DONE = ("response.completed", "response.incomplete")  # an answer (cut at max_output_tokens or not)


# -- the decisions -----------------------------------------------------------------------------
def test_the_key_keeps_credentials_and_drops_per_trace_headers() -> None:
    url = "wss://api.example/v1/responses"
    a = park_key(url, [("Authorization", "Bearer k1"), ("traceparent", "00-aa-01"), ("x-request-id", "1")])
    b = park_key(url, [("authorization", "Bearer k1"), ("traceparent", "00-bb-01"), ("X-Request-ID", "2")])
    assert a == b
    assert park_key(url, [("authorization", "Bearer k2")]) != a  # another credential
    assert park_key(url + "?x=1", [("authorization", "Bearer k1")]) != a  # another query
    assert park_key(url, [("authorization", "Bearer k1"), ("openai-project", "p")]) != a


def test_the_park_keeps_one_fresh_socket_per_key() -> None:
    park: Park[str] = Park()
    assert park.put(("k",), "s1", opened_at=0.0, now=1.0) == []
    assert park.put(("k",), "s2", opened_at=0.5, now=2.0) == ["s1"]  # the newer is kept
    assert park.take(("other",), now=3.0) == (None, [])
    assert park.take(("k",), now=3.0) == ("s2", [])
    assert park.take(("k",), now=3.0) == (None, [])  # taken: it is the taker's now


def test_the_park_hands_out_nothing_idle_too_long_too_old_or_unusable() -> None:
    park: Park[str] = Park()
    park.put(("k",), "idle", opened_at=0.0, now=0.0)
    assert park.take(("k",), now=PARK_IDLE_S + 1) == (None, ["idle"])
    park.put(("k",), "old", opened_at=0.0, now=REUSE_BEFORE_S - 1)
    assert park.take(("k",), now=REUSE_BEFORE_S + 1) == (None, ["old"])
    assert park.put(("k",), "too-old", opened_at=0.0, now=REUSE_BEFORE_S + 1) == ["too-old"]
    park.put(("k",), "closed", opened_at=0.0, now=1.0)
    assert park.take(("k",), now=2.0, usable=lambda s: False) == (None, ["closed"])
    # an expired socket of another key is given back by whatever touches the park next
    park.put(("a",), "stale", opened_at=0.0, now=0.0)
    assert park.put(("b",), "new", opened_at=PARK_IDLE_S, now=PARK_IDLE_S + 1) == ["stale"]
    assert park.drain() == ["new"] and len(park) == 0


# -- one client's conversations, sync or async, behind one synchronous face --------------------
class Client:
    """An llmclient client (``kind`` "sync" or "async") whose conversations the test opens and
    leaves one by one; the async one runs each step on a loop of its own."""

    def __init__(self, kind: str, base_url: str, api_key: str = CONNECT_KEY) -> None:
        self.loop = asyncio.new_event_loop() if kind == "async" else None
        cls: Any = llmclient.OpenAI if kind == "sync" else llmclient.AsyncOpenAI
        self.client = cls(base_url=base_url, api_key=api_key, max_retries=0)

    def run(self, value: Any) -> Any:
        return value if self.loop is None else self.loop.run_until_complete(value)

    def open(self, **connect: Any) -> tuple[Any, Any]:
        async def make() -> Any:
            return self.client.responses.connect(**connect)

        mgr = self.client.responses.connect(**connect) if self.loop is None else self.run(make())
        return mgr, (mgr.__enter__() if self.loop is None else self.run(mgr.__aenter__()))

    def leave(self, mgr: Any) -> None:
        self.run(mgr.__exit__(None, None, None) if self.loop is None else mgr.__aexit__(None, None, None))

    def ask(self, conn: Any, **body: Any) -> list[Any]:
        self.run(conn.response.create(**body))
        events = []
        while not events or events[-1].type not in (*TERMINAL, "error"):
            events.append(self.run(conn.recv()))
        return events

    def close(self) -> None:
        self.run(self.client.close())
        if self.loop is not None:
            self.loop.close()


@pytest.fixture(scope="module")
def server() -> Iterator[RefServer]:
    s = start_ref_server("--api-key", CONNECT_KEY)
    yield s
    stop_ref_server(s)


@pytest.fixture(params=["sync", "async"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _first(c: Client, **connect: Any) -> str:
    """A conversation whose one ``store=False`` response lives only in its socket's memory; its id."""
    mgr, conn = c.open(**connect)
    events = c.ask(conn, model=MODEL, input="First question.", max_output_tokens=16, store=False)
    c.leave(mgr)
    assert events[-1].type in DONE, events[-1]
    assert conn.reused is False
    return str(events[-1].response.id)


def _continue(c: Client, previous: str, **connect: Any) -> tuple[Any, list[Any]]:
    mgr, conn = c.open(**connect)
    try:
        return conn, c.ask(conn, model=MODEL, input="A follow-up.", max_output_tokens=16, store=False,
                           previous_response_id=previous)
    finally:
        c.leave(mgr)


def test_the_next_conversation_takes_the_socket_the_server_remembers(server, kind) -> None:
    c = Client(kind, server.base_url)
    try:
        previous = _first(c)
        conn, events = _continue(c, previous)
        assert conn.reused is True
        assert events[-1].type in DONE, events[-1]  # found in the socket's memory
        assert events[-1].response.previous_response_id == previous
    finally:
        c.close()


def test_reuse_false_opens_a_socket_of_its_own(server, kind) -> None:
    # the control: on a new socket the server no longer has the store=False response
    c = Client(kind, server.base_url)
    try:
        previous = _first(c, reuse=False)
        conn, events = _continue(c, previous, reuse=False)
        assert conn.reused is False
        assert events[-1].type == "error" and events[-1].error.code == "previous_response_not_found"
    finally:
        c.close()


def test_another_handshake_gets_another_socket(server, kind) -> None:
    c = Client(kind, server.base_url)
    try:
        previous = _first(c)
        conn, events = _continue(c, previous, extra_headers={"OpenAI-Project": "proj_other"})
        assert conn.reused is False
        assert events[-1].type == "error" and events[-1].error.code == "previous_response_not_found"
    finally:
        c.close()


def test_a_conversation_left_mid_response_does_not_leave_its_socket(server, kind) -> None:
    c = Client(kind, server.base_url)
    try:
        mgr, conn = c.open()
        c.run(conn.response.create(model=MODEL, input="A long answer.", max_output_tokens=64, store=False))
        assert c.run(conn.recv()).type == "response.created"
        c.leave(mgr)  # with the response still running: its events would reach the next one
        mgr, conn = c.open()
        events = c.ask(conn, model=MODEL, input="Again.", max_output_tokens=16, store=False)
        c.leave(mgr)
        assert conn.reused is False
        assert [e.type for e in events].count("response.created") == 1 and events[-1].type in DONE
    finally:
        c.close()


def test_an_explicit_close_code_closes_the_socket(server, kind) -> None:
    c = Client(kind, server.base_url)
    try:
        mgr, conn = c.open()
        c.ask(conn, model=MODEL, input="Hi.", max_output_tokens=16, store=False)
        c.run(conn.close(code=1001, reason="going away"))
        c.leave(mgr)
        mgr, conn = c.open()
        c.leave(mgr)
        assert conn.reused is False
    finally:
        c.close()


def test_an_async_client_on_another_event_loop_opens_its_own_socket(server) -> None:
    client = llmclient.AsyncOpenAI(base_url=server.base_url, api_key=CONNECT_KEY, max_retries=0)

    async def conversation() -> tuple[bool, str]:
        async with client.responses.connect() as conn:
            await conn.response.create(model=MODEL, input="Hi.", max_output_tokens=16, store=False)
            async for ev in conn:
                if ev.type in TERMINAL or ev.type == "error":
                    return conn.reused, "answered" if ev.type in DONE else ev.type
        raise AssertionError("the events ended without a terminal one")

    assert asyncio.run(conversation()) == (False, "answered")
    # the first loop is gone, with the socket it kept: the next loop must not take it
    assert asyncio.run(conversation()) == (False, "answered")

    async def twice() -> list[tuple[bool, str]]:
        out = [await conversation(), await conversation()]
        await client.close()
        return out

    assert asyncio.run(twice()) == [(False, "answered"), (True, "answered")]


# -- a server nobody here wrote: the websockets package's own --------------------------------
class Counting:
    """A ``websockets`` server answering each ``response.create`` with a created and a completed
    event; it counts the connections it accepted and those that ended."""

    def __init__(self, close_after_first: bool = False) -> None:
        from websockets.sync.server import serve

        self.accepted, self.ended = 0, threading.Semaphore(0)
        self.lock = threading.Lock()
        self.close_after_first = close_after_first
        self.srv = serve(self.handler, "127.0.0.1", 0)
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self.srv.socket.getsockname()[1]}/v1"

    def handler(self, conn: Any) -> None:
        with self.lock:
            self.accepted += 1
            n = self.accepted
        try:
            for i, _message in enumerate(conn):
                rid = f"resp_{n}_{i}"
                conn.send('{"type": "response.created", "sequence_number": 0, "response": '
                          f'{{"id": "{rid}", "object": "response", "status": "in_progress", "output": []}}}}')
                conn.send('{"type": "response.completed", "sequence_number": 1, "response": '
                          f'{{"id": "{rid}", "object": "response", "status": "completed", "output": []}}}}')
                if self.close_after_first:
                    conn.close(1000)
        finally:
            self.ended.release()

    def stop(self) -> None:
        self.srv.shutdown()


def test_three_conversations_ride_one_connection_and_close_closes_it(kind) -> None:
    peer = Counting()
    c = Client(kind, peer.base_url)
    try:
        for _ in range(3):
            mgr, conn = c.open()
            events = c.ask(conn, model=MODEL, input="Hi.")
            c.leave(mgr)
            assert events[-1].type == "response.completed"
        assert peer.accepted == 1
        assert not peer.ended.acquire(timeout=0.2)  # kept open for the next conversation
        c.close()
        assert peer.ended.acquire(timeout=30)  # the client's close() closed it (a hang guard)
    finally:
        peer.stop()


def test_a_conversation_that_outlives_its_client_closes_its_socket(kind) -> None:
    peer = Counting()
    c = Client(kind, peer.base_url)
    try:
        mgr, conn = c.open()
        c.ask(conn, model=MODEL, input="Hi.")
        c.run(c.client.close())  # the app closed the client first: nothing may be kept for it
        c.leave(mgr)
        assert peer.ended.acquire(timeout=30)  # a hang guard: the close is at once
        assert not c.client.__dict__.get("_ws_park")
    finally:
        if c.loop is not None:
            c.loop.close()
        peer.stop()


def test_a_kept_socket_the_server_closed_is_not_handed_out(kind) -> None:
    peer = Counting(close_after_first=True)
    c = Client(kind, peer.base_url)
    try:
        mgr, conn = c.open()
        c.ask(conn, model=MODEL, input="Hi.")
        # the server's close arrives after the response: the socket is left, then found closed
        c.leave(mgr)
        deadline = time.monotonic() + 30  # a hang guard: the close comes at once
        while time.monotonic() < deadline and not _kept_closed(c):  # the async socket reads on its loop
            c.run(asyncio.sleep(0.01)) if c.loop is not None else time.sleep(0.01)
        assert _kept_closed(c)
        mgr, conn = c.open()
        events = c.ask(conn, model=MODEL, input="Again.")
        c.leave(mgr)
        assert conn.reused is False and events[-1].type == "response.completed"
        assert peer.accepted == 2
    finally:
        c.close()
        peer.stop()


def _kept_closed(c: Client) -> bool:
    """Whether the socket the client kept (if any) has seen its server's close."""
    park = c.client.__dict__.get("_ws_park")
    return park is None or all(ws.closed for ws, _, _ in park._idle.values())
