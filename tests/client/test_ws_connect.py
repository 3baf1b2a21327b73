"""llmclient's ``client.responses.connect()`` (the Responses WebSocket mode on llmclient's own
transport) against real reference-server processes, with the official client's
``responses.connect()`` as the control on the same server: the same events, the same chaining,
lanes and error events; then what llmclient adds (warm sockets, the stall watchdog, a lost
socket's responses re-sent or failed with ``.partial``, timings, errors naming URL and code).
Each test runs ``[sync]`` (``OpenAI``) and ``[async]`` (``AsyncOpenAI``) through :class:`Conn`,
which drives either client's connection from one synchronous test body."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from typing import Any

import openai
import pytest

import llmclient
from tests._ws import CONNECT_KEY, TERMINAL, Conn, final_of, text_of
from tests.conftest import FAULT_HEADERS, RefServer, start_ref_server, stop_ref_server

pytest.importorskip("websockets")

KEY = CONNECT_KEY
MODEL = "gpt-4o-mini"
BODY = {"model": MODEL, "input": "Tell me about the sea.", "max_output_tokens": 24,
        "temperature": 0, "instructions": "Be brief."}


@pytest.fixture(scope="module")
def server() -> Iterator[RefServer]:
    s = start_ref_server(FAULT_HEADERS, "--api-key", KEY)
    yield s
    stop_ref_server(s)


@pytest.fixture(params=["sync", "async"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _shape(events: list[Any]) -> list[tuple[str, int]]:
    return [(e.type, e.sequence_number) for e in events]


# -- the drop-in: the official client as the control on the same server ----------------------------
def test_create_gives_the_official_clients_events(server, kind) -> None:
    got = {}
    for lib in ("official", "llmclient"):
        with Conn(lib, kind, server) as ws:
            ws.create(**BODY)
            got[lib] = ws.iterate()
    ours, theirs = got["llmclient"], got["official"]
    assert _shape(ours) == _shape(theirs) and len(ours) > 5
    assert text_of(ours) == text_of(theirs) and text_of(ours)
    assert [type(e).__name__ for e in ours] == [type(e).__name__ for e in theirs]
    assert final_of(ours).response.output_text == final_of(theirs).response.output_text


def test_previous_response_id_chains_on_the_socket_with_store_false(server, kind) -> None:
    texts = {}
    for lib in ("official", "llmclient"):
        with Conn(lib, kind, server) as ws:
            previous, out = None, []
            for turn in ("First question.", "A second one.", "And a third."):
                ws.create(model=MODEL, input=turn, max_output_tokens=16, temperature=0, store=False,
                          **({"previous_response_id": previous} if previous else {}))
                final = final_of(ws.until_done())
                assert final.response.store is False
                previous = final.response.id
                out.append(final.response.output_text)
            texts[lib] = out
    assert texts["llmclient"] == texts["official"]


def test_lanes_run_at_once_and_each_response_gets_its_timings(server, kind) -> None:
    with Conn("llmclient", kind, server, extra_headers={"x-fault": "slow_ms=20"}) as ws:
        ws.create(model=MODEL, input="About rivers.", max_output_tokens=16, temperature=0, stream_id="a")
        ws.create(model=MODEL, input="About hills.", max_output_tokens=16, temperature=0, stream_id="b")
        events = ws.until_done(2)
        lanes = [e.stream_id for e in events]
        first_end = next(i for i, e in enumerate(events) if e.type in TERMINAL)
        assert {"a", "b"} <= set(lanes[:first_end])  # both lanes under way at once
        finals = [e for e in events if e.type in TERMINAL]
        timings = ws.conn.timings
        for f in finals:
            t = timings[f.response.id]
            assert t.stream_id == f.stream_id and t.sent == 1 and t.recovered is None
            assert 0 < t.first_event_ms <= t.first_token_ms <= t.total_ms
        assert timings[finals[0].response.id].trace_id != timings[finals[1].response.id].trace_id
        assert ws.conn.in_flight == 0


def test_error_events_come_as_the_official_clients_and_the_socket_stays_open(server, kind) -> None:
    for lib in ("official", "llmclient"):
        with Conn(lib, kind, server) as ws:
            ws.create(model=MODEL, input="Hi", previous_response_id="resp_unknown", stream_id="x")
            (err,) = ws.until_done()
            assert type(err).__name__ == "ResponseWsError" and err.stream_id == "x", lib
            assert err.error.code == "previous_response_not_found" and err.status == 404
            ws.send_raw('{"type": "response.cancel"}')
            (err,) = ws.until_done()
            assert err.error.code == "unsupported_event_type"
            ws.create(model=MODEL, input="Hi", max_output_tokens=16)
            assert final_of(ws.until_done()).type in TERMINAL


def test_the_manager_queues_events_before_the_socket_opens_and_handlers_run(server, kind) -> None:
    seen: list[str] = []
    ws = Conn("llmclient", kind, server)
    mgr = ws.manager()
    mgr.send({"type": "response.create", **BODY})
    mgr.on("response.created", lambda e: seen.append(e.type))
    mgr.once("event", lambda e: seen.append("first:" + e.type))
    ws.mgr = mgr
    ws.conn = mgr.__enter__() if ws.loop is None else ws.run(mgr.__aenter__())
    try:
        # dispatch_events until the terminal event: a handler closes the connection then
        ws.conn.on("response.incomplete", lambda e: ws.conn.close() if ws.loop is None
                   else asyncio.ensure_future(ws.conn.close()))
        ws.run(ws.conn.dispatch_events())
    finally:
        ws.__exit__(None, None, None)
    assert seen == ["response.created", "first:response.created"]


def test_a_wrong_key_is_the_official_authentication_error_naming_the_url(server, kind) -> None:
    with pytest.raises(llmclient.AuthenticationError) as info, Conn("llmclient", kind, server,
                                                                    api_key="sk-wrong"):
        pass
    err = info.value
    assert err.status_code == 401 and err.code == "invalid_api_key"
    assert "/v1/responses" in str(err) and "401" in str(err) and "API key" in str(err)
    assert isinstance(err, openai.AuthenticationError)  # except clauses of the official client port


def test_a_server_without_the_mode_is_a_404_that_says_so(server, kind) -> None:
    elsewhere = server.url.replace("http", "ws") + "/v1/chat"  # no WebSocket at .../chat/responses
    with pytest.raises(llmclient.NotFoundError) as info, \
            Conn("llmclient", kind, server, client_kw={"websocket_base_url": elsewhere}):
        pass
    assert info.value.status_code == 404
    assert "/v1/chat/responses" in str(info.value) and "does not offer the Responses WebSocket mode" in str(info.value)


def test_websocket_base_url_and_options_are_taken_or_refused_by_name(server, kind) -> None:
    client = llmclient.OpenAI(api_key=KEY, base_url="http://127.0.0.1:1/v1",
                              websocket_base_url=server.base_url.replace("http", "ws"))
    try:
        with client.responses.connect(websocket_connection_options={"compression": None}) as conn:
            conn.response.create(**BODY)
            assert final_of(list(_until(conn))).type in TERMINAL
        with pytest.raises(ValueError, match="subprotocols"):
            client.responses.connect(websocket_connection_options={"subprotocols": ["x"]})
        with pytest.raises(ValueError, match="unknown websocket_connection_options key 'nope'"):
            client.responses.connect(websocket_connection_options={"nope": 1})
    finally:
        client.close()


def _until(conn: Any) -> Iterator[Any]:
    for ev in conn:
        yield ev
        if ev.type in TERMINAL or ev.type == "error":
            return


def test_background_is_refused_before_anything_is_sent(server, kind) -> None:
    with Conn("llmclient", kind, server) as ws:
        with pytest.raises(ValueError, match="background=True is not supported"):
            ws.create(**BODY, background=True)
        assert ws.conn.in_flight == 0
        ws.create(**BODY)
        assert final_of(ws.until_done()).type in TERMINAL


def test_a_send_after_close_names_the_url(server, kind) -> None:
    with Conn("llmclient", kind, server) as ws:
        ws.close()
        with pytest.raises(llmclient.APIConnectionError, match=r"cannot send: the WebSocket to ws://.*/v1/responses"):
            ws.create(**BODY)


# -- better than the official client -----------------------------------------------------------
def test_warm_opens_the_socket_when_connect_is_called(server, kind) -> None:
    import time

    ws = Conn("llmclient", kind, server, warm=True)
    ws.mgr = ws.manager()
    try:
        # The handshake runs without __enter__: the socket is open before the first create.
        deadline = time.monotonic() + 20
        while not ws.mgr.ready and time.monotonic() < deadline:
            ws.run(asyncio.sleep(0.01)) if ws.loop is not None else time.sleep(0.01)
        assert ws.mgr.ready
        ws.conn = ws.mgr.__enter__() if ws.loop is None else ws.run(ws.mgr.__aenter__())
        ws.create(**BODY)
        assert final_of(ws.until_done()).type in TERMINAL
    finally:
        ws.__exit__(None, None, None)


def test_a_create_cut_before_response_created_is_sent_again_once(server, kind) -> None:
    # The first socket is cut before the first event (once=: a new socket runs clean).
    token = f"cut0-{kind}"
    with Conn("llmclient", kind, server, initial_delay=0.01,
              extra_headers={"x-fault": f"cut_after=0;once={token}"}) as ws:
        ws.create(**BODY)
        events = ws.until_done()
        final = final_of(events)
        t = ws.conn.timings[final.response.id]
    assert events[0].type == "response.created"
    assert t.sent == 2 and t.recovered == "resent"
    assert text_of(events) == final.response.output_text


def test_a_response_cut_after_it_started_raises_with_the_partial(server, kind) -> None:
    token = f"cut3-{kind}"
    with Conn("llmclient", kind, server, initial_delay=0.01,
              extra_headers={"x-fault": f"cut_after=6;once={token}"}) as ws:
        ws.create(**BODY, store=False)
        got = []
        with pytest.raises(llmclient.IncompleteStreamError) as info:
            while True:
                got.append(ws.recv())
        err = info.value
        assert [e.type for e in got][:2] == ["response.created", "response.in_progress"]
        assert err.partial is not None and err.partial.response_id == got[0].response.id
        assert err.partial.text == text_of(got) and err.partial.events == len(got)
        assert "1011" in str(err) and "/v1/responses" in str(err) and "store=False" in str(err)
        # never run twice: the same socket's next response runs on a new socket, clean
        ws.create(**BODY)
        assert final_of(ws.until_done()).type in TERMINAL


def test_a_stall_raises_a_timeout_with_the_partial(server, kind) -> None:
    with Conn("llmclient", kind, server, client_kw={"stream_idle_timeout": 1.0}, max_retries=0,
              extra_headers={"x-fault": "stall_after=5"}) as ws:
        ws.create(**BODY, store=False)
        got = []
        with pytest.raises(llmclient.APITimeoutError) as info:
            while True:
                got.append(ws.recv())
    assert len(got) == 5 and info.value.partial.events == 5
    assert "stream_idle_timeout" in str(info.value)


def test_a_malformed_event_names_the_url(kind) -> None:
    # A WebSocket server of our own that answers any message with text that is not JSON.
    websockets = pytest.importorskip("websockets.sync.server")
    stop = threading.Event()

    def handler(conn: Any) -> None:
        for _ in conn:
            conn.send("this is not json")
            stop.wait(5)

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    srv = websockets.serve(handler, "127.0.0.1", port)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        ws = Conn("llmclient", kind, RefServer(f"http://127.0.0.1:{port}", port))
        with ws:
            ws.create(**BODY)
            with pytest.raises(llmclient.APIResponseValidationError, match=r"not a JSON event.*this is not json"):
                ws.recv()
    finally:
        stop.set()
        srv.shutdown()


def test_a_stored_response_cut_after_it_was_stored_is_fetched_by_id_and_finished(server, kind) -> None:
    # The reference server stores a response once its text is generated, before its last events
    # go out: a cut after every text delta leaves it in the store, and llmclient reads it back.
    with Conn("llmclient", kind, server) as ws:
        ws.create(**BODY)
        clean = ws.until_done()
    text_events = 4 + sum(e.type == "response.output_text.delta" for e in clean)
    token = f"cutstored-{kind}"
    with Conn("llmclient", kind, server, initial_delay=0.01,
              extra_headers={"x-fault": f"cut_after={text_events};once={token}"}) as ws:
        ws.create(**BODY)
        events = ws.until_done()
        final = final_of(events)
        t = ws.conn.timings[final.response.id]
    assert len(events) == text_events + 1  # what arrived, then the terminal event fetched
    assert final.type == final_of(clean).type and final.response.output_text == text_of(events)
    assert text_of(events) == text_of(clean) and t.recovered == "fetched" and t.sent == 1


def test_a_stored_response_cut_before_it_was_stored_raises_naming_the_fetch(server, kind) -> None:
    token = f"cutearly-{kind}"
    with Conn("llmclient", kind, server, initial_delay=0.01,
              extra_headers={"x-fault": f"cut_after=5;once={token}"}) as ws:
        ws.create(**BODY)
        got = []
        with pytest.raises(llmclient.IncompleteStreamError, match="fetching it by id failed") as info:
            while True:
                got.append(ws.recv())
    assert info.value.partial.events == 5 == len(got)


def _own_server(handler: Any) -> tuple[Any, int]:
    from websockets.sync.server import serve

    srv = serve(handler, "127.0.0.1", 0)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, srv.socket.getsockname()[1]


def test_a_policy_close_mid_response_says_what_to_do(kind) -> None:
    from websockets.frames import CloseCode

    def handler(conn: Any) -> None:
        conn.recv()
        conn.send('{"type": "response.created", "sequence_number": 0, "response": {"id": "resp_1"}}')
        conn.close(CloseCode.POLICY_VIOLATION, "not allowed")

    srv, port = _own_server(handler)
    try:
        with Conn("llmclient", kind, RefServer(f"http://127.0.0.1:{port}", port)) as ws:
            ws.create(**BODY, store=False)
            assert ws.recv().type == "response.created"
            with pytest.raises(llmclient.IncompleteStreamError) as info:
                ws.recv()
        message = str(info.value)
        assert "1008" in message and "policy violation" in message and "check the API key" in message
        assert f"ws://127.0.0.1:{port}/v1/responses" in message
    finally:
        srv.shutdown()


def test_an_upgrade_answered_426_names_the_url_and_the_status(kind) -> None:
    from websockets.datastructures import Headers
    from websockets.http11 import Response

    def refuse(conn: Any, request: Any) -> Any:
        return Response(426, "Upgrade Required", Headers([("Upgrade", "h2c"), ("Content-Length", "0")]), b"")

    from websockets.sync.server import serve

    srv = serve(lambda c: None, "127.0.0.1", 0, process_request=refuse)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    port = srv.socket.getsockname()[1]
    try:
        with pytest.raises(llmclient.APIStatusError) as info, \
                Conn("llmclient", kind, RefServer(f"http://127.0.0.1:{port}", port)):
            pass
        assert info.value.status_code == 426
        assert "426" in str(info.value) and f"127.0.0.1:{port}/v1/responses" in str(info.value)
        assert "use the HTTP API" in str(info.value)
    finally:
        srv.shutdown()


@pytest.fixture(scope="module")
def aging_server() -> Iterator[RefServer]:
    s = start_ref_server("--ws-max-connection-s", "1")
    yield s
    stop_ref_server(s)


@pytest.mark.parametrize("handler", [True, False])
def test_the_age_limit_s_close_between_responses_costs_no_response(aging_server, kind, handler) -> None:
    # The server's age limit: an error event, then 1001. A create sent after that goes out on a
    # new socket, with on_reconnecting told (the official handler's event) or without one.
    import time

    told: list[Any] = []
    extra = {"on_reconnecting": lambda e: told.append(e)} if handler else {}
    with Conn("llmclient", kind, aging_server, api_key="sk-any", initial_delay=0.01, **extra) as ws:
        ws.create(**BODY)
        assert final_of(ws.until_done()).type in TERMINAL
        err = ws.recv()
        assert err.type == "error" and err.error.code == "websocket_connection_limit_reached"
        ws.run(asyncio.sleep(0.3)) if ws.loop is not None else time.sleep(0.3)  # the 1001 comes
        ws.create(**BODY)
        final = final_of(ws.until_done())
        assert final.type in TERMINAL and final.response.output_text
        assert ws.conn.timings[final.response.id].sent >= 1
    if handler:
        assert told and told[0].close_code == 1001 and told[0].attempt == 1


def test_the_sync_connection_takes_sends_from_another_thread(server) -> None:
    client = llmclient.OpenAI(base_url=server.base_url, api_key=KEY)
    try:
        with client.responses.connect() as conn:
            def send() -> None:
                for lane in ("a", "b", "c"):
                    conn.response.create(**BODY, stream_id=lane)

            t = threading.Thread(target=send)
            t.start()
            finals = []
            for ev in conn:
                if ev.type in TERMINAL:
                    finals.append(ev)
                    if len(finals) == 3:
                        break
            t.join(10)
        assert sorted(f.stream_id for f in finals) == ["a", "b", "c"]
        assert len({f.response.output_text for f in finals}) == 1  # the same input, temperature 0
        assert all(conn.timings[f.response.id].stream_id == f.stream_id for f in finals)
    finally:
        client.close()


def test_a_server_killed_mid_response_raises_with_the_partial_and_runs_nothing_twice(kind) -> None:
    import signal

    s = start_ref_server(FAULT_HEADERS)
    try:
        with Conn("llmclient", kind, s, api_key="sk-any", max_retries=2, initial_delay=0.01,
                  extra_headers={"x-fault": "slow_ms=50"}) as ws:
            ws.create(**BODY, store=False, stream_id="a")
            got = [ws.recv() for _ in range(4)]
            assert s.process is not None
            s.process.send_signal(signal.SIGKILL)
            s.process.wait(10)
            with pytest.raises(llmclient.IncompleteStreamError) as info:
                while True:
                    got.append(ws.recv())
            assert info.value.partial.response_id == got[0].response.id
            assert info.value.partial.events == len(got) and "1006" in str(info.value)
            # nothing listens now: a new create cannot go out, and says so
            with pytest.raises(llmclient.APIConnectionError, match="not sent"):
                ws.create(**BODY)
    finally:
        stop_ref_server(s)
