"""The pure parts of the client: decisions and parsers, no sockets."""

from __future__ import annotations

import random
import subprocess
import sys
import uuid

import pytest

import llmclient
from llmclient._errors import describe_error_body, status_error_class
from llmclient.api.models import ChatCompletion, ChatCompletionChunk
from llmclient.layers.options import CallOptions, split_options
from llmclient.pipeline import retry as _retry
from llmclient.pipeline.call import NOT_GIVEN
from llmclient.pipeline.timings import parse_server_timing
from llmclient.pipeline.tracing import new_trace_context, parse_traceparent
from llmclient.wire.codec import JSON_CODEC, SSEDecoder


def test_public_all_is_sorted_and_every_name_exists() -> None:
    assert llmclient.__all__ == sorted(llmclient.__all__, key=lambda n: (not n.isupper(), n))
    for name in llmclient.__all__:
        assert hasattr(llmclient, name), name
    assert llmclient.Client is llmclient.OpenAI and llmclient.AsyncClient is llmclient.AsyncOpenAI


def test_import_does_not_load_optional_heavy_modules() -> None:
    code = "import sys, llmclient; print(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    # and the rooms' lazy parts: each is loaded by the first call that needs it (the reason is on
    # its import; tests/client/test_feature_boundaries.py checks there is one)
    for heavy in ("google.protobuf", "PIL", "opentelemetry", "redis", "h2", "hpack", "asyncio", "openai",
                  "llmclient.wire.protobuf", "llmclient.preprocess", "llmclient.speculative",
                  "llmclient.features.images", "llmclient.features.prefetch", "llmclient.features.hedge_run",
                  "llmclient.cache", "llmclient.transport.http2.sync_driver",
                  "llmclient.transport.http2.async_driver", "llmclient._doctor"):
        assert heavy not in out, f"import llmclient loaded {heavy}"


@pytest.mark.parametrize(
    ("status", "name"),
    [(400, "BadRequestError"), (401, "AuthenticationError"), (403, "PermissionDeniedError"),
     (404, "NotFoundError"), (409, "ConflictError"), (422, "UnprocessableEntityError"),
     (429, "RateLimitError"), (500, "InternalServerError"), (503, "InternalServerError"),
     (418, "APIStatusError")],
)
def test_status_maps_to_official_error_class(status: int, name: str) -> None:
    cls = status_error_class(status)
    assert cls.__name__ == name
    assert issubclass(cls, llmclient.APIStatusError) and issubclass(cls, llmclient.APIError)


def test_error_tree_matches_official_hierarchy() -> None:
    assert issubclass(llmclient.APITimeoutError, llmclient.APIConnectionError)
    assert issubclass(llmclient.IncompleteStreamError, llmclient.APIError)
    assert issubclass(llmclient.MalformedResponseError, llmclient.APIResponseValidationError)
    assert issubclass(llmclient.APIError, llmclient.OpenAIError)


def test_html_error_page_is_reduced_to_its_title() -> None:
    raw = b"<html><head><title>502 Bad Gateway</title></head><body><h1>502</h1></body></html>"
    msg = describe_error_body(502, None, raw, "text/html")
    assert "502 Bad Gateway" in msg and "<h1>" not in msg and "HTML" in msg


def test_json_error_body_uses_its_message() -> None:
    msg = describe_error_body(404, {"error": {"message": "no such model"}}, b"", "application/json")
    assert msg == "Error code: 404 - no such model"


@pytest.mark.parametrize(
    ("headers", "expected"),
    [({"retry-after-ms": "250"}, 0.25), ({"retry-after": "3"}, 3.0), ({"retry-after": "0"}, 0.0),
     ({"retry-after": "600"}, None), ({"retry-after": "soon"}, None), ({}, None)],
)
def test_retry_after_headers(headers: dict[str, str], expected: float | None) -> None:
    assert _retry.retry_after_seconds(headers) == expected


def test_retry_after_http_date() -> None:
    got = _retry.retry_after_seconds({"retry-after": "Wed, 02 Dec 2026 12:00:10 GMT"}, now=1796212800.0)
    assert got == pytest.approx(10.0)


def test_backoff_grows_exponentially_with_bounded_jitter() -> None:
    rng = random.Random(7)
    delays = [_retry.backoff_delay(n, rng) for n in range(7)]
    for n, d in enumerate(delays):
        base = min(0.5 * 2**n, _retry.MAX_BACKOFF_S)
        assert 0.75 * base <= d <= base


def test_retry_policy_statuses_and_budget() -> None:
    for status in (408, 409, 429, 500, 502, 503):
        assert _retry.is_retryable_status(status, {})
    for status in (400, 401, 403, 404, 422):
        assert not _retry.is_retryable_status(status, {})
    assert _retry.is_retryable_status(400, {"x-should-retry": "true"})
    assert not _retry.is_retryable_status(503, {"x-should-retry": "false"})
    assert _retry.retry_delay(2, 2) is None
    assert _retry.retry_delay(0, 2, {"retry-after": "1"}) == 1.0


