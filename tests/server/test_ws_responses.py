"""The reference server's Responses WebSocket mode, with the official client's
``client.responses.connect()`` (sync and async) as the control: events as the HTTP stream's,
previous_response_id chained in the socket's memory (store=false too), stream_id lanes in
parallel and forks, error events, the handshake's 401, close codes, and the continuation cost
model's Server-Timing. Each test runs twice, ``[sync]`` on ``openai.OpenAI`` and ``[async]`` on
``openai.AsyncOpenAI``, through :class:`Official`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import openai
import orjson
import pydantic
import pytest
import websockets
from openai.types.responses import ResponsesServerEvent, ResponseStreamEvent
from websockets.sync.client import connect as ws_connect

from benchmarks.server import continuation
from benchmarks.server.responses import StoredResponse
from benchmarks.server.ws_responses import _Memory, _Refused, error_event, parse_create
from tests._ws import TERMINAL, Conn, final_of, text_of
from tests.conftest import FAULT_HEADERS, RefServer, start_ref_server, stop_ref_server

KEY = "sk-ws-test"
MODEL = "gpt-4o-mini"
SERVER_EVENTS = pydantic.TypeAdapter(ResponsesServerEvent)
HTTP_EVENTS = pydantic.TypeAdapter(ResponseStreamEvent)


@pytest.fixture(scope="module")
def server() -> Iterator[RefServer]:
    s = start_ref_server(FAULT_HEADERS, "--api-key", KEY)
    yield s
    stop_ref_server(s)


def Official(kind: str, server: RefServer, api_key: str = KEY, **connect: Any) -> Conn:
    """The official client's socket, sync or async, behind one synchronous face."""
    return Conn("official", kind, server, api_key, **connect)


