"""OpenTelemetry spans and metrics (llmclient.features.otel) against the real reference server.

The SDK's in-memory exporter and metric reader are installed as the global providers for each
test and removed after it (the API allows setting them once per process; the reset is what
OpenTelemetry's own test utilities do), so other tests run with OpenTelemetry unconfigured.
Calls go through ``OpenAI`` and ``AsyncOpenAI`` (``drive``: each client test runs on both).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from opentelemetry.util._once import Once

import llmclient
from llmclient import HedgeConfig
from llmclient.features import otel as _otel
from tests._both import Drive
from tests.conftest import start_ref_server, stop_ref_server

MODEL = "gpt-4o-mini"
MSG = [{"role": "user", "content": "hi"}]


def _reset_globals() -> None:
    trace._TRACER_PROVIDER_SET_ONCE = Once()  # type: ignore[attr-defined]
    trace._TRACER_PROVIDER = None  # type: ignore[attr-defined]
    metrics._internal._METER_PROVIDER_SET_ONCE = Once()
    metrics._internal._METER_PROVIDER = None


class Telemetry:
    def __init__(self, processor: SpanProcessor | None = None, drive: Drive | None = None) -> None:
        self.drive = drive  # waits let the async client's loop run
        self.spans = InMemorySpanExporter()
        self.reader = InMemoryMetricReader()
        self.tracer_provider = TracerProvider()
        if processor is not None:
            self.tracer_provider.add_span_processor(processor)
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.spans))
        self.meter_provider = MeterProvider(metric_readers=[self.reader])

    def install(self) -> Telemetry:
        _reset_globals()
        trace.set_tracer_provider(self.tracer_provider)
        metrics.set_meter_provider(self.meter_provider)
        return self

    def finished(self, name_prefix: str = "") -> list[ReadableSpan]:
        return [s for s in self.spans.get_finished_spans() if s.name.startswith(name_prefix)]

    def wait_for(self, pred: Any, timeout: float = 10.0) -> list[ReadableSpan]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = [s for s in self.spans.get_finished_spans() if pred(s)]
            if found:
                return found
            if self.drive is not None:
                self.drive.sleep(0.02)
            else:
                time.sleep(0.02)
        raise AssertionError(f"no such span among {[s.name for s in self.spans.get_finished_spans()]}")

    def points(self, name: str) -> list[Any]:
        data = self.reader.get_metrics_data()
        out = []
        for rm in data.resource_metrics if data else ():
            for sm in rm.scope_metrics:
                for m in sm.metrics:
                    if m.name == name:
                        out.extend(m.data.data_points)
        return out


@pytest.fixture()
def otel(drive: Drive) -> Iterator[Telemetry]:
    """The in-memory SDK for one test, on the test's kind of client (``drive``)."""
    t = Telemetry(drive=drive).install()
    yield t
    _reset_globals()
    _otel._live.clear()


def _client(drive: Drive, server: Any, **kw: Any) -> Any:
    return drive.client(base_url=server.base_url, api_key="k", **kw)


def _first(drive: Drive, stream: Any) -> Any:
    """The next chunk of a stream, leaving the rest to read."""
    return drive(stream.__anext__()) if drive.is_async else next(stream)


def _hex(n: int, width: int) -> str:
    return f"{n:0{width}x}"


# --------------------------------------------------------------------------- one call


