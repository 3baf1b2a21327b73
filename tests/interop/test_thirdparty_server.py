"""llmclient against a real third-party OpenAI-compatible server: llama-cpp-python's.

The server (``conftest.llama_server``; llama-cpp-python 0.3.36 with its ``server`` extra:
FastAPI, uvicorn, sse-starlette, starlette-context) runs a tiny random-weight llama model made
here. The official ``openai`` client against the same server is the reference: at temperature
0 the model is deterministic, so llmclient must get the same answers, sync and async.

Two regressions found against this server:
- its request-id middleware answers 400 with an empty body to any ``X-Request-ID`` that is
  not a UUID; llmclient sent ``<trace-id>-<span-id>`` and every call failed;
- a stream it interrupts (a new request arrived: ``interrupt_requests``, on by default) ends
  with ``[DONE]`` and no finish_reason; llmclient returned the half answer as complete.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from typing import Any

import httpx
import openai
import pytest

import llmclient
from llmclient.cache import ResponseCache

from .conftest import MODEL, ThirdPartyServer

pytestmark = pytest.mark.interop

MSG: Any = [{"role": "user", "content": "hello how are you"}]
KW: dict[str, Any] = {"model": MODEL, "temperature": 0, "max_tokens": 12}


def ours(server: ThirdPartyServer, **kw: Any) -> llmclient.OpenAI:
    return llmclient.OpenAI(base_url=server.base_url, api_key="sk-none", max_retries=0, **kw)


def ours_async(server: ThirdPartyServer, **kw: Any) -> llmclient.AsyncOpenAI:
    return llmclient.AsyncOpenAI(base_url=server.base_url, api_key="sk-none", max_retries=0, **kw)


def official(server: ThirdPartyServer) -> Any:
    return openai.OpenAI(base_url=server.base_url, api_key="sk-none", max_retries=0)


def official_async(server: ThirdPartyServer) -> Any:
    return openai.AsyncOpenAI(base_url=server.base_url, api_key="sk-none", max_retries=0)


def streamed_text(chunks: list[Any]) -> str:
    return "".join((ch.choices[0].delta.content or "") for ch in chunks if ch.choices)


def finish_reasons(chunks: list[Any]) -> list[str]:
    return [ch.choices[0].finish_reason for ch in chunks if ch.choices and ch.choices[0].finish_reason]


# -- request ids ---------------------------------------------------------------------------------

def test_server_refuses_a_request_id_that_is_not_a_uuid(llama_server: ThirdPartyServer) -> None:
    # What llmclient used to send: the server's middleware answers 400 with an empty body.
    old = "4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7"
    refused = httpx.get(llama_server.base_url + "/models", headers={"x-request-id": old})
    assert refused.status_code == 400 and refused.content == b""
    ok = httpx.get(llama_server.base_url + "/models",
                   headers={"x-request-id": "4bf92f35-77b3-4da6-a3ce-929d0e0e4736"})
    assert ok.status_code == 200 and ok.headers["x-request-id"] == "4bf92f35-77b3-4da6-a3ce-929d0e0e4736"


def test_every_call_is_accepted_and_echoes_the_trace_id_as_request_id(llama_server: ThirdPartyServer) -> None:
    c = ours(llama_server)
    r = c.chat.completions.create(messages=MSG, **KW)
    assert r._request_id == str(uuid.UUID(r.trace_id))  # the server echoes what we sent
    caller = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    r2 = c.chat.completions.create(messages=MSG, extra_headers={"traceparent": caller}, **KW)
    assert r2.trace_id == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert r2._request_id == "4bf92f35-77b3-4da6-a3ce-929d0e0e4736"

    async def main() -> Any:
        return await ours_async(llama_server).chat.completions.create(messages=MSG, **KW)

    ra = asyncio.run(main())
    assert ra._request_id == str(uuid.UUID(ra.trace_id))


# -- the same answers as the official client -----------------------------------------------------

def test_models_list_sync_and_async(llama_server: ThirdPartyServer) -> None:
    reference = [m.id for m in official(llama_server).models.list()]
    assert reference == [MODEL]
    assert [m.id for m in ours(llama_server).models.list()] == reference

    async def main() -> list[str]:
        return [m.id async for m in ours_async(llama_server).models.list()]

    assert asyncio.run(main()) == reference


def test_chat_sync_and_async(llama_server: ThirdPartyServer) -> None:
    ref = official(llama_server).chat.completions.create(messages=MSG, **KW)
    assert ref.choices[0].message.content and ref.choices[0].finish_reason == "length"

    async def both() -> tuple[Any, Any]:
        mine = await ours_async(llama_server).chat.completions.create(messages=MSG, **KW)
        theirs = await official_async(llama_server).chat.completions.create(messages=MSG, **KW)
        return mine, theirs

    sync = ours(llama_server).chat.completions.create(messages=MSG, **KW)
    mine_async, ref_async = asyncio.run(both())
    for got, want in ((sync, ref), (mine_async, ref_async), (mine_async, ref)):
        assert got.choices[0].message.content == want.choices[0].message.content
        assert got.choices[0].message.role == "assistant"
        assert got.choices[0].finish_reason == want.choices[0].finish_reason
        assert got.usage.model_dump() == want.usage.model_dump()
        assert got.model == want.model
    assert sync.timings.http_version == "HTTP/1.1"


def test_streaming_chat_sync_and_async(llama_server: ThirdPartyServer) -> None:
    ref = list(official(llama_server).chat.completions.create(messages=MSG, stream=True, **KW))
    assert streamed_text(ref) and finish_reasons(ref) == ["length"]
    sync = list(ours(llama_server).chat.completions.create(messages=MSG, stream=True, **KW))

    async def main() -> list[Any]:
        stream = await ours_async(llama_server).chat.completions.create(messages=MSG, stream=True, **KW)
        return [ch async for ch in stream]

    for got in (sync, asyncio.run(main())):
        assert streamed_text(got) == streamed_text(ref)
        assert finish_reasons(got) == finish_reasons(ref)
        assert len(got) == len(ref)
    # Streamed and not, the same words.
    whole = ours(llama_server).chat.completions.create(messages=MSG, **KW)
    assert whole.choices[0].message.content == streamed_text(ref)


def test_completions_sync_and_async_streamed_or_not(llama_server: ThirdPartyServer) -> None:
    args: dict[str, Any] = {"prompt": "once upon a time", **KW}
    ref = official(llama_server).completions.create(**args)
    ref_chunks = list(official(llama_server).completions.create(stream=True, **args))
    assert ref.choices[0].text and ref.choices[0].finish_reason == "length"
    got = ours(llama_server).completions.create(**args)
    got_chunks = list(ours(llama_server).completions.create(stream=True, **args))

    async def main() -> tuple[Any, list[Any]]:
        c = ours_async(llama_server)
        one = await c.completions.create(**args)
        return one, [ch async for ch in await c.completions.create(stream=True, **args)]

    got_async, got_async_chunks = asyncio.run(main())
    for answer in (got, got_async):
        assert answer.choices[0].text == ref.choices[0].text
        assert answer.choices[0].finish_reason == ref.choices[0].finish_reason
        assert answer.usage.model_dump() == ref.usage.model_dump()
    for chunks in (got_chunks, got_async_chunks):
        assert "".join(ch.choices[0].text for ch in chunks) == "".join(ch.choices[0].text for ch in ref_chunks)
        assert [ch.choices[0].finish_reason for ch in chunks] == [ch.choices[0].finish_reason for ch in ref_chunks]


# -- a stream the server interrupts ---------------------------------------------------------------

LONG: dict[str, Any] = {"model": MODEL, "temperature": 0, "max_tokens": 3000}
INCOMPLETE = "stream ended with [DONE] but choice 0 has no finish_reason"


def test_interrupted_stream_is_incomplete_and_not_cached_sync(llama_server: ThirdPartyServer) -> None:
    cache = ResponseCache("memory")
    c = ours(llama_server, cache=cache)
    stream = c.chat.completions.create(messages=MSG, stream=True, **LONG)
    it = iter(stream)
    got = [next(it)]  # the stream is running (3,000 tokens to go) ...
    # ... and another request arrives: the server ends the running stream with [DONE] alone.
    other = ours(llama_server).chat.completions.create(messages=[{"role": "user", "content": "hi"}], **KW)
    assert other.choices[0].finish_reason == "length"
    with pytest.raises(llmclient.IncompleteStreamError, match=re.escape(INCOMPLETE)) as info:
        got.extend(it)
    assert info.value.trace_id == stream.trace_id and stream.trace_id in str(info.value)
    assert len(got) < 3000 and cache.stats()["stores"] == 0
    # The next call on the same client works, and a complete stream is stored.
    again = list(c.chat.completions.create(messages=MSG, stream=True, **KW))
    assert finish_reasons(again) == ["length"] and cache.stats()["stores"] == 1


def test_interrupted_stream_is_incomplete_and_not_cached_async(llama_server: ThirdPartyServer) -> None:
    cache = ResponseCache("memory")

    async def main() -> tuple[Any, list[Any], BaseException | None, list[Any]]:
        c = ours_async(llama_server, cache=cache)
        stream = await c.chat.completions.create(messages=MSG, stream=True, **LONG)
        got = [await stream.__anext__()]
        other = await ours_async(llama_server).chat.completions.create(
            messages=[{"role": "user", "content": "hi"}], **KW)
        assert other.choices[0].finish_reason == "length"
        err = None
        try:
            async for ch in stream:
                got.append(ch)
        except llmclient.IncompleteStreamError as exc:
            err = exc
        again = [ch async for ch in await c.chat.completions.create(messages=MSG, stream=True, **KW)]
        return stream, got, err, again

    stream, got, err, again = asyncio.run(main())
    assert isinstance(err, llmclient.IncompleteStreamError) and INCOMPLETE in str(err)
    assert err.trace_id == stream.trace_id and len(got) < 3000
    assert finish_reasons(again) == ["length"] and cache.stats()["stores"] == 1


def test_adaptive_concurrency_is_not_held_at_its_start_by_a_server_without_server_timing(
        llama_server: ThirdPartyServer, caplog: pytest.LogCaptureFixture) -> None:
    # llama-cpp-python's server sends no Server-Timing (as vLLM, SGLang, llama.cpp's own): plain
    # calls carry no sample, so the limit is lifted (and says so) rather than kept at 2 for good
    from llmclient.features.admit.concurrency import NO_SIGNAL

    client = ours(llama_server, concurrency={"initial": 2, "minimum": 1, "maximum": 32})
    with caplog.at_level("WARNING", logger="llmclient.admit"):
        r = client.chat.completions.create(messages=MSG, **KW)
    assert r.choices[0].message.content and r.timings.server_timing == {}
    (stats,) = client.concurrency_limits.values()
    assert stats["limit"] == 32 and stats["samples"] == 0 and stats["reason"] == NO_SIGNAL
    assert any("no signal" in rec.getMessage() for rec in caplog.records)
    with client.chat.completions.create(messages=MSG, stream=True, **KW) as stream:
        assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    (stats,) = client.concurrency_limits.values()
    assert stats["samples"] == 1 and stats["in_flight"] == 0  # a stream's TTFT is a sample