def test_server_timing_parsing() -> None:
    got = parse_server_timing('queue;dur=0.5, engine;desc="gpu";dur=12.25, cache, bad entry;;')
    assert got == {"queue": 0.5, "engine": 12.25, "cache": 0.0, "bad": 0.0}


def test_traceparent_continues_caller_trace() -> None:
    parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    ctx = new_trace_context(parent)
    assert ctx.trace_id == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert ctx.parent_span_id == "00f067aa0ba902b7" and ctx.span_id != "00f067aa0ba902b7"
    assert ctx.traceparent.startswith("00-4bf92f3577b34da6a3ce929d0e0e4736-")


@pytest.mark.parametrize(
    "bad", ["", "00-0000000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "nonsense"],
)
def test_invalid_traceparent_starts_a_new_trace(bad: str) -> None:
    assert parse_traceparent(bad) is None
    ctx = new_trace_context(bad)
    assert ctx.parent_span_id is None and len(ctx.trace_id) == 32


def test_sse_decoder_handles_split_frames_crlf_comments_and_done() -> None:
    dec = SSEDecoder()
    wire = (b': keep-alive\r\n\r\ndata: {"choices": [{"index": 0, "delta": {"content": "a"}}]}\r\n\r\n'
            b'event: message\ndata: {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}\n\n'
            b"data: [DONE]\n\n")
    out = []
    for i in range(0, len(wire), 7):  # every possible split point pattern, CR/LF pairs included
        out += dec.feed(wire[i:i + 7])
    dec.close()
    assert [o["choices"][0].get("finish_reason") for o in out] == [None, "stop"]
    assert dec.done


def test_sse_decoder_multiline_data_field() -> None:
    dec = SSEDecoder()
    out = dec.feed(b'data: {"choices":\ndata: []}\n\ndata: [DONE]\n\n')
    assert out == [{"choices": []}]


def test_sse_stream_without_done_or_finish_is_incomplete() -> None:
    dec = SSEDecoder()
    dec.feed(b'data: {"choices": [{"index": 0, "delta": {"content": "a"}}]}\n\n')
    with pytest.raises(llmclient.IncompleteStreamError, match="without a finish_reason"):
        dec.close()


def test_sse_stream_cut_inside_an_event_is_incomplete() -> None:
    dec = SSEDecoder()
    dec.feed(b'data: {"choices": [{"index": 0, "delta": {"con')
    with pytest.raises(llmclient.IncompleteStreamError, match="inside an SSE event"):
        dec.close()


def test_sse_finish_reason_without_done_is_complete() -> None:
    dec = SSEDecoder()
    dec.feed(b'data: {"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]}\n\n')
    dec.close()


def test_sse_malformed_json_names_the_event() -> None:
    dec = SSEDecoder()
    dec.feed(b'data: {"choices": []}\n\n')
    with pytest.raises(llmclient.MalformedResponseError, match=r"SSE event 2 .* not JSON"):
        dec.feed(b'data: {"choices": [\n\n')


def test_stream_decoder_rejects_non_sse_content_type() -> None:
    with pytest.raises(llmclient.MalformedResponseError, match="text/event-stream"):
        JSON_CODEC.stream_decoder("application/json")


@pytest.mark.parametrize(
    ("raw", "ctype", "match"),
    [(b"<html>Welcome to nginx</html>", "text/html", "HTML page"), (b"", "application/json", "empty body"),
     (b'{"a": [', "application/json", "not valid JSON"), (b"[1, 2]", "application/json", "JSON object")],
)
def test_json_codec_names_what_was_wrong(raw: bytes, ctype: str, match: str) -> None:
    with pytest.raises(llmclient.MalformedResponseError, match=match):
        JSON_CODEC.decode("/chat/completions", raw, ctype)


def test_models_attribute_access_and_absent_optionals() -> None:
    data = {"id": "x", "object": "chat.completion", "created": 1, "model": "m", "extra_field": {"k": 1},
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": None,
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}}]}
    r = ChatCompletion(data)
    msg = r.choices[0].message
    assert msg.tool_calls[0].function.name == "f" and msg.content is None
    assert msg.refusal is None and r.usage is None and r.system_fingerprint is None
    assert r.extra_field.k == 1
    with pytest.raises(AttributeError):
        _ = r.not_a_field
    dumped = r.model_dump()
    assert dumped["usage"] is None and dumped["choices"][0]["message"]["tool_calls"][0]["id"] == "c1"
    assert "usage" not in r.to_dict()
    assert llmclient.OpenAI.__name__ and '"id":"x"' in r.model_dump_json()
    chunk = ChatCompletionChunk({"choices": [{"index": 0, "delta": {"content": "hi"}}]})
    assert chunk.choices[0].delta.content == "hi" and chunk.choices[0].finish_reason is None