def test_a_call_is_one_client_span_with_the_genai_attributes(drive: Drive, otel: Telemetry,
                                                             ref_server: Any) -> None:
    r = drive(_client(drive, ref_server).chat.completions.create(
        model=MODEL, messages=MSG, max_tokens=5, temperature=0.5, top_p=0.9, seed=7, stop=["x"]))
    [span] = otel.finished("chat")
    a = span.attributes
    assert span.name == f"chat {MODEL}" and span.kind is SpanKind.CLIENT
    assert a["gen_ai.operation.name"] == "chat"
    assert a["gen_ai.provider.name"] == "openai"
    assert a["gen_ai.request.model"] == MODEL
    assert a["gen_ai.request.max_tokens"] == 5 and a["gen_ai.request.temperature"] == 0.5
    assert a["gen_ai.request.top_p"] == 0.9 and a["gen_ai.request.seed"] == 7
    assert a["gen_ai.request.stop_sequences"] == ("x",)
    assert a["gen_ai.response.id"] == r.id and a["gen_ai.response.model"] == r.model
    assert a["gen_ai.response.finish_reasons"] == (r.choices[0].finish_reason,)
    assert a["gen_ai.usage.input_tokens"] == r.usage.prompt_tokens
    assert a["gen_ai.usage.output_tokens"] == r.usage.completion_tokens
    assert a["server.address"] == "127.0.0.1" and a["server.port"] == ref_server.port
    assert a["llmclient.wire"] == "json" and "llmclient.stream" not in a
    assert a["llmclient.http.version"] in ("HTTP/1.1", "HTTP/2")
    assert isinstance(a["llmclient.connection.reused"], bool)
    assert "error.type" not in a and span.status.status_code is StatusCode.UNSET
    assert [e.name for e in span.events] == ["llmclient.first_byte"]
    # The span is the call's trace context: response.trace_id, X-Request-ID and the span agree.
    assert _hex(span.context.trace_id, 32) == r.trace_id
    assert r.timings is not None and str(uuid.UUID(r.trace_id))  # X-Request-ID's form of it
    assert span.parent is None  # nothing active, no traceparent given: a root


def test_the_connection_reached_is_the_span_s_network_peer(drive: Drive, otel: Telemetry, ref_server: Any) -> None:
    r = drive(_client(drive, ref_server).chat.completions.create(model=MODEL, messages=MSG, max_tokens=2))
    [span] = otel.finished("chat")
    a = span.attributes
    assert a["network.peer.address"] == r.timings.remote_address == "127.0.0.1"
    assert a["network.type"] == "ipv4" and r.timings.address_family == "IPv4"
    assert "llmclient.pool_wait_ms" not in a and r.timings.pool_wait_ms == 0.0  # it waited for nothing


def test_the_active_span_is_the_parent_and_a_given_traceparent_wins(drive: Drive, otel: Telemetry,
                                                                    ref_server: Any) -> None:
    client = _client(drive, ref_server)
    tracer = trace.get_tracer("app")
    with tracer.start_as_current_span("handle request") as app:
        r = drive(client.chat.completions.create(model=MODEL, messages=MSG, max_tokens=2))
    [call] = otel.finished("chat")
    assert call.parent is not None and call.parent.span_id == app.get_span_context().span_id
    assert call.context.trace_id == app.get_span_context().trace_id
    assert r.trace_id == _hex(app.get_span_context().trace_id, 32)
    given = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    r2 = drive(client.chat.completions.create(model=MODEL, messages=MSG, max_tokens=2,
                                              extra_headers={"traceparent": given}))
    second = next(s for s in otel.finished("chat") if s is not call)
    assert r2.trace_id == "0af7651916cd43dd8448eb211c80319c"
    assert second.parent is not None and _hex(second.parent.span_id, 16) == "b7ad6b7169203331"
    assert second.parent.is_remote


def test_an_error_status_is_the_span_error_type(drive: Drive, otel: Telemetry, ref_server: Any) -> None:
    with pytest.raises(llmclient.APIStatusError):
        drive(_client(drive, ref_server, max_retries=0).chat.completions.create(
            model=MODEL, messages=MSG, extra_headers={"x-fault": "status=503"}))
    [span] = otel.finished("chat")
    assert span.attributes["error.type"] == "503"
    assert span.status.status_code is StatusCode.ERROR
    [point] = otel.points("gen_ai.client.operation.duration")
    assert point.attributes["error.type"] == "503"


