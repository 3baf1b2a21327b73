"""What openai-python's own resource tests found when its fixtures' client was llmclient's
(issue 29), each fixed and held here: the ``X-Stainless-*`` headers, a stream request's Accept and
a whole JSON answer to it, ``models.delete`` and the stored chat completions passed through,
``close()`` closing the ``http_client`` given, unknown keywords as ``TypeError``."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import openai
import pytest

import llmclient
from llmclient.wire.codec import as_stream_chunk
from tests._both import Drive

MODEL = "gpt-4o-mini"
HI = [{"role": "user", "content": "hi"}]


# -- X-Stainless-* ---------------------------------------------------------------------------

def test_stainless_headers_carry_llmclients_own_values_under_the_official_names(ref_server: Any,
                                                                                drive: Drive) -> None:
    client = drive.client(base_url=ref_server.base_url, api_key="k")
    raw = drive(client.chat.completions.with_raw_response.create(model=MODEL, messages=HI, max_tokens=2))
    sent = raw.http_request.headers
    assert sent["X-Stainless-Lang"] == "python"  # what every official raw-response test asserts
    assert sent["x-stainless-package-version"] == llmclient.__version__
    assert sent["x-stainless-async"] == ("async:asyncio" if drive.is_async else "false")
    official = (openai.AsyncOpenAI if drive.is_async else openai.OpenAI)(api_key="k")
    theirs = {k.lower(): v for k, v in official.default_headers.items() if k.lower().startswith("x-stainless")}
    ours = {k: v for k, v in sent.items() if k.startswith("x-stainless")}
    assert set(ours) == set(theirs)
    for name in ("x-stainless-lang", "x-stainless-os", "x-stainless-arch", "x-stainless-runtime",
                 "x-stainless-runtime-version"):
        assert ours[name] == theirs[name], name  # the same platform, described the same way
    if not drive.is_async:  # (the official async client says "async:false" when built outside a loop)
        assert ours["x-stainless-async"] == theirs["x-stainless-async"]


def test_a_default_header_of_none_removes_a_stainless_header(ref_server: Any) -> None:
    client = llmclient.OpenAI(base_url=ref_server.base_url, api_key="k",
                              default_headers={"X-Stainless-OS": None})  # type: ignore[dict-item]
    raw = client.chat.completions.with_raw_response.create(model=MODEL, messages=HI, max_tokens=2)
    assert "x-stainless-os" not in raw.http_request.headers and "x-stainless-lang" in raw.http_request.headers


# -- a stream request: its Accept, and a whole JSON answer to it ------------------------------

def test_a_stream_request_sends_the_official_accept(ref_server: Any, drive: Drive) -> None:
    client = drive.client(base_url=ref_server.base_url, api_key="k")
    raw = drive(client.chat.completions.with_raw_response.create(model=MODEL, messages=HI, max_tokens=3, stream=True))
    assert raw.http_request.headers["accept"] == "application/json"  # the official client's
    chunks = drive.iterate(raw.parse())
    assert chunks and chunks[-1].choices[0].finish_reason == "length"  # the server still streamed


COMPLETION = {
    "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": MODEL,
    "choices": [{"index": 0, "finish_reason": "tool_calls", "logprobs": None,
                 "message": {"role": "assistant", "content": "Hello", "refusal": None,
                             "tool_calls": [{"id": "call_1", "type": "function",
                                             "function": {"name": "f", "arguments": "{}"}}]}}],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
}
TEXT_COMPLETION = {"id": "cmpl-1", "object": "text_completion", "created": 1, "model": MODEL,
                   "choices": [{"index": 0, "text": "Hello", "finish_reason": "stop", "logprobs": None}]}
RESPONSE = {"id": "resp_1", "object": "response", "created_at": 1, "model": MODEL, "status": "completed",
            "output": [], "parallel_tool_calls": True, "tool_choice": "auto", "tools": []}
ANSWERS = {"/v1/chat/completions": COMPLETION, "/v1/completions": TEXT_COMPLETION, "/v1/responses": RESPONSE}


class _JsonOnly(BaseHTTPRequestHandler):
    """Answers every POST with the whole JSON answer, whatever ``stream`` says: what a mock
    serving the API's spec does (it cannot produce a stream), and some servers too."""

    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        body = json.dumps(ANSWERS[self.path]).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def json_only() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _JsonOnly)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_a_whole_json_answer_to_a_stream_request_is_a_one_chunk_stream(json_only: str, drive: Drive) -> None:
    client = drive.client(base_url=json_only, api_key="k", max_retries=0)
    stream = drive(client.chat.completions.create(model=MODEL, messages=HI, stream=True))
    assert isinstance(stream, llmclient.AsyncStream if drive.is_async else llmclient.Stream)
    (chunk,) = drive.iterate(stream)
    choice = chunk.choices[0]
    assert chunk.object == "chat.completion.chunk" and choice.delta.content == "Hello"
    assert choice.finish_reason == "tool_calls" and choice.delta.tool_calls[0].index == 0
    assert choice.delta.tool_calls[0].function.name == "f"
    (text,) = drive.iterate(drive(client.completions.create(model=MODEL, prompt="x", stream=True)))
    assert text.choices[0].text == "Hello"
    (event,) = drive.iterate(drive(client.responses.create(model=MODEL, input="x", stream=True)))
    assert event.type == "response.completed" and event.response.id == "resp_1"