def test_split_options_strips_llmclient_kwargs() -> None:
    params = {"model": "m", "cache": True, "prefetch": ["a"], "images": "openai", "wire": "json",
              "temperature": NOT_GIVEN, "n": 2}
    body, opts = split_options(params, CallOptions())
    assert body == {"model": "m", "n": 2}
    assert opts.cache is True and opts.prefetch == ["a"] and opts.images == "openai"
    with pytest.raises(ValueError, match="wire"):
        split_options({"wire": "xml"}, CallOptions())


def test_missing_api_key_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(llmclient.OpenAIError, match="api_key"):
        llmclient.OpenAI(base_url="http://127.0.0.1:1/v1")


def test_bad_base_url_scheme_is_rejected() -> None:
    with pytest.raises(ValueError, match="base_url"):
        llmclient.OpenAI(base_url="ftp://example/v1")


def test_with_options_shares_the_connection_pool() -> None:
    c = llmclient.OpenAI(base_url="http://127.0.0.1:9/v1")
    c2 = c.with_options(timeout=3.0, max_retries=5)
    assert c2._transport is c._transport and c2.max_retries == 5 and c2.timeout.read == 3.0
    assert llmclient.OpenAI(base_url="http://127.0.0.1:9/v1")._transport is c._transport


def test_free_retry_only_where_the_protocol_says_the_request_never_ran() -> None:
    import httpx

    from llmclient.transport.http2 import (
        ConnectionLost,
        GoAwayError,
        HTTP2ProtocolError,
        NotHTTP2,
        StreamResetError,
    )

    assert _retry.free_retry(GoAwayError(13, 11, 0), 5)  # above last-stream-id (RFC 9113 6.8)
    assert not _retry.free_retry(GoAwayError(13, 11, 0), _retry.MAX_FREE_RETRIES)
    assert _retry.free_retry(StreamResetError(3, 7), 0)  # REFUSED_STREAM
    assert not _retry.free_retry(StreamResetError(3, 2), 0)  # INTERNAL_ERROR: may have run
    assert _retry.free_retry(NotHTTP2("h2c answered in HTTP/1.1"), 0)
    # As the drivers raise them: httpx's class, the typed original inside, the flag copied.
    assert _retry.free_retry(HTTP2ProtocolError(GoAwayError(13, 11, 0)), 0)
    assert not _retry.free_retry(HTTP2ProtocolError(StreamResetError(3, 2)), 0)
    # Closed before the answer, after a GOAWAY that covered the stream, or on a reused
    # connection: it may have run, so only max_retries (with backoff) may send it again.
    assert not _retry.free_retry(ConnectionLost("Server disconnected (after GOAWAY, last_stream_id:11)"), 0)
    assert not _retry.free_retry(httpx.RemoteProtocolError("Server disconnected without sending a response."), 0)
    assert not _retry.free_retry(httpx.ConnectError("Connection refused"), 0)


def test_build_call_headers_trace_and_idempotency() -> None:
    import httpx

    from llmclient.layers.calls import build_call

    def make(extra: dict[str, str] | None) -> llmclient.Call:
        return build_call("POST", "/chat/completions", {"model": "m"}, base_url="http://h/v1",
                          headers={"authorization": "Bearer k"}, query={}, timeout=httpx.Timeout(5.0),
                          max_retries=2, scope="s", options=CallOptions(), extra_headers=extra,
                          extra_body={"top_k": 2})
    call = make({"X-Request-ID": "mine", "X-Drop": "1"})
    assert call.headers["x-request-id"] == "mine" and call.headers["x-drop"] == "1"
    assert call.headers["traceparent"] == call.trace.traceparent and call.body == {"model": "m", "top_k": 2}
    assert len(call.headers["idempotency-key"]) == 32 and call.url == "http://h/v1/chat/completions"
    other = make(None)
    assert uuid.UUID(other.headers["x-request-id"]).hex == other.trace.trace_id
    assert other.headers["idempotency-key"] != call.headers["idempotency-key"]


def test_call_record_to_dict_parses_server_timing_lazily() -> None:
    from llmclient.pipeline.timings import CallRecord

    record = CallRecord()
    record.start()
    record.finish_headers("HTTP/2", "total;dur=3.5")
    record.finish()
    out = record.to_dict()
    assert out["server_timing"] == {"total": 3.5} and out["http_version"] == "HTTP/2"
    assert not any(k.startswith("_") for k in out) and out["total_ms"] >= 0