def test_retries_are_counted_on_the_span_and_in_metrics(drive: Drive, otel: Telemetry, ref_server: Any) -> None:
    with pytest.raises(llmclient.RateLimitError):
        drive(_client(drive, ref_server, max_retries=1).chat.completions.create(
            model=MODEL, messages=MSG, extra_headers={"x-fault": "status=429;retry_after=0.01"}))
    [span] = otel.finished("chat")
    assert span.attributes["llmclient.retries"] == 1 and span.attributes["error.type"] == "429"
    assert sum(p.value for p in otel.points("llmclient.retries")) >= 1


# --------------------------------------------------------------------------- streams


def test_a_stream_span_ends_with_the_stream(drive: Drive, otel: Telemetry, ref_server: Any) -> None:
    stream = drive(_client(drive, ref_server).chat.completions.create(
        model=MODEL, messages=MSG, max_tokens=6, stream=True, stream_options={"include_usage": True}))
    first = _first(drive, stream)
    assert first is not None and otel.finished("chat") == []  # still open while reading
    drive.iterate(stream)
    [span] = otel.finished("chat")
    a = span.attributes
    assert a["llmclient.stream"] is True and a["gen_ai.response.finish_reasons"]
    assert a["gen_ai.usage.output_tokens"] == 6
    assert [e.name for e in span.events] == ["llmclient.first_byte", "llmclient.first_token"]
    assert span.status.status_code is StatusCode.UNSET
    [ttft] = otel.points("gen_ai.client.operation.time_to_first_chunk")
    assert ttft.count == 1 and ttft.sum > 0
    assert otel.points("llmclient.time_per_output_token")[0].count == 1


def test_a_cut_stream_ends_its_span_with_an_error(drive: Drive, otel: Telemetry, ref_server: Any) -> None:
    stream = drive(_client(drive, ref_server, max_retries=0).chat.completions.create(
        model=MODEL, messages=MSG, max_tokens=20, stream=True, extra_headers={"x-fault": "cut_after=3"}))
    with pytest.raises(llmclient.IncompleteStreamError):
        drive.iterate(stream)
    [span] = otel.finished("chat")
    assert span.attributes["error.type"] == "IncompleteStreamError"
    assert span.status.status_code is StatusCode.ERROR
    assert "closed_early" not in str(span.attributes)


def test_a_stream_closed_early_ends_its_span_without_an_error(drive: Drive, otel: Telemetry,
                                                              ref_server: Any) -> None:
    with drive.enter(drive(_client(drive, ref_server).chat.completions.create(
            model=MODEL, messages=MSG, max_tokens=50, stream=True))) as stream:
        assert len(drive.iterate(stream, limit=3)) == 3  # then left unread
    [span] = otel.finished("chat")
    assert span.attributes["llmclient.stream.closed_early"] is True
    assert span.status.status_code is StatusCode.UNSET and "error.type" not in span.attributes


# --------------------------------------------------------------------------- cache, prefetch, hedge


def test_cache_hits_and_misses_are_attributes_and_counted(drive: Drive, otel: Telemetry, ref_server: Any) -> None:
    client = _client(drive, ref_server, cache="memory")
    for _ in range(2):
        drive(client.chat.completions.create(model=MODEL, messages=MSG, max_tokens=3, temperature=0))
    spans = otel.finished("chat")
    assert [s.attributes["llmclient.cache"] for s in spans] == ["miss", "hit"]
    counts = {p.attributes["llmclient.cache.result"]: p.value for p in otel.points("llmclient.cache.lookups")}
    assert counts == {"miss": 1, "hit": 1}


def test_a_prefetch_is_its_own_span_child_of_and_linked_to_its_call(drive: Drive, otel: Telemetry,
                                                                    ref_server: Any) -> None:
    client = _client(drive, ref_server)
    r = drive(client.chat.completions.create(model=MODEL, messages=MSG, max_tokens=4,
                                             prefetch=["continue"]))
    [prefetch] = otel.wait_for(lambda s: s.attributes.get("llmclient.prefetch") == "1")
    [call] = [s for s in otel.finished("chat") if "llmclient.prefetch" not in s.attributes]
    assert prefetch.context.trace_id == call.context.trace_id == int(r.trace_id, 16)
    assert prefetch.parent is not None and prefetch.parent.span_id == call.context.span_id
    [link] = prefetch.links
    assert link.context.span_id == call.context.span_id
    assert link.attributes["llmclient.link"] == "prefetch_of"
    assert prefetch.attributes["llmclient.stream"] is True
    drive(client.close())
    sent = [p for p in otel.points("llmclient.prefetch.requests")
            if p.attributes["llmclient.prefetch.outcome"] == "sent"]
    assert sent and sent[0].value == 1


