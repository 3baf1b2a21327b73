"""OpenTelemetry on ``client.responses.connect()`` (``features/otel.py``, the WebSocket part):
one span per socket, one CLIENT span per response linked to it, with the GenAI attributes and
metrics, the response's trace id the span's, and a cut response's span an error. The SDK's
in-memory exporter and metric reader as the global providers; a real reference server; sync
and async.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pytest.importorskip("opentelemetry.sdk")
pytest.importorskip("websockets")

from opentelemetry import trace
from opentelemetry.trace import SpanKind, StatusCode

import llmclient
from tests._ws import Conn, final_of
from tests.conftest import FAULT_HEADERS, RefServer, start_ref_server, stop_ref_server

from .test_otel import Telemetry, _reset_globals

KEY = "sk-otel-ws"
BODY = {"model": "gpt-4o-mini", "input": "Tell me about the sea.", "max_output_tokens": 16}


@pytest.fixture(scope="module")
def server() -> Iterator[RefServer]:
    s = start_ref_server(FAULT_HEADERS, "--api-key", KEY)
    yield s
    stop_ref_server(s)


@pytest.fixture(params=["sync", "async"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture()
def otel() -> Iterator[Telemetry]:
    t = Telemetry().install()
    yield t
    _reset_globals()


def _hex(n: int, width: int) -> str:
    return f"{n:0{width}x}"


def test_each_response_is_a_span_linked_to_its_socket(server: RefServer, kind: str, otel: Telemetry) -> None:
    with Conn("llmclient", kind, server, api_key=KEY) as ws:
        finals = []
        for _ in range(2):
            ws.create(**BODY)
            finals.append(final_of(ws.until_done()))
        timings = [ws.conn.timings[f.response.id] for f in finals]
    responses = otel.finished("chat ")
    sockets = otel.finished("websocket ")
    assert len(responses) == 2 and len(sockets) == 1
    socket_span = sockets[0]
    assert socket_span.kind is SpanKind.CLIENT and socket_span.attributes["llmclient.websocket.responses"] == 2
    assert socket_span.attributes["server.port"] == server.port
    for span, final, t in zip(responses, finals, timings, strict=True):
        a = span.attributes
        assert span.name == f"chat {BODY['model']}" and span.kind is SpanKind.CLIENT
        assert a["gen_ai.operation.name"] == "chat" and a["gen_ai.request.model"] == BODY["model"]
        assert a["gen_ai.response.id"] == final.response.id
        assert a["gen_ai.usage.output_tokens"] == final.response.usage.output_tokens
        assert a["gen_ai.usage.input_tokens"] == final.response.usage.input_tokens
        assert a["gen_ai.request.max_tokens"] == 16 and a["llmclient.websocket"] is True
        assert [link.context.span_id for link in span.links] == [socket_span.context.span_id]
        assert span.status.status_code is StatusCode.UNSET
        # the response's trace id (its timings, logs and errors) is its span's
        assert t.trace_id == _hex(span.context.trace_id, 32)
        assert [e.name for e in span.events] == ["llmclient.first_token"]
    # two responses, two traces: neither is the socket's
    assert len({s.context.trace_id for s in [*responses, socket_span]}) == 3
    tokens = {p.attributes["gen_ai.token.type"]: p.sum for p in otel.points("gen_ai.client.token.usage")}
    assert tokens["output"] == sum(f.response.usage.output_tokens for f in finals)
    assert sum(p.count for p in otel.points("gen_ai.client.operation.duration")) == 2


def test_a_response_under_the_callers_span_is_its_child(server: RefServer, kind: str, otel: Telemetry) -> None:
    tracer = trace.get_tracer("app")
    with tracer.start_as_current_span("agent turn") as parent, Conn("llmclient", kind, server, api_key=KEY) as ws:
        ws.create(**BODY)
        ws.until_done()
    span = otel.finished("chat ")[0]
    assert span.parent is not None and span.parent.span_id == parent.get_span_context().span_id
    assert span.context.trace_id == parent.get_span_context().trace_id


def test_a_cut_response_ends_its_span_as_an_error(server: RefServer, kind: str, otel: Telemetry) -> None:
    with Conn("llmclient", kind, server, api_key=KEY, initial_delay=0.01,
              extra_headers={"x-fault": f"cut_after=6;once=otelcut-{kind}"}) as ws:
        ws.create(**BODY, store=False)
        with pytest.raises(llmclient.IncompleteStreamError) as info:
            while True:
                ws.recv()
    span = otel.finished("chat ")[0]
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes["error.type"] == "IncompleteStreamError"
    assert info.value.trace_id == _hex(span.context.trace_id, 32)


def test_a_response_the_app_closes_early_is_not_an_error(server: RefServer, kind: str, otel: Telemetry) -> None:
    with Conn("llmclient", kind, server, api_key=KEY, extra_headers={"x-fault": "slow_ms=50"}) as ws:
        ws.create(**{**BODY, "max_output_tokens": 40})
        assert ws.recv().type == "response.created"
        ws.close()
    span = otel.finished("chat ")[0]
    assert span.attributes["llmclient.stream.closed_early"] is True
    assert span.status.status_code is StatusCode.UNSET
    assert len(otel.finished("websocket ")) == 1


def test_no_provider_no_spans_and_no_cost(server: RefServer, kind: str) -> None:
    _reset_globals()
    with Conn("llmclient", kind, server, api_key=KEY) as ws:
        ws.create(**BODY)
        final = final_of(ws.until_done())
        assert ws.conn._span is None and final.response.id in ws.conn.timings
    assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)  # none configured


def test_a_conversation_on_the_clients_kept_socket_says_so_on_its_span(server: RefServer, kind: str,
                                                                       otel: Telemetry) -> None:
    from .test_ws_reuse import Client

    c = Client(kind, server.base_url, api_key=KEY)
    try:
        for _ in range(2):
            mgr, conn = c.open()
            c.ask(conn, **BODY)
            c.leave(mgr)
    finally:
        c.close()
    sockets = otel.finished("websocket ")
    assert [s.attributes["llmclient.websocket.reused"] for s in sockets] == [False, True]
    assert all(s.attributes["llmclient.websocket.responses"] == 1 for s in sockets)
