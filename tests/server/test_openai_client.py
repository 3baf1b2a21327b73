"""The official ``openai`` client works against the reference server unchanged."""

from __future__ import annotations

import asyncio
import ssl

import httpx
import openai
import pytest

from benchmarks.server.tokenizer import count_tokens

MODEL = "gpt-4o-mini"
MESSAGES = [{"role": "user", "content": "Say something about the sea."}]


def _client(server, **kw) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0, **kw)


def test_chat_non_stream_returns_text_and_usage(ref_server):
    r = _client(ref_server).chat.completions.create(model=MODEL, messages=MESSAGES, max_tokens=12, seed=7)
    choice = r.choices[0]
    assert choice.finish_reason in ("stop", "length")
    assert choice.message.content
    assert r.usage.completion_tokens == count_tokens(choice.message.content)
    assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens
    assert r.usage.prompt_tokens_details.cached_tokens == 0


def test_same_seed_gives_same_text(ref_server):
    c = _client(ref_server)
    a, b = (c.chat.completions.create(model=MODEL, messages=MESSAGES, max_tokens=20, seed=3)
            for _ in range(2))
    other = c.chat.completions.create(model=MODEL, messages=MESSAGES, max_tokens=20, seed=4)
    assert a.choices[0].message.content == b.choices[0].message.content
    assert other.choices[0].message.content != a.choices[0].message.content


def test_stream_matches_non_stream_and_reports_usage(ref_server):
    c = _client(ref_server)
    full = c.chat.completions.create(model=MODEL, messages=MESSAGES, max_tokens=15, temperature=0)
    chunks = list(c.chat.completions.create(model=MODEL, messages=MESSAGES, max_tokens=15, temperature=0,
                                            stream=True, stream_options={"include_usage": True}))
    text = "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)
    assert text == full.choices[0].message.content
    assert chunks[-1].usage.completion_tokens == full.usage.completion_tokens
    assert [ch.choices[0].finish_reason for ch in chunks if ch.choices][-1] == "length"


def test_n_choices_and_stop(ref_server):
    c = _client(ref_server)
    r = c.chat.completions.create(model=MODEL, messages=MESSAGES, max_tokens=30, n=3, seed=1)
    assert [ch.index for ch in r.choices] == [0, 1, 2]
    word = r.choices[0].message.content.split()[3]
    stopped = c.chat.completions.create(model=MODEL, messages=MESSAGES, max_tokens=30, seed=1, stop=[word])
    assert word not in stopped.choices[0].message.content
    assert stopped.choices[0].finish_reason == "stop"
    assert 0 < stopped.usage.completion_tokens <= 30


def test_tool_choice_forces_a_tool_call_with_schema_arguments(ref_server):
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"},
                                         "unit": {"type": "string", "enum": ["C", "F"]}}}}}]
    c = _client(ref_server)
    r = c.chat.completions.create(model=MODEL, messages=MESSAGES, tools=tools, max_tokens=8, seed=2,
                                  tool_choice={"type": "function", "function": {"name": "get_weather"}})
    call = r.choices[0].message.tool_calls[0]
    args = __import__("json").loads(call.function.arguments)
    assert call.function.name == "get_weather"
    assert isinstance(args["city"], str) and isinstance(args["days"], int) and args["unit"] == "C"
    streamed = list(c.chat.completions.create(model=MODEL, messages=MESSAGES, tools=tools, max_tokens=8,
                                              seed=2, tool_choice="required", stream=True))
    deltas = [d for ch in streamed for d in (ch.choices[0].delta.tool_calls or [])]
    assert __import__("json").loads(deltas[0].function.arguments) == args


def test_completions_and_echo(ref_server):
    r = _client(ref_server).completions.create(model=MODEL, prompt="Once upon a time", max_tokens=5, echo=True)
    assert r.choices[0].text.startswith("Once upon a time")
    assert r.usage.completion_tokens == 5


def test_embeddings_float_and_base64_agree(ref_server):
    c = _client(ref_server)
    b64 = c.embeddings.create(model="text-embedding-3-small", input=["hello world", "hello there"])
    flt = c.embeddings.create(model="text-embedding-3-small", input="hello world",
                              encoding_format="float", dimensions=64)
    assert len(b64.data) == 2 and len(b64.data[0].embedding) == 1536
    assert len(flt.data[0].embedding) == 64
    norm = sum(v * v for v in flt.data[0].embedding)
    assert norm == pytest.approx(1.0, rel=1e-5)


def test_models_list_and_retrieve(ref_server):
    c = _client(ref_server)
    ids = [m.id for m in c.models.list()]
    assert MODEL in ids and "text-embedding-3-small" in ids
    assert c.models.retrieve(MODEL).id == MODEL
    with pytest.raises(openai.NotFoundError):
        c.models.retrieve("no-such-model")


