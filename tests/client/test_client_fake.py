"""The client against an in-process server with exact faults (tests/client/fakeserver.py).

Each test runs through ``OpenAI`` and ``AsyncOpenAI`` (``drive``: each test runs on both).
"""

from __future__ import annotations

import inspect
import logging
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest

import llmclient
import llmclient.layers.answer
from llmclient.wire.compression import supported_encodings
from tests._both import Drive

from .fakeserver import H1Server, HypercornServer

MSG = [{"role": "user", "content": "hi"}]


def client(drive: Drive, server: Any, **kw: Any) -> Any:
    """``OpenAI`` or ``AsyncOpenAI`` for ``server``, with no retries unless told."""
    kw.setdefault("max_retries", 0)
    return drive.client(base_url=server.base_url, **kw)


def fault(spec: str) -> dict[str, str]:
    return {"x-test-fault": spec}


def drain_into(drive: Drive, stream: Any, got: list[Any]) -> None:
    """Every chunk of ``stream`` into ``got`` as it comes, so a failure leaves what came before."""
    if not drive.is_async:
        for chunk in stream:
            got.append(chunk)
        return

    async def run() -> None:
        async for chunk in stream:
            got.append(chunk)

    drive(run())


def settled(call: Callable[[], Any]) -> Callable[[], Any]:
    """``call`` for ``drive.gather`` that gives its exception back instead of raising it."""
    def run() -> Any:
        try:
            value = call()
        except Exception as exc:
            return exc
        if not inspect.isawaitable(value):
            return value

        async def wait() -> Any:
            try:
                return await value
            except Exception as exc:
                return exc

        return wait()

    return run


# -- resources ---------------------------------------------------------------------------------

def test_chat_completion(drive: Drive, fake: HypercornServer) -> None:
    r = drive(client(drive, fake).chat.completions.create(model="test-model", messages=MSG, temperature=0.2, n=1))
    assert r.choices[0].message.content == "Hello world"
    assert r.usage.prompt_tokens == 5 and r.choices[0].finish_reason == "stop"
    seen = fake.app.last("/chat/completions")
    assert seen.body == {"model": "test-model", "messages": MSG, "temperature": 0.2, "n": 1}
    assert seen.http_version == "2" and seen.headers["authorization"] == "Bearer sk-test-key"


def test_tool_calls_are_attributes(drive: Drive, fake: HypercornServer) -> None:
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    r = drive(client(drive, fake).chat.completions.create(model="m", messages=MSG, tools=tools,
                                                          response_format={"type": "text"}))
    call = r.choices[0].message.tool_calls[0]
    assert call.function.name == "get_weather" and call.function.arguments == '{"city": "Paris"}'
    assert fake.app.last().body["tools"] == tools


def test_completions_and_models(drive: Drive, fake: HypercornServer) -> None:
    c = client(drive, fake)
    assert drive(c.completions.create(model="m", prompt="say")).choices[0].text == "Hello world"
    assert [m.id for m in drive.iterate(c.models.list())] == ["test-model"]
    assert drive(c.models.list()).data[0].id == "test-model"
    assert drive(c.models.retrieve("test-model")).owned_by == "me"
    with pytest.raises(llmclient.NotFoundError, match="does not exist") as info:
        drive(c.models.retrieve("nope"))
    assert info.value.status_code == 404 and info.value.code == "model_not_found"


def test_embeddings_float_default_travels_as_base64(drive: Drive, fake: HypercornServer) -> None:
    c = client(drive, fake)
    r = drive(c.embeddings.create(model="e", input=["a", "b"]))
    assert fake.app.last().body["encoding_format"] == "base64"
    assert r.data[1].embedding == [1.5, -1.25, 2.0]
    raw = drive(c.embeddings.create(model="e", input="a", encoding_format="base64"))
    assert isinstance(raw.data[0].embedding, str)
    floats = drive(c.embeddings.create(model="e", input="a", encoding_format="float"))
    assert floats.data[0].embedding == [0.5, -1.25, 2.0]
    assert drive(c.embeddings.create(model="e", input="x")).data[0].embedding == [0.5, -1.25, 2.0]


