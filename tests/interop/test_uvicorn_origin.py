"""uvicorn (installed from the registry; HTTP/1.1 only, h11 and httptools) as the origin: how vLLM, SGLang,
llama-cpp-python's server and litellm's proxy serve. It answers the h2c preface with an
HTTP/1.1 error, so llmclient must fall back to HTTP/1.1 within the first call, sync and async
alike, and never probe that origin again in this process (each probe is a rejected request in
the server's log).

The app is the reference server's (``--server uvicorn``); what is tested is the HTTP server.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from importlib import metadata

import pytest

import llmclient
from llmclient import AsyncOpenAI, OpenAI
from tests.conftest import RefServer, start_ref_server, stop_ref_server

CHAT = "sim-zero"
MSG = [{"role": "user", "content": "hello"}]


@pytest.fixture(params=["h11", "httptools"])
def uvicorn_server(request: pytest.FixtureRequest) -> Iterator[RefServer]:
    # A fresh server (a fresh origin) per test: what the process learned about another
    # origin must not help. Both of uvicorn's parsers: h11, and httptools, which
    # uvicorn[standard] installs, as vLLM and SGLang do.
    server = start_ref_server("--server", "uvicorn", "--uvicorn-http", request.param)
    yield server
    stop_ref_server(server)


def _rejected_probes(server: RefServer) -> int:
    assert server.log_path is not None
    return server.log_path.read_text().count("Invalid HTTP request received")


async def _every_call_async(base_url: str) -> list[str]:
    c = AsyncOpenAI(base_url=base_url, api_key="k", timeout=10, max_retries=0)
    try:
        r = await c.chat.completions.create(model=CHAT, messages=MSG, max_tokens=5)
        assert r.choices[0].message.content and r.timings.http_version == "HTTP/1.1"
        stream = await c.chat.completions.create(model=CHAT, messages=MSG, max_tokens=5, stream=True)
        pieces = [ch.choices[0].delta.content async for ch in stream if ch.choices and ch.choices[0].delta.content]
        assert pieces
        assert (await c.completions.create(model=CHAT, prompt="Once", max_tokens=4)).choices[0].text
        emb = await c.embeddings.create(model="text-embedding-3-small", input=["a", "b"])
        assert len(emb.data) == 2
        return [m.id async for m in c.models.list()]
    finally:
        await c.close()


def test_async_client_falls_back_to_http1_within_the_first_call(uvicorn_server: RefServer) -> None:
    models = asyncio.run(_every_call_async(uvicorn_server.base_url))
    assert CHAT in models
    assert _rejected_probes(uvicorn_server) == 1


def test_the_origin_is_probed_once_per_process_whatever_the_client(uvicorn_server: RefServer) -> None:
    for _ in range(3):  # three event loops: three async transports
        asyncio.run(_every_call_async(uvicorn_server.base_url))
    c = OpenAI(base_url=uvicorn_server.base_url, api_key="k", timeout=10, max_retries=0)
    r = c.chat.completions.create(model=CHAT, messages=MSG, max_tokens=5)
    assert r.timings.http_version == "HTTP/1.1"
    assert _rejected_probes(uvicorn_server) == 1


def test_sync_client_falls_back_within_the_first_call(uvicorn_server: RefServer) -> None:
    c = OpenAI(base_url=uvicorn_server.base_url, api_key="k", timeout=10, max_retries=0)
    r = c.chat.completions.create(model=CHAT, messages=MSG, max_tokens=5)
    assert r.choices[0].message.content and r.timings.http_version == "HTTP/1.1"
    chunks = list(c.chat.completions.create(model=CHAT, messages=MSG, max_tokens=5, stream=True))
    assert chunks[-1].choices == [] or chunks[-1].choices[0].finish_reason is not None


def test_concurrent_first_calls_all_succeed(uvicorn_server: RefServer) -> None:
    async def fan() -> list[object]:
        c = AsyncOpenAI(base_url=uvicorn_server.base_url, api_key="k", timeout=10, max_retries=0)
        try:
            return await asyncio.gather(*[c.chat.completions.create(model=CHAT, messages=MSG, max_tokens=3)
                                          for _ in range(16)], return_exceptions=True)
        finally:
            await c.close()

    results = asyncio.run(fan())
    errors = [r for r in results if isinstance(r, BaseException)]
    assert not errors, errors[:3]
    assert all(not isinstance(r, llmclient.APIError) for r in results)


def test_uvicorn_is_the_registry_package() -> None:
    assert metadata.version("uvicorn")  # the tests above ran against this installed version