def test_errors_map_to_client_exception_classes(ref_server):
    c = _client(ref_server)
    with pytest.raises(openai.NotFoundError) as nf:
        c.chat.completions.create(model="no-such-model", messages=MESSAGES)
    assert nf.value.body["code"] == "model_not_found"
    with pytest.raises(openai.BadRequestError) as bad:
        c.chat.completions.create(model=MODEL, messages=MESSAGES, temperature=5)
    assert bad.value.body["param"] == "temperature"
    with pytest.raises(openai.RateLimitError):
        c.chat.completions.create(model=MODEL, messages=MESSAGES, extra_headers={"x-fault": "status=429"})
    with pytest.raises(openai.InternalServerError):
        c.chat.completions.create(model=MODEL, messages=MESSAGES, extra_headers={"x-fault": "status=503"})


def test_async_client_concurrent_requests(ref_server):
    async def main() -> list[str]:
        async with openai.AsyncOpenAI(base_url=ref_server.base_url, api_key="k", max_retries=0) as c:
            rs = await asyncio.gather(*(c.chat.completions.create(
                model=MODEL, messages=MESSAGES, max_tokens=5, seed=i) for i in range(8)))
            stream = await c.chat.completions.create(model=MODEL, messages=MESSAGES, max_tokens=5,
                                                     stream=True)
            parts = [ch.choices[0].delta.content async for ch in stream if ch.choices]
            return [r.choices[0].message.content for r in rs] + ["".join(p or "" for p in parts)]

    texts = asyncio.run(main())
    assert len(texts) == 9 and all(texts)


@pytest.mark.parametrize("http2", [False, True])
def test_http_versions(ref_server, http2):
    with httpx.Client(http1=not http2, http2=http2) as http:
        r = _client(ref_server, http_client=http).chat.completions.with_raw_response.create(
            model=MODEL, messages=MESSAGES, max_tokens=3)
        assert r.http_response.http_version == ("HTTP/2" if http2 else "HTTP/1.1")
        assert "prefill;dur=" in r.headers["server-timing"]


def test_http1_only_server_refuses_h2c_and_serves_http1(ref_server_h1):
    with httpx.Client(http1=False, http2=True) as h2, pytest.raises(httpx.RemoteProtocolError):
        h2.get(ref_server_h1.url + "/health")
    with httpx.Client(http2=True) as http:
        r = _client(ref_server_h1, http_client=http).chat.completions.with_raw_response.create(
            model=MODEL, messages=MESSAGES, max_tokens=3)
        assert r.http_response.http_version == "HTTP/1.1"


def test_tls_with_generated_ca_negotiates_h2(ref_server_tls):
    assert ref_server_tls.url.startswith("https://")
    ctx = ssl.create_default_context(cafile=ref_server_tls.ca_path)
    with httpx.Client(http2=True, verify=ctx) as http:
        r = _client(ref_server_tls, http_client=http).chat.completions.with_raw_response.create(
            model=MODEL, messages=MESSAGES, max_tokens=3)
        assert r.http_response.http_version == "HTTP/2"
        assert r.parse().choices[0].message.content


@pytest.fixture(scope="module")
def hypercorn_server():
    from tests.conftest import start_ref_server, stop_ref_server

    server = start_ref_server("--server", "hypercorn")
    yield server
    stop_ref_server(server)


def test_same_app_under_hypercorn(hypercorn_server):
    with httpx.Client(http1=False, http2=True) as http:
        c = _client(hypercorn_server, http_client=http)
        r = c.chat.completions.with_raw_response.create(model=MODEL, messages=MESSAGES, max_tokens=4,
                                                         temperature=0)
        assert r.http_response.http_version == "HTTP/2"
        streamed = c.chat.completions.create(model=MODEL, messages=MESSAGES, max_tokens=4, temperature=0,
                                             stream=True)
        text = "".join(ch.choices[0].delta.content or "" for ch in streamed if ch.choices)
        assert text == r.parse().choices[0].message.content


def test_stream_stop_sequence_ends_the_stream(ref_server):
    c = _client(ref_server)
    full = c.chat.completions.create(model=MODEL, messages=MESSAGES, max_tokens=40, temperature=0)
    word = full.choices[0].message.content.split()[4]
    chunks = list(c.chat.completions.create(model=MODEL, messages=MESSAGES, max_tokens=40, temperature=0,
                                            stop=word, stream=True, stream_options={"include_usage": True}))
    text = "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)
    assert full.choices[0].message.content.startswith(text) and word not in text
    assert [ch.choices[0].finish_reason for ch in chunks if ch.choices][-1] == "stop"
    assert 0 < chunks[-1].usage.completion_tokens < full.usage.completion_tokens


def test_no_server_timing_sends_none_as_vllm_does(ref_server):
    from tests.conftest import start_ref_server, stop_ref_server

    server = start_ref_server("--no-server-timing")
    try:
        body = {"model": MODEL, "messages": MESSAGES, "max_tokens": 3}
        with httpx.Client(base_url=server.base_url) as http:
            plain = http.post("/chat/completions", json=body)
            assert plain.status_code == 200 and "server-timing" not in plain.headers
            streamed = http.post("/chat/completions", json={**body, "stream": True})
            assert streamed.status_code == 200 and "server-timing" not in streamed.headers
            assert "data: [DONE]" in streamed.text and "server-timing" not in streamed.text
        with httpx.Client(base_url=ref_server.base_url) as http:  # the default sends it
            streamed = http.post("/chat/completions", json={**body, "stream": True})
            assert ": server-timing " in streamed.text
    finally:
        stop_ref_server(server)