def test_an_embedding_that_is_not_base64_float32_is_a_clear_error(drive: Drive, fake: HypercornServer) -> None:
    c = client(drive, fake)
    with pytest.raises(llmclient.MalformedResponseError, match="embedding 0 is not base64 float32") as info:
        drive(c.embeddings.create(model="e", input="a", extra_headers={"x-test-fault": "bad_base64"}))
    assert info.value.trace_id
    # ... and not kept by the cache: the next identical call goes to the server again
    cached = client(drive, fake, cache="memory")

    def upstream() -> int:
        return sum(seen.path.endswith("/embeddings") for seen in fake.app.seen)

    before = upstream()
    for _ in range(2):  # a good answer is kept: the second is a hit
        drive(cached.embeddings.create(model="e", input="good"))
    assert upstream() - before == 1
    for _ in range(2):
        with pytest.raises(llmclient.MalformedResponseError):
            drive(cached.embeddings.create(model="e", input="bad", extra_headers={"x-test-fault": "bad_base64"}))
    assert upstream() - before == 3
    # asked for base64 (nothing decoded): handed over as sent
    raw = drive(c.embeddings.create(model="e", input="a", encoding_format="base64",
                                    extra_headers={"x-test-fault": "bad_base64"}))
    assert raw.data[0].embedding == "MDEyMzQ1Njc4OQ=="


def test_extras_reach_the_server_and_llmclient_options_do_not(drive: Drive, fake: HypercornServer) -> None:
    drive(client(drive, fake).chat.completions.create(
        model="m", messages=MSG, extra_headers={"X-Custom": "1"}, extra_query={"q": "v"},
        extra_body={"top_k": 3}, timeout=10, cache=False, prefetch=None, images=False, wire="json",
    ))
    seen = fake.app.last()
    assert seen.headers["x-custom"] == "1" and seen.body["top_k"] == 3
    assert not {"cache", "prefetch", "images", "wire"} & set(seen.body)


def test_with_raw_response(drive: Drive, fake: HypercornServer) -> None:
    raw = drive(client(drive, fake).chat.completions.with_raw_response.create(model="m", messages=MSG))
    assert raw.status_code == 200 and raw.headers["x-request-id"].startswith("srv-")
    assert raw.parse().choices[0].message.content == "Hello world"
    assert raw.parse().usage.total_tokens == 7


def test_response_carries_trace_request_id_and_timings(drive: Drive, fake: HypercornServer) -> None:
    c = client(drive, fake)
    drive(c.models.list())
    r = drive(c.chat.completions.create(model="m", messages=MSG))
    seen = fake.app.last()
    assert seen.headers["traceparent"] == f"00-{r.trace_id}-{seen.headers['traceparent'][36:52]}-01"
    assert seen.headers["x-request-id"] == str(uuid.UUID(r.trace_id))  # the trace id as a UUID
    assert r._request_id.startswith("srv-")
    t = r.timings
    assert t.http_version == "HTTP/2" and t.connection_reused is True and t.retries == 0
    assert t.first_byte_ms is not None and t.total_ms is not None and t.bytes_received > 0
    assert t.server_timing == {"queue": 0.5, "engine": 12.25, "cache": 0.0}
    assert "trace_id" not in r.model_dump()


def test_caller_traceparent_is_continued(drive: Drive, fake: HypercornServer) -> None:
    parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    r = drive(client(drive, fake).chat.completions.create(model="m", messages=MSG,
                                                          extra_headers={"traceparent": parent}))
    sent = fake.app.last().headers["traceparent"]
    assert r.trace_id == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert sent.startswith("00-4bf92f3577b34da6a3ce929d0e0e4736-") and "00f067aa0ba902b7" not in sent


def test_fanout_gets_one_trace_per_call(drive: Drive, fake: HypercornServer) -> None:
    c = client(drive, fake)
    rs = drive.gather([lambda: c.chat.completions.create(model="m", messages=MSG)] * 8, workers=8)
    assert {r.choices[0].message.content for r in rs} == {"Hello world"}
    assert len({r.trace_id for r in rs}) == 8


# -- streaming ---------------------------------------------------------------------------------