@pytest.fixture(params=["sync", "async"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _timing(event: Any) -> dict[str, float]:
    raw = getattr(event, "server_timing", None) or ""
    out = {}
    for part in raw.split(","):
        name, _, dur = part.strip().partition(";dur=")
        if name:
            out[name] = float(dur)
    return out


def _http(server: RefServer) -> httpx.Client:
    return httpx.Client(base_url=server.base_url, headers={"authorization": f"Bearer {KEY}"},
                        timeout=30)


def _http_stream(server: RefServer, body: dict[str, Any]) -> list[dict[str, Any]]:
    with _http(server) as http:
        r = http.post("/responses", json={**body, "stream": True})
        assert r.status_code == 200, r.text
    return [orjson.loads(line[6:]) for line in r.text.splitlines() if line.startswith("data: ")]


BODY = {"model": MODEL, "input": "Tell me about the sea.", "max_output_tokens": 24,
        "temperature": 0, "instructions": "Be brief."}


# -- the socket, with the official client ----------------------------------------------------------
def test_create_streams_the_same_events_as_the_http_route(server, kind) -> None:
    with Official(kind, server) as ws:
        ws.create(**BODY)
        events = ws.until_done()
    http = _http_stream(server, BODY)
    assert [e.type for e in events] == [e["type"] for e in http]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert text_of(events) == "".join(e.get("delta", "") for e in http
                                    if e["type"] == "response.output_text.delta")
    for e in events:  # strict validation against the official types, not construct
        SERVER_EVENTS.validate_python(e.model_dump(exclude={"server_timing"}))
        HTTP_EVENTS.validate_python(e.model_dump(exclude={"server_timing"}))
    final = final_of(events)
    assert final.response.status == "incomplete" and final.response.output_text == text_of(events)
    timing = _timing(final)
    assert {"total", "tokenize"} <= set(timing) and "reload" not in timing  # nothing to reload


def test_previous_response_id_chains_in_the_connection_with_store_false(server, kind) -> None:
    turns = ["First question.", "A second one.", "And a third."]
    with Official(kind, server) as ws:
        previous, texts = None, []
        for turn in turns:
            ws.create(model=MODEL, input=turn, max_output_tokens=16, temperature=0, store=False,
                      **({"previous_response_id": previous} if previous else {}))
            final = final_of(ws.until_done())
            assert final.response.store is False
            previous = final.response.id
            texts.append(final.response.output_text)
            if len(texts) > 1:  # continued from the socket's memory: nothing reloaded
                timing = _timing(final)
                assert timing["reload"] == 0 and timing["reload-saved"] > 0
    # The socket's remembered tokens are the whole conversation's: the same text over HTTP when
    # the conversation is sent in full.
    items = []
    for turn, text in zip(turns[:-1], texts[:-1], strict=True):
        items += [{"role": "user", "content": turn}, {"role": "assistant", "content": text}]
    with _http(server) as http:
        full = http.post("/responses", json={"model": MODEL, "max_output_tokens": 16, "temperature": 0,
                                              "input": [*items, {"role": "user", "content": turns[-1]}]})
        assert full.json()["output"][0]["content"][0]["text"] == texts[-1]
        gone = http.get(f"/responses/{previous}")  # store=false: only that socket knew it
        assert gone.status_code == 404
    with Official(kind, server) as other:
        other.create(model=MODEL, input="More.", previous_response_id=previous, store=False)
        (err,) = other.until_done()
    assert err.type == "error" and err.error.code == "previous_response_not_found"
    assert err.error.param == "previous_response_id" and previous in err.error.message


def test_a_stored_response_continues_from_the_store_on_another_socket(server, kind) -> None:
    with Official(kind, server) as ws:
        ws.create(model=MODEL, input="One.", max_output_tokens=16, temperature=0)
        first = final_of(ws.until_done()).response
        ws.create(model=MODEL, input="Two.", max_output_tokens=16, temperature=0,
                  previous_response_id=first.id)
        final_of(ws.until_done())
    with Official(kind, server) as other:  # not in this socket's memory: read back from the store
        other.create(model=MODEL, input="Three.", max_output_tokens=16, temperature=0,
                     previous_response_id=first.id)
        final = final_of(other.until_done())
    assert final.response.previous_response_id == first.id
    timing = _timing(final)
    assert timing["reload"] > 0 and "reload-saved" not in timing


def test_stream_id_lanes_run_in_parallel_and_fork(server, kind) -> None:
    # Each event 20 ms apart: two lanes at once interleave; one after the other would not.
    with Official(kind, server, extra_headers={"x-fault": "slow_ms=20"}) as ws:
        ws.create(model=MODEL, input="About rivers.", max_output_tokens=16, temperature=0, stream_id="a")
        ws.create(model=MODEL, input="About hills.", max_output_tokens=16, temperature=0, stream_id="b")
        events = ws.until_done(2)
        lanes = [e.stream_id for e in events]
        assert set(lanes) == {"a", "b"}
        first_end = next(i for i, e in enumerate(events) if e.type in TERMINAL)
        assert {"a", "b"} <= set(lanes[:first_end])  # both lanes were under way at once
        a = final_of([e for e in events if e.stream_id == "a"]).response
        # a fork: lane c continues lane a's conversation
        ws.create(model=MODEL, input="And lakes?", max_output_tokens=16, temperature=0,
                  stream_id="c", previous_response_id=a.id)
        fork = final_of(ws.until_done())
    assert fork.stream_id == "c" and fork.response.previous_response_id == a.id
    assert _timing(fork)["reload"] == 0  # lane a's latest response is in the socket's memory
    with _http(server) as http:
        chained = http.post("/responses", json={"model": MODEL, "input": "And lakes?",
                                                 "max_output_tokens": 16, "temperature": 0,
                                                 "previous_response_id": a.id}).json()
    assert chained["output"][0]["content"][0]["text"] == fork.response.output_text


def test_responses_on_one_lane_run_in_order(server, kind) -> None:
    with Official(kind, server, extra_headers={"x-fault": "slow_ms=5"}) as ws:
        for word in ("one", "two", "three"):
            ws.create(model=MODEL, input=word, max_output_tokens=16)
        events = ws.until_done(3)
    ids = [e.response.id for e in events if e.type == "response.created"]
    ends = [i for i, e in enumerate(events) if e.type in TERMINAL]
    starts = [i for i, e in enumerate(events) if e.type == "response.created"]
    assert len(ids) == 3 and starts[1] > ends[0] and starts[2] > ends[1]


def test_unknown_previous_response_id_is_the_error_event_the_official_client_surfaces(server, kind) -> None:
    with Official(kind, server) as ws:
        ws.create(model=MODEL, input="Hi", previous_response_id="resp_unknown", stream_id="x")
        (err,) = ws.until_done()
        assert type(err).__name__ == "ResponseWsError" and err.stream_id == "x"
        assert err.error.code == "previous_response_not_found" and err.status == 404
        ws.create(model=MODEL, input="Hi", max_output_tokens=16)  # the socket is still open
        assert final_of(ws.until_done()).response.status in ("completed", "incomplete")
    if kind == "sync":  # dispatch_events raises on an error event nobody handles
        client = openai.OpenAI(base_url=server.base_url, api_key=KEY)
        with client.responses.connect() as conn:
            conn.response.create(model=MODEL, input="Hi", previous_response_id="resp_unknown")
            with pytest.raises(openai.OpenAIError, match="previous_response_not_found"):
                conn.dispatch_events()


def test_a_wrong_key_is_a_401_before_the_upgrade(server, kind) -> None:
    with pytest.raises(websockets.exceptions.InvalidStatus) as info, \
            Official(kind, server, api_key="sk-wrong"):
        pass
    response = info.value.response
    assert response.status_code == 401
    assert orjson.loads(response.body)["error"]["code"] == "invalid_api_key"


@pytest.mark.parametrize(("raw", "param", "code"), [
    ("not json", None, None),
    ('{"type": "response.cancel"}', "type", "unsupported_event_type"),
    ('{"type": "response.create", "model": "gpt-4o-mini", "input": "x", "background": true}',
     "background", "unsupported_parameter"),
    ('{"type": "response.create", "model": "gpt-4o-mini"}', "input", "missing_required_parameter"),
    ('{"type": "response.create", "model": "gpt-4o-mini", "input": "x", "max_output_tokens": 5}',
     "max_output_tokens", "integer_below_min_value"),
    ('{"type": "response.create", "model": "no-such-model", "input": "x"}', "model", "model_not_found"),
    ('{"type": "response.create", "model": "gpt-4o-mini", "input": "x", "stream_id": 7}',
     "stream_id", "invalid_type"),
])
def test_bad_events_are_error_events_and_the_socket_stays_open(server, kind, raw, param, code) -> None:
    with Official(kind, server) as ws:
        ws.send_raw(raw)
        (err,) = ws.until_done()
        assert err.type == "error" and err.error.param == param and err.error.code == code
        assert err.error.type == "invalid_request_error" and err.status in (400, 404)
        ws.create(model=MODEL, input="Still there?", max_output_tokens=16, stream=True)  # stream: ignored
        assert final_of(ws.until_done()).type in TERMINAL


def test_generate_false_warms_the_conversation_and_the_next_turn_continues_it(server, kind) -> None:
    with Official(kind, server) as ws:
        ws.create(model=MODEL, input="A long shared system context. " * 20, store=False, generate=False)
        warm = ws.until_done()
        assert [e.type for e in warm] == ["response.created", "response.completed"]
        done = warm[-1].response
        assert done.output == [] and done.usage.output_tokens == 0 and done.usage.input_tokens > 100
        ws.create(model=MODEL, input="Now answer.", max_output_tokens=16, store=False,
                  previous_response_id=done.id)
        final = final_of(ws.until_done())
    assert final.response.usage.input_tokens > done.usage.input_tokens
    assert final.response.output_text


def test_cut_after_closes_the_socket_with_1011_mid_response(server, kind) -> None:
    with Official(kind, server, extra_headers={"x-fault": "cut_after=3"}) as ws:
        ws.create(model=MODEL, input="Hi", max_output_tokens=16)
        got = []
        with pytest.raises(websockets.exceptions.ConnectionClosedError) as info:
            while True:
                got.append(ws.recv().type)
    assert got == ["response.created", "response.in_progress", "response.output_item.added"]
    assert info.value.rcvd is not None and info.value.rcvd.code == 1011


# -- the socket itself (websockets' own client) ----------------------------------------------------
def test_pings_are_answered(server) -> None:
    url = server.url.replace("http", "ws") + "/v1/responses"
    with ws_connect(url, additional_headers={"Authorization": f"Bearer {KEY}"}) as ws:
        assert ws.ping(b"are you there").wait(10)


def test_a_path_other_than_v1_responses_is_a_404_before_the_upgrade(server) -> None:
    url = server.url.replace("http", "ws") + "/v1/chat/completions"
    with pytest.raises(websockets.exceptions.InvalidStatus) as info:
        ws_connect(url, additional_headers={"Authorization": f"Bearer {KEY}"})
    assert info.value.response.status_code == 404


def test_the_age_limit_sends_an_error_event_and_closes_with_1001() -> None:
    s = start_ref_server("--ws-max-connection-s", "0.5")
    try:
        url = s.url.replace("http", "ws") + "/v1/responses"
        with ws_connect(url) as ws:
            event = orjson.loads(ws.recv(timeout=20))
            with pytest.raises(websockets.exceptions.ConnectionClosed) as info:
                ws.recv(timeout=20)
        assert event["type"] == "error" and event["error"]["code"] == "websocket_connection_limit_reached"
        assert info.value.rcvd is not None and info.value.rcvd.code == 1001
    finally:
        stop_ref_server(s)


@pytest.mark.parametrize("http_server", ["granian", "hypercorn", "uvicorn"])
def test_every_http_server_of_the_reference_server_carries_it(http_server) -> None:
    s = start_ref_server("--server", http_server, "--api-key", KEY)
    try:
        client = openai.OpenAI(base_url=s.base_url, api_key=KEY)
        with client.responses.connect() as conn:
            conn.response.create(model=MODEL, input="Hi", max_output_tokens=16)
            events = []
            while not events or events[-1].type not in TERMINAL:
                events.append(conn.recv())
        assert events[0].type == "response.created"
        with pytest.raises(websockets.exceptions.InvalidStatus) as info:
            openai.OpenAI(base_url=s.base_url, api_key="sk-wrong").responses.connect().enter()
        assert info.value.response.status_code == 401
        url = s.url.replace("http", "ws") + "/v1/responses"
        with ws_connect(url, additional_headers={"Authorization": f"Bearer {KEY}"},
                        compression="deflate") as ws:
            assert ws.ping().wait(10)
            offered = ws.response.headers.get("Sec-WebSocket-Extensions") or ""
        # hypercorn and uvicorn negotiate permessage-deflate; granian answers without it
        assert ("permessage-deflate" in offered) == (http_server != "granian")
    finally:
        stop_ref_server(s)


# -- the cost model over HTTP --------------------------------------------------------------------
def _chain_over_http(server: RefServer) -> dict[str, float]:
    with httpx.Client(base_url=server.base_url, timeout=30) as http:
        first = http.post("/responses", json={"model": MODEL, "input": "One.", "max_output_tokens": 16})
        second = http.post("/responses", json={"model": MODEL, "input": "Two.", "max_output_tokens": 16,
                                               "previous_response_id": first.json()["id"]})
    timing = {}
    for part in second.headers["server-timing"].split(","):
        name, _, dur = part.strip().partition(";dur=")
        timing[name] = float(dur)
    return timing


def test_an_http_chained_turn_waits_for_its_reload_and_says_so(ref_server) -> None:
    assert _chain_over_http(ref_server)["reload"] > 0


def test_the_reload_fraction_zero_switches_the_model_off() -> None:
    s = start_ref_server("--continuation-reload-fraction", "0")
    try:
        assert _chain_over_http(s)["reload"] == 0
    finally:
        stop_ref_server(s)


# -- pure parts --------------------------------------------------------------------------------
def test_the_reload_is_the_fraction_of_the_chained_turn_s_time_to_first_token() -> None:
    cost = continuation.ContinuationCost(0.4)
    # 40% of the HTTP turn's time to first token: wait w = 0.4 / 0.6 x the socket turn's
    wait = cost.reload_ms(30.0)
    assert wait == pytest.approx(20.0) and wait / (30.0 + wait) == pytest.approx(0.4)
    assert continuation.ContinuationCost(0).reload_ms(30.0) == 0
    assert cost.reload_ms(0) == 0
    assert continuation.ContinuationCost().fraction == continuation.GUIDE_SPEEDUP == 0.40
    for bad in (-0.1, 1.0, 2.0):
        with pytest.raises(ValueError, match="fraction"):
            continuation.ContinuationCost(bad)


def test_parse_create_separates_the_envelope_from_the_body() -> None:
    lane, generate, body = parse_create(b'{"type": "response.create", "stream_id": "s1", '
                                        b'"stream": true, "generate": false, "input": "x"}', 1000)
    assert (lane, generate, body) == ("s1", False, {"input": "x"})
    with pytest.raises(_Refused, match="larger than 10"):
        parse_create(b'{"type": "response.create"}', 10)
    with pytest.raises(_Refused, match="generate"):
        parse_create(b'{"type": "response.create", "generate": "no"}', 1000)


def test_error_events_carry_status_openai_error_body_and_lane() -> None:
    ev = error_event(404, "gone", "previous_response_id", "previous_response_not_found", "s")
    assert ev == {"type": "error", "status": 404, "stream_id": "s",
                  "error": {"message": "gone", "type": "invalid_request_error",
                            "param": "previous_response_id", "code": "previous_response_not_found"}}
    assert "stream_id" not in error_event(400, "x", None, None, None)


def test_the_socket_memory_keeps_the_latest_response_of_each_lane() -> None:
    memory = _Memory(limit=2)

    def item(n: int) -> StoredResponse:
        return StoredResponse({"id": f"r{n}"}, [], f"t{n}")

    memory.keep(None, "r1", item(1))
    memory.keep(None, "r2", item(2))  # same lane: r1 is no longer the latest
    assert memory.get("r1") is None and memory.get("r2") is not None
    memory.keep("a", "r3", item(3))
    memory.get("r2")  # lane None used: lane "a" is now the least recently used
    memory.keep("b", "r4", item(4))
    assert memory.get("r3") is None and memory.get("r2") is not None and memory.get("r4") is not None