@pytest.fixture()
def stalling_server() -> Iterator[Any]:
    srv = start_ref_server("--faults", "stall_ms=20000;times=1")
    yield srv
    llmclient.close_all()
    stop_ref_server(srv)


def test_a_hedge_copy_is_its_own_span_linked_to_its_call(drive: Drive, otel: Telemetry,
                                                         stalling_server: Any) -> None:
    client = _client(drive, stalling_server, hedge=HedgeConfig(after_ms=100))
    r = drive(client.chat.completions.create(model=MODEL, messages=MSG, max_tokens=3))
    drive(client.close())
    assert r.timings.hedge_won
    [copy] = otel.wait_for(lambda s: s.attributes.get("llmclient.hedge.copy") is True)
    [call] = [s for s in otel.finished("chat") if s is not copy]
    assert call.attributes["llmclient.hedge.sent"] is True
    assert call.attributes["llmclient.hedge.winner"] == "copy"
    assert copy.attributes["llmclient.hedge.won"] is True
    assert copy.parent is not None and copy.parent.span_id == call.context.span_id
    assert copy.context.trace_id == call.context.trace_id
    assert [lk.context.span_id for lk in copy.links] == [call.context.span_id]
    assert copy.status.status_code is StatusCode.UNSET
    assert sum(p.value for p in otel.points("llmclient.hedge.copies")) == 1
    assert sum(p.value for p in otel.points("llmclient.hedge.wins")) == 1


# --------------------------------------------------------------------------- metrics


def test_duration_and_token_usage_histograms(drive: Drive, otel: Telemetry, ref_server: Any) -> None:
    r = drive(_client(drive, ref_server).chat.completions.create(model=MODEL, messages=MSG, max_tokens=4))
    [duration] = otel.points("gen_ai.client.operation.duration")
    assert duration.count == 1 and 0 < duration.sum < 60
    assert duration.attributes["gen_ai.operation.name"] == "chat"
    assert duration.attributes["gen_ai.request.model"] == MODEL
    assert duration.attributes["gen_ai.provider.name"] == "openai"
    tokens = {p.attributes["gen_ai.token.type"]: p.sum for p in otel.points("gen_ai.client.token.usage")}
    assert tokens == {"input": r.usage.prompt_tokens, "output": r.usage.completion_tokens}
    data = otel.reader.get_metrics_data()
    units = {m.name: m.unit for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics}
    assert units["gen_ai.client.operation.duration"] == "s"
    assert units["gen_ai.client.token.usage"] == "{token}"


# --------------------------------------------------------------------------- bad input


class _Raising(SpanProcessor):
    def on_start(self, span: Any, parent_context: Any = None) -> None:
        raise RuntimeError("processor broke on start")

    def on_end(self, span: Any) -> None:
        raise RuntimeError("processor broke on end")


def test_a_span_processor_that_raises_does_not_touch_calls(drive: Drive, ref_server: Any) -> None:
    Telemetry(_Raising(), drive).install()
    try:
        client = _client(drive, ref_server)
        r = drive(client.chat.completions.create(model=MODEL, messages=MSG, max_tokens=2))
        assert r.choices[0].message.content
        chunks = drive.iterate(drive(client.chat.completions.create(model=MODEL, messages=MSG, max_tokens=2,
                                                                    stream=True)))
        assert chunks
        assert not _otel._live
    finally:
        _reset_globals()
        _otel._live.clear()