def test_stream_iteration_and_usage(drive: Drive, fake: HypercornServer) -> None:
    c = client(drive, fake)
    stream = drive(c.chat.completions.create(model="m", messages=MSG, stream=True,
                                             stream_options={"include_usage": True}))
    chunks = drive.iterate(stream)
    text = "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)
    assert text == "tok0 tok1 tok2 tok3 tok4 "
    assert chunks[-1].usage.completion_tokens == 5
    assert fake.app.last().body["stream"] is True
    assert stream.timings.first_token_ms is not None and stream.trace_id
    with drive.enter(drive(c.chat.completions.create(model="m", messages=MSG, stream=True))) as stream:
        deltas = [ch.choices[0].delta.content for ch in drive.iterate(stream) if ch.choices[0].delta.content]
    assert deltas == ["tok0 ", "tok1 ", "tok2 ", "tok3 ", "tok4 "]


def test_completions_stream(drive: Drive, fake: HypercornServer) -> None:
    with drive.enter(drive(client(drive, fake).completions.create(model="m", prompt="p", stream=True))) as stream:
        assert "".join(c.choices[0].text for c in drive.iterate(stream)) == "tok0 tok1 tok2 tok3 tok4 "


def test_closing_a_stream_early_cancels_it_and_keeps_the_connection(drive: Drive, fake: HypercornServer) -> None:
    c = client(drive, fake)
    drive(c.models.list())
    stream = drive(c.chat.completions.create(model="m", messages=MSG, stream=True,
                                             extra_headers=fault("slow_ms=20;chunks=200")))
    rid = fake.app.last().headers["x-request-id"]
    assert len(drive.iterate(stream, limit=2)) == 2
    drive(stream.close())
    deadline = time.monotonic() + 5
    while rid not in fake.app.cancelled and time.monotonic() < deadline:
        drive.sleep(0.02)
    assert rid in fake.app.cancelled, "server did not see the stream cancelled"
    assert fake.app.chunks_sent[rid] < 200
    after = drive(c.chat.completions.create(model="m", messages=MSG))
    assert after.timings.connection_reused is True


def test_truncated_stream_raises(drive: Drive, fake: HypercornServer) -> None:
    stream = drive(client(drive, fake).chat.completions.create(model="m", messages=MSG, stream=True,
                                                               extra_headers=fault("cut_after=3")))
    got: list[Any] = []
    with pytest.raises(llmclient.IncompleteStreamError, match="without a finish_reason") as info:
        drain_into(drive, stream, got)
    assert len(got) == 3 and info.value.trace_id == stream.trace_id and info.value.timings is not None


def test_malformed_sse_raises(drive: Drive, fake: HypercornServer) -> None:
    stream = drive(client(drive, fake).chat.completions.create(model="m", messages=MSG, stream=True,
                                                               extra_headers=fault("malformed_sse")))
    with pytest.raises(llmclient.MalformedResponseError, match="not JSON"):
        drive.iterate(stream)


def test_stream_finish_reason_without_done_is_accepted(drive: Drive, fake: HypercornServer) -> None:
    stream = drive(client(drive, fake).chat.completions.create(model="m", messages=MSG, stream=True,
                                                               extra_headers=fault("no_done")))
    assert drive.iterate(stream)[-1].choices[0].finish_reason == "stop"


def test_error_event_in_stream_raises_api_error(drive: Drive, fake: HypercornServer) -> None:
    stream = drive(client(drive, fake).chat.completions.create(model="m", messages=MSG, stream=True,
                                                               extra_headers=fault("error_event")))
    with pytest.raises(llmclient.APIError, match="engine exploded"):
        drive.iterate(stream)


# -- errors and retries ------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("status", "cls"),
    [(400, llmclient.BadRequestError), (401, llmclient.AuthenticationError),
     (403, llmclient.PermissionDeniedError), (404, llmclient.NotFoundError), (409, llmclient.ConflictError),
     (422, llmclient.UnprocessableEntityError), (429, llmclient.RateLimitError),
     (500, llmclient.InternalServerError), (503, llmclient.InternalServerError)],
)
def test_every_status_error_class(drive: Drive, fake: HypercornServer, status: int, cls: type) -> None:
    with pytest.raises(cls) as info:
        drive(client(drive, fake).chat.completions.create(model="m", messages=MSG,
                                                          extra_headers=fault(f"status={status}")))
    err = info.value
    assert err.status_code == status and err.body["message"] == f"injected {status}"
    assert err.code == f"e{status}" and err.request_id.startswith("srv-")
    assert err.trace_id and err.trace_id in str(err) and err.timings.retries == 0