def test_the_official_client_also_returns_a_stream_for_a_whole_json_answer(json_only: str) -> None:
    """The control: it returns a Stream (and yields nothing from it); llmclient yields the answer."""
    client = openai.OpenAI(base_url=json_only, api_key="k", max_retries=0)
    stream = client.chat.completions.create(model=MODEL, messages=HI, stream=True)  # type: ignore[arg-type]
    assert isinstance(stream, openai.Stream)
    stream.close()


def test_as_stream_chunk_keeps_what_is_a_chunk_already() -> None:
    chunk = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": "x"}}]}
    assert as_stream_chunk("/chat/completions", chunk) is chunk
    error = {"error": {"message": "m"}}
    assert as_stream_chunk("/chat/completions", error) is error
    failed = as_stream_chunk("/responses", {**RESPONSE, "status": "failed"})
    assert failed["type"] == "response.failed"


# -- models.delete and the stored chat completions: passed through ----------------------------

PASSED = [
    ("models.delete", lambda c: c.models.delete("m1"), "DELETE", "/v1/models/m1"),
    ("models.with_raw_response.delete", lambda c: c.models.with_raw_response.delete("m1"), "DELETE",
     "/v1/models/m1"),
    ("chat.completions.retrieve", lambda c: c.chat.completions.retrieve("cc1"), "GET", "/v1/chat/completions/cc1"),
    ("chat.completions.update", lambda c: c.chat.completions.update("cc1", metadata={"a": "b"}), "POST",
     "/v1/chat/completions/cc1"),
    ("chat.completions.list", lambda c: c.chat.completions.list(), "GET", "/v1/chat/completions"),
    ("chat.completions.delete", lambda c: c.chat.completions.delete("cc1"), "DELETE", "/v1/chat/completions/cc1"),
    ("chat.completions.messages.list", lambda c: c.chat.completions.messages.list("cc1"), "GET",
     "/v1/chat/completions/cc1/messages"),
    ("chat.completions.with_raw_response.retrieve", lambda c: c.chat.completions.with_raw_response.retrieve("cc1"),
     "GET", "/v1/chat/completions/cc1"),
]


@pytest.mark.parametrize(("name", "call", "method", "path"), PASSED, ids=[p[0] for p in PASSED])
def test_the_official_methods_llmclient_does_not_run_are_passed_through(
        ref_server: Any, drive: Drive, name: str, call: Any, method: str, path: str) -> None:
    """Sent as the official client sends them; the reference server has no such routes, and
    its answer comes back as the official error kind (not an AttributeError)."""
    client = drive.client(base_url=ref_server.base_url, api_key="k", max_retries=0)
    with pytest.raises(openai.APIStatusError) as info:
        drive(call(client))
    assert isinstance(info.value, llmclient.APIStatusError) and info.value.status_code in (404, 405)
    assert (info.value.request.method, info.value.request.url.path) == (method, path)


# -- close() closes the http_client it was given ----------------------------------------------

def test_close_closes_the_http_client_it_was_given(ref_server: Any, drive: Drive) -> None:
    http = drive.http_client()
    client = (llmclient.AsyncOpenAI if drive.is_async else llmclient.OpenAI)(
        base_url=ref_server.base_url, api_key="k", http_client=http)
    drive(client.chat.completions.create(model=MODEL, messages=HI, max_tokens=2))
    assert not http.is_closed and not client.is_closed()
    drive(client.close())
    assert http.is_closed and client.is_closed()


def test_leaving_with_closes_the_http_client(ref_server: Any) -> None:
    http = httpx.Client()
    with llmclient.OpenAI(base_url=ref_server.base_url, api_key="k", http_client=http) as client:
        client.chat.completions.create(model=MODEL, messages=HI, max_tokens=2)
    assert http.is_closed