def test_no_provider_configured_means_no_spans_and_fresh_uuid4_trace_ids(drive: Drive, ref_server: Any) -> None:
    _reset_globals()  # the API imported, nothing configured: the proxy providers
    r = drive(_client(drive, ref_server).chat.completions.create(model=MODEL, messages=MSG, max_tokens=2))
    assert uuid.UUID(r.trace_id).version == 4
    assert _otel._instruments() is None and not _otel._live


def test_metrics_only_configuration_still_records_metrics(drive: Drive, ref_server: Any) -> None:
    _reset_globals()
    reader = InMemoryMetricReader()
    metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
    try:
        r = drive(_client(drive, ref_server).chat.completions.create(model=MODEL, messages=MSG, max_tokens=2))
        assert uuid.UUID(r.trace_id).version == 4  # no tracer: llmclient's own trace id
        data = reader.get_metrics_data()
        names = {m.name for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics}
        assert "gen_ai.client.operation.duration" in names
    finally:
        _reset_globals()


def test_a_sampled_out_call_sends_its_context_records_metrics_and_no_span(drive: Drive, ref_server: Any) -> None:
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

    _reset_globals()
    spans = InMemorySpanExporter()
    provider = TracerProvider(sampler=ALWAYS_OFF)
    provider.add_span_processor(SimpleSpanProcessor(spans))
    trace.set_tracer_provider(provider)
    reader = InMemoryMetricReader()
    metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
    try:
        raw = drive(_client(drive, ref_server).chat.completions.with_raw_response.create(
            model=MODEL, messages=MSG, max_tokens=2))
        r = raw.parse()
        assert spans.get_finished_spans() == ()
        # the SDK's span context went on the wire, flagged "not sampled"
        _version, trace_id, span_id, flags = raw.http_request.headers["traceparent"].split("-")
        assert flags == "00" and trace_id == r.trace_id and span_id != "0" * 16
        assert not _otel._live
        data = reader.get_metrics_data()
        [duration] = [m for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics
                      if m.name == "gen_ai.client.operation.duration"]
        assert sum(p.count for p in duration.data.data_points) == 1
    finally:
        _reset_globals()


# --------------------------------------------------------------------------- across the wire


@pytest.fixture()
def traced_server(tmp_path: Any) -> Iterator[tuple[Any, Any]]:
    spans = tmp_path / "server-spans.jsonl"
    srv = start_ref_server("--trace-spans", str(spans))
    yield srv, spans
    stop_ref_server(srv)


def _server_spans(path: Any, trace_id: str, want: int) -> list[dict[str, Any]]:
    import json

    deadline = time.monotonic() + 10
    found: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        if path.exists():
            found = [json.loads(line) for line in path.read_text().splitlines()]
            found = [s for s in found if s["trace_id"] == trace_id]
            if len(found) >= want:
                return found
        time.sleep(0.05)
    raise AssertionError(f"server spans of trace {trace_id}: {found}")


@pytest.mark.parametrize("stream", [False, True])
def test_one_trace_from_client_to_server(drive: Drive, otel: Telemetry, traced_server: Any, stream: bool) -> None:
    srv, path = traced_server
    client = _client(drive, srv)
    with trace.get_tracer("app").start_as_current_span("app work") as app:
        if stream:
            drive.iterate(drive(client.chat.completions.create(model=MODEL, messages=MSG, max_tokens=4,
                                                               stream=True)))
        else:
            drive(client.chat.completions.create(model=MODEL, messages=MSG, max_tokens=4))
    [call] = otel.finished("chat")
    trace_id = _hex(call.context.trace_id, 32)
    assert call.context.trace_id == app.get_span_context().trace_id
    spans = _server_spans(path, trace_id, want=4)
    [server] = [s for s in spans if s["kind"] == "SERVER"]
    assert server["name"] == "POST /v1/chat/completions"
    assert server["parent_span_id"] == _hex(call.context.span_id, 16)  # the client span's child
    assert server["attributes"]["http.response.status_code"] == 200
    children = {s["name"]: s for s in spans if s["parent_span_id"] == server["span_id"]}
    assert {"queue", "prefill", "decode"} <= set(children)
    assert children["queue"]["end_ns"] <= children["prefill"]["start_ns"] + 1000
    assert children["prefill"]["end_ns"] <= children["decode"]["start_ns"] + 1000
    assert server["start_ns"] <= children["queue"]["start_ns"] <= children["decode"]["end_ns"] <= server["end_ns"]