def test_html_proxy_page_gives_readable_error(drive: Drive, fake: HypercornServer) -> None:
    with pytest.raises(llmclient.InternalServerError, match="502 Bad Gateway") as info:
        drive(client(drive, fake).chat.completions.create(model="m", messages=MSG,
                                                          extra_headers=fault("status=502;html")))
    assert "<html>" not in str(info.value)


@pytest.mark.parametrize(("spec", "match"), [("badjson", "not valid JSON"), ("htmlok", "HTML page")])
def test_malformed_200_body(drive: Drive, fake: HypercornServer, spec: str, match: str) -> None:
    with pytest.raises(llmclient.MalformedResponseError, match=match) as info:
        drive(client(drive, fake).chat.completions.create(model="m", messages=MSG, extra_headers=fault(spec)))
    assert info.value.trace_id


def test_retry_after_is_honoured_and_idempotency_key_kept(drive: Drive, fake: HypercornServer) -> None:
    c = client(drive, fake, max_retries=3)
    r = drive(c.chat.completions.create(model="m", messages=MSG,
                                        extra_headers=fault("status=429;retry_after=0;times=2")))
    assert r.timings.retries == 2
    attempts = [s for s in fake.app.seen if s.headers.get("x-request-id") == str(uuid.UUID(r.trace_id))]
    assert len(attempts) == 3
    assert len({s.headers["idempotency-key"] for s in attempts}) == 1


def test_retry_after_ms_and_5xx_retry(drive: Drive, fake: HypercornServer) -> None:
    c = client(drive, fake, max_retries=2)
    r = drive(c.chat.completions.create(model="m", messages=MSG,
                                        extra_headers=fault("status=503;retry_after_ms=10;times=1")))
    assert r.timings.retries == 1


def test_non_retryable_status_is_not_retried(drive: Drive, fake: HypercornServer) -> None:
    c = client(drive, fake, max_retries=3)
    with pytest.raises(llmclient.BadRequestError) as info:
        drive(c.chat.completions.create(model="m", messages=MSG, extra_headers=fault("status=400")))
    attempts = [s for s in fake.app.seen if s.headers.get("x-request-id") == str(uuid.UUID(info.value.trace_id))]
    assert len(attempts) == 1


def test_retries_exhausted_raise_the_last_error(drive: Drive, fake: HypercornServer) -> None:
    c = client(drive, fake, max_retries=1)
    with pytest.raises(llmclient.RateLimitError) as info:
        drive(c.chat.completions.create(model="m", messages=MSG, extra_headers=fault("status=429;retry_after=0")))
    assert info.value.timings.retries == 1


def test_retry_logs_carry_trace_id_and_never_the_key(
        drive: Drive, fake: HypercornServer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="llmclient")
    r = drive(client(drive, fake, max_retries=1).chat.completions.create(
        model="m", messages=MSG, extra_headers=fault("status=500;retry_after=0;times=1")))
    records = [rec for rec in caplog.records if rec.name == "llmclient"]
    assert any("retrying" in rec.getMessage() for rec in records)
    assert all(getattr(rec, "trace_id", None) == r.trace_id for rec in records if "retrying" in rec.getMessage())
    assert "sk-test-key" not in caplog.text


def test_read_timeout(drive: Drive, fake: HypercornServer) -> None:
    with pytest.raises(llmclient.APITimeoutError, match="read phase") as info:
        drive(client(drive, fake, timeout=0.2).chat.completions.create(model="m", messages=MSG,
                                                                       extra_headers=fault("stall_ms=1500")))
    assert info.value.trace_id


def test_connection_refused(drive: Drive) -> None:
    from .fakeserver import free_port

    c = drive.client(base_url=f"http://127.0.0.1:{free_port()}/v1", max_retries=0)
    with pytest.raises(llmclient.APIConnectionError, match="refused") as info:
        drive(c.chat.completions.create(model="m", messages=MSG))
    assert not isinstance(info.value, llmclient.APITimeoutError) and info.value.trace_id


# -- transport ---------------------------------------------------------------------------------

def test_tls_with_generated_certificate_negotiates_h2(
        drive: Drive, fake_tls: HypercornServer, fake_cert: tuple[str, str]) -> None:
    r = drive(client(drive, fake_tls, verify=fake_cert[0]).chat.completions.create(model="m", messages=MSG))
    assert r.timings.http_version == "HTTP/2"
    assert r.timings.connection_reused is False or r.timings.tls_ms is None