def test_close_closes_the_official_aiohttp_client_it_was_given(ref_server: Any) -> None:
    pytest.importorskip("aiohttp")
    import asyncio

    async def main() -> tuple[bool, bool]:
        http = openai.DefaultAioHttpClient()
        async with llmclient.AsyncOpenAI(base_url=ref_server.base_url, api_key="k", http_client=http) as client:
            await client.chat.completions.create(model=MODEL, messages=HI, max_tokens=2)
            session = http._transport.client  # the aiohttp.ClientSession under it
            assert session is not None and not session.closed
        return http.is_closed, session.closed

    assert asyncio.run(main()) == (True, True)


# -- unknown keywords ---------------------------------------------------------------------------

def test_an_unknown_constructor_keyword_is_a_type_error_naming_the_closest(drive: Drive) -> None:
    cls = llmclient.AsyncOpenAI if drive.is_async else llmclient.OpenAI
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus_option'"):
        cls(api_key="k", bogus_option=2)
    with pytest.raises(TypeError, match="'max_retry'; did you mean 'max_retries'"):
        cls(api_key="k", max_retry=2)
    assert cls(api_key="k", webhook_secret="s").webhook_secret == "s"  # an official-only setting passes


@pytest.mark.parametrize(("path", "resource"), [
    ("/chat/completions", "openai.resources.chat.completions:Completions"),
    ("/completions", "openai.resources.completions:Completions"),
    ("/embeddings", "openai.resources.embeddings:Embeddings"),
    ("/responses", "openai.resources.responses:Responses"),
])
def test_the_known_create_keywords_are_the_official_signatures(path: str, resource: str) -> None:
    """llmclient reads them from the body's TypedDict (no ``openai.resources`` import); they are
    the official method's parameters, and llmclient's own options besides."""
    import importlib
    import inspect

    from llmclient._keywords import create_params
    from llmclient.layers.options import OPTION_KEYS

    module, name = resource.split(":")
    official = set(inspect.signature(getattr(importlib.import_module(module), name).create).parameters) - {"self"}
    assert create_params(path, OPTION_KEYS) == official | OPTION_KEYS


def test_an_unknown_create_keyword_is_a_type_error_and_nothing_is_sent(ref_server: Any, drive: Drive) -> None:
    sent: list[httpx.Request] = []
    client = drive.client(base_url=ref_server.base_url, api_key="k",
                          http_client=drive.http_client(event_hooks={"request": [sent.append]}))
    with pytest.raises(TypeError, match="'temprature'; did you mean 'temperature'"):
        drive(client.chat.completions.create(model=MODEL, messages=HI, temprature=0.2))
    with pytest.raises(TypeError, match="'dimension'; did you mean 'dimensions'"):
        drive(client.embeddings.create(model="text-embedding-3-small", input="x", dimension=8))
    with pytest.raises(TypeError, match="'max_output_token'"):
        drive(client.responses.create(model=MODEL, input="x", max_output_token=8))
    assert sent == []
    # the official way to send a field the signature lacks, and llmclient's own options, pass
    answer = drive(client.chat.completions.create(model=MODEL, messages=HI, max_tokens=2, cache=None,
                                                  extra_body={"temprature": 0.2}))
    assert answer.choices and json.loads(sent[-1].content)["temprature"] == 0.2


# -- the request httpx gets: the header list it would make itself -------------------------------

def _as_httpx_builds_it(request: httpx.Request) -> list[tuple[bytes, bytes]]:
    own = [(k, v) for k, v in request.headers.raw if k not in (b"Host", b"Content-Length")]
    return httpx.Request(request.method, request.url, headers=own,
                         content=request.content if request.method != "GET" else None).headers.raw


def test_the_request_has_the_headers_httpx_would_give_it(ref_server: Any, drive: Drive) -> None:
    """llmclient hands httpx the finished header list (``BaseClient._request_headers``): the
    same names, values and order as ``httpx.Request(content=...)`` makes, a call's own headers
    included, for a POST with a body and a GET without."""
    client = drive.client(base_url=ref_server.base_url, api_key="k", default_headers={"X-Team": "a"})
    posted = drive(client.chat.completions.with_raw_response.create(
        model=MODEL, messages=HI, max_tokens=2, extra_headers={"X-Custom": "v", "X-Team": None}))
    listed = drive(client.models.with_raw_response.list())
    for raw in (posted, listed):
        request = raw.http_request
        assert request.headers.raw == _as_httpx_builds_it(request)
    assert posted.http_request.headers["x-custom"] == "v" and "x-team" not in posted.http_request.headers
    assert listed.http_request.headers["x-team"] == "a"
    assert int(posted.http_request.headers["content-length"]) == len(posted.http_request.content)