def test_every_metric_is_documented_in_the_readme_with_its_instrument_and_unit() -> None:
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    for name, (kind, unit, _what) in _otel.METRICS.items():
        assert f"| `{name}` | {kind} | {unit} |" in readme, name


# --------------------------------------------------------------------------- resumed streams


def test_each_resume_of_a_stream_is_its_own_span_linked_to_its_call(drive: Drive, otel: Telemetry,
                                                                    ref_server: Any) -> None:
    # A chat stream cut after content and continued (stream_resume="continue"): one resume span,
    # a child of the call's span and linked to it; the call's span ends with the stream, whole.
    client = _client(drive, ref_server, max_retries=2, stream_resume="continue")
    stream = drive(client.chat.completions.create(
        model=MODEL, messages=MSG, max_tokens=20, temperature=0, stream=True,
        extra_headers={"x-fault": f"reset_after=5;once={uuid.uuid4().hex}"}))
    drive.iterate(stream)
    assert stream.timings.resumes == 1
    [resume] = otel.wait_for(lambda s: s.attributes.get("llmclient.resume.step") == "continue")
    [call] = otel.wait_for(lambda s: s.name.startswith("chat") and s is not resume
                           and "llmclient.resume.step" not in s.attributes)
    assert resume.attributes["llmclient.resume.attempt"] == 1
    assert resume.parent is not None and resume.parent.span_id == call.context.span_id
    assert [lk.context.span_id for lk in resume.links] == [call.context.span_id]
    assert resume.status.status_code is StatusCode.UNSET
    assert call.status.status_code is StatusCode.UNSET


# --------------------------------------------------------------------------- the Anthropic face


def test_an_anthropic_call_and_stream_are_genai_spans_of_provider_anthropic(drive: Drive, otel: Telemetry,
                                                                            ref_server: Any) -> None:
    c = drive.client(llmclient, face="Anthropic", base_url=ref_server.url, api_key="k")
    ask = [{"role": "user", "content": "hi"}]
    m = drive(c.messages.create(model="claude-haiku-4-5", max_tokens=5, messages=ask, stop_sequences=["zz"]))
    [span] = otel.finished("chat")
    a = span.attributes
    assert span.name == "chat claude-haiku-4-5" and a["gen_ai.provider.name"] == "anthropic"
    assert a["gen_ai.response.id"] == m.id and a["gen_ai.response.finish_reasons"] == (m.stop_reason,)
    assert a["gen_ai.usage.input_tokens"] == m.usage.input_tokens
    assert a["gen_ai.usage.output_tokens"] == m.usage.output_tokens == 5
    assert a["gen_ai.request.stop_sequences"] == ("zz",) and a["gen_ai.request.max_tokens"] == 5
    assert _hex(span.context.trace_id, 32) == m.trace_id
    drive.iterate(drive(c.messages.create(model="claude-haiku-4-5", max_tokens=6, messages=ask, stream=True)))
    streamed = otel.wait_for(lambda s: s.attributes.get("llmclient.stream") is True)[0].attributes
    assert streamed["gen_ai.provider.name"] == "anthropic" and streamed["gen_ai.usage.output_tokens"] == 6
    assert streamed["gen_ai.response.finish_reasons"] == ("max_tokens",)
    assert streamed["gen_ai.usage.input_tokens"] == m.usage.input_tokens
    providers = {p.attributes["gen_ai.provider.name"] for p in otel.points("gen_ai.client.token.usage")}
    assert providers == {"anthropic"}