def test_tls_failure_is_a_connection_error(drive: Drive, fake_tls: HypercornServer) -> None:
    with pytest.raises(llmclient.APIConnectionError, match=r"TLS|certificate|SSL"):
        drive(client(drive, fake_tls).chat.completions.create(model="m", messages=MSG))


def test_http1_fallback_is_remembered_and_streams_reuse_the_connection(drive: Drive, fake_h1: H1Server) -> None:
    c = client(drive, fake_h1)
    r = drive(c.chat.completions.create(model="m", messages=MSG))
    assert r.choices[0].message.content == "Hello over HTTP/1.1" and r.timings.http_version == "HTTP/1.1"
    before = len(fake_h1.connections)
    for _ in range(3):
        stream = drive(c.chat.completions.create(model="m", messages=MSG, stream=True))
        assert len(drive.iterate(stream)) == 4 and stream.timings.connection_reused is True
    # a new client, same origin
    r2 = drive(client(drive, fake_h1).chat.completions.create(model="m", messages=MSG))
    assert r2.timings.connection_reused is True
    assert len(fake_h1.connections) == before


def test_second_connection_opens_at_the_stream_cap(drive: Drive, fake_narrow: HypercornServer) -> None:
    c = client(drive, fake_narrow)
    drive(c.models.list())
    streams = [drive(c.chat.completions.create(model="m", messages=MSG, stream=True,
                                               extra_headers=fault("slow_ms=30;chunks=3"))) for _ in range(6)]
    results = [len(drive.iterate(s)) for s in streams]
    assert all(n == 5 for n in results)
    ports = {s.client[1] for s in fake_narrow.app.seen if s.path.endswith("/chat/completions")}
    assert len(ports) >= 2, "all streams shared one connection beyond its cap"


def test_idle_connection_closed_by_server_does_not_fail_the_next_call(drive: Drive) -> None:
    server = HypercornServer(keep_alive_s=0.3).start()
    try:
        c = client(drive, server)  # max_retries=0: the call must succeed without a retry budget
        drive(c.chat.completions.create(model="m", messages=MSG))
        drive.sleep(1.5)  # the server closes the idle connection (GOAWAY then FIN)
        r = drive(c.chat.completions.create(model="m", messages=MSG))
        assert r.choices[0].message.content == "Hello world"
    finally:
        server.stop()


def test_warmup_opens_the_connection_before_the_first_call(drive: Drive) -> None:
    server = HypercornServer().start()
    try:
        # AsyncOpenAI(warm=True) starts warming on the running loop (without one it waits for
        # warmup() to be awaited), so the async client is made on the test's loop.
        async def on_the_loop() -> Any:
            return client(drive, server, warm=True)

        c = drive(on_the_loop()) if drive.is_async else client(drive, server, warm=True)
        assert drive(c.chat.completions.create(model="m", messages=MSG)).timings.connection_reused is True
    finally:
        server.stop()


def test_user_supplied_http_client(drive: Drive, fake: HypercornServer) -> None:
    http = drive.http_client()
    r = drive(client(drive, fake, http_client=http).chat.completions.create(model="m", messages=MSG))
    assert r.choices[0].message.content == "Hello world" and r.timings.http_version == "HTTP/1.1"


def test_cache_seam_answers_repeat_calls_without_the_server(drive: Drive, fake: HypercornServer) -> None:
    c = client(drive, fake, cache=True)
    body = {"model": "m", "messages": [{"role": "user", "content": "cache me"}], "temperature": 0}
    first = drive(c.chat.completions.create(**body))
    n = len(fake.app.seen)
    second = drive(c.chat.completions.create(**body))
    assert (first.timings.cache, second.timings.cache) == ("miss", "hit")
    assert second.choices[0].message.content == first.choices[0].message.content and len(fake.app.seen) == n
    drive(c.chat.completions.create(**body, cache=False))
    assert len(fake.app.seen) == n + 1


def test_goaway_that_covers_a_stream_is_never_a_free_resend(drive: Drive) -> None:
    # hypercorn names the request that trips keep_alive_max_requests in GOAWAY's last-stream-id,
    # then closes without answering it. RFC 9113 section 6.8 does not say such a stream went
    # unprocessed, so it is not re-sent for free: with max_retries=0 the caller sees the error;
    # with the default budget it is retried with backoff, as the official client does, and the
    # later calls move to a fresh connection. keep_alive_s bounds how long hypercorn holds the
    # connection before that close (its default, 30 s, per covered call).
    server = HypercornServer(max_requests=5, keep_alive_s=2).start()
    try:
        c = client(drive, server)  # max_retries=0
        for _ in range(5):
            assert drive(c.chat.completions.create(model="m", messages=MSG)).choices[0].message.content == \
                "Hello world"
        with pytest.raises(llmclient.APIConnectionError, match="last_stream_id:11") as info:
            drive(c.chat.completions.create(model="m", messages=MSG))
        assert info.value.trace_id
        patient = client(drive, server, max_retries=2)
        for _ in range(12):
            assert drive(patient.chat.completions.create(model="m", messages=MSG)).choices[0].message.content == \
                "Hello world"
        assert len({s.client[1] for s in server.app.seen}) >= 3
    finally:
        server.stop()


def test_concurrent_calls_through_goaway_never_leak_transport_errors(drive: Drive) -> None:
    # hypercorn answers streams that arrive after its GOAWAY with PROTOCOL_ERROR; whatever
    # happens, callers see llmclient errors (or answers), never a raw httpx exception.
    server = HypercornServer(max_requests=5, keep_alive_s=2).start()
    try:
        a = client(drive, server, max_retries=2)
        results = drive.gather([settled(lambda: a.chat.completions.create(model="m", messages=MSG))] * 12,
                               workers=12)
        assert all(not isinstance(r, BaseException) or isinstance(r, llmclient.APIError) for r in results)
        assert any(not isinstance(r, BaseException) for r in results), [repr(r)[:300] for r in results]
    finally:
        server.stop()


def test_tls_origin_that_alpn_selects_http1_gets_a_wide_pool(drive: Drive, fake_cert: tuple[str, str]) -> None:
    server = HypercornServer(certfile=fake_cert[0], keyfile=fake_cert[1], alpn=["http/1.1"]).start()
    try:
        c = client(drive, server, verify=fake_cert[0])
        drive(c.models.list())
        rs = drive.gather([lambda: c.chat.completions.create(model="m", messages=MSG,
                                                             extra_headers=fault("stall_ms=200"))] * 6,
                          workers=6)
        assert {r.timings.http_version for r in rs} == {"HTTP/1.1"}
        ports = {s.client[1] for s in server.app.seen if s.path.endswith("/chat/completions")}
        assert len(ports) >= 4, "HTTP/1.1 calls were queued on too few connections"
    finally:
        server.stop()


def test_active_opentelemetry_span_is_continued(drive: Drive, fake: HypercornServer) -> None:
    trace = pytest.importorskip("opentelemetry.trace")
    ctx = trace.SpanContext(trace_id=0x4BF92F3577B34DA6A3CE929D0E0E4736, span_id=0x00F067AA0BA902B7,
                            is_remote=False, trace_flags=trace.TraceFlags(1))
    c = client(drive, fake)
    with trace.use_span(trace.NonRecordingSpan(ctx)):
        r = drive(c.chat.completions.create(model="m", messages=MSG))
    assert r.trace_id == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert fake.app.last().headers["traceparent"].startswith("00-4bf92f3577b34da6a3ce929d0e0e4736-")


# -- compressed answers ------------------------------------------------------------------------

@pytest.mark.parametrize("coding", supported_encodings())
def test_compressed_answers_are_read_and_bombs_refused(
        drive: Drive, fake: HypercornServer, coding: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with drive.enter(client(drive, fake)) as c:
        raw = drive(c.chat.completions.with_raw_response.create(
            model="m", messages=MSG, extra_headers=fault(f"encoded={coding}:0.5")))
        r = raw.parse()
        assert len(r.choices[0].message.content) == 512 * 1024
        assert raw.headers["content-encoding"] == coding and raw.content.startswith(b"{")
        assert r.timings.bytes_received < 64 * 1024  # counted as on the wire, not decompressed
        monkeypatch.setattr(llmclient.layers.answer, "MAX_RESPONSE_BYTES", 1024 * 1024)
        with pytest.raises(llmclient.APIResponseValidationError, match="more than 1048576") as info:
            drive(c.chat.completions.create(model="m", messages=MSG, extra_headers=fault(f"encoded={coding}:8")))
        assert info.value.trace_id
