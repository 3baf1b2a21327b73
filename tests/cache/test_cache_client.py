"""End to end: llmclient with a cache against the reference server (a real subprocess)."""

from __future__ import annotations

import asyncio
import re
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from llmclient import AsyncOpenAI, IncompleteStreamError, OpenAI
from llmclient.cache import CacheOptions, RedisBackend, ResponseCache

MODEL = "sim-zero"  # the zero profile's model (benchmarks/server/profiles/zero.json)


def served(ref_server: Any) -> int:
    """Requests the server has answered, from its /metrics counter (/metrics itself excluded)."""
    text = httpx.get(ref_server.url + "/metrics", timeout=5).text
    return sum(int(float(n)) for n in re.findall(r'^http_requests_total\{[^}]*\} (\S+)$', text, re.M))


def question() -> list[dict[str, str]]:
    # A fresh prompt per test: the session server and caches are shared.
    return [{"role": "user", "content": f"classify {uuid.uuid4().hex}"}]


@pytest.fixture(params=["memory", "sqlite", "redis"])
def cache_spec(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "memory":
        return "memory"
    if request.param == "sqlite":
        return f"sqlite://{tmp_path}/client.db"
    return ResponseCache(request.getfixturevalue("redis_backend"))


def test_second_identical_call_is_served_from_cache(ref_server: Any, cache_spec: Any) -> None:
    with OpenAI(base_url=ref_server.base_url, api_key="sk-a", cache=cache_spec) as client:
        messages = question()
        first = client.chat.completions.create(model=MODEL, messages=messages, temperature=0, max_tokens=8)
        before = served(ref_server)
        second = client.chat.completions.create(model=MODEL, messages=messages, temperature=0, max_tokens=8)
        after = served(ref_server)
        assert first.timings.cache == "miss" and second.timings.cache == "hit"
        assert after - before == 1  # only the /metrics probe itself was counted
        assert second.id == first.id
        assert second.choices[0].message.content == first.choices[0].message.content
        if isinstance(cache_spec, ResponseCache):
            assert cache_spec.stats()["hits"] == 1


def test_sampling_other_keys_and_opt_out_go_upstream(ref_server: Any) -> None:
    cache = ResponseCache("memory")
    messages = question()
    with OpenAI(base_url=ref_server.base_url, api_key="sk-a", cache=cache) as a, \
            OpenAI(base_url=ref_server.base_url, api_key="sk-b", cache=cache) as b:
        a.chat.completions.create(model=MODEL, messages=messages, temperature=0, max_tokens=4)
        assert b.chat.completions.create(model=MODEL, messages=messages, temperature=0,
                                         max_tokens=4).timings.cache == "miss"
        assert a.chat.completions.create(model=MODEL, messages=messages, temperature=0, max_tokens=4,
                                         cache=False).timings.cache is None
        hot = a.chat.completions.create(model=MODEL, messages=messages, temperature=0.9, max_tokens=4)
        assert hot.timings.cache is None
        fresh = a.chat.completions.create(model=MODEL, messages=messages, temperature=0, max_tokens=4,
                                          cache=CacheOptions(refresh=True))
        assert fresh.timings.cache == "miss"


def test_stream_replay_and_cut_stream_stores_nothing(ref_server: Any) -> None:
    cache = ResponseCache("memory")
    with OpenAI(base_url=ref_server.base_url, api_key="sk-a", cache=cache) as client:
        messages = question()
        args: dict[str, Any] = {"model": MODEL, "messages": messages, "temperature": 0, "max_tokens": 8}
        with pytest.raises(IncompleteStreamError):
            for _ in client.chat.completions.create(**args, stream=True,
                                                    extra_headers={"x-fault": "cut_after=3"}):
                pass
        assert cache.stats()["stores"] == 0
        streamed = list(client.chat.completions.create(**args, stream=True))
        assert cache.stats()["stores"] == 1
        before = served(ref_server)
        answer = client.chat.completions.create(**args)  # non-stream call answered by the stream
        replay = client.chat.completions.create(**args, stream=True)
        chunks = list(replay)
        assert served(ref_server) - before == 1
        assert answer.timings.cache == "hit" and replay.timings.cache == "hit"
        text = "".join(c.choices[0].delta.content or "" for c in streamed if c.choices)
        assert answer.choices[0].message.content == text
        assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == text


def test_async_client_hits_and_joins(ref_server: Any) -> None:
    async def go() -> list[str | None]:
        async with AsyncOpenAI(base_url=ref_server.base_url, api_key="sk-a", cache="memory") as client:
            messages = question()
            results = await asyncio.gather(*(
                client.chat.completions.create(model=MODEL, messages=messages, temperature=0, max_tokens=8)
                for _ in range(5)))
            again = await client.chat.completions.create(model=MODEL, messages=messages, temperature=0,
                                                         max_tokens=8)
            assert len({r.id for r in results}) == 1
            return [r.timings.cache for r in results] + [again.timings.cache]

    marks = asyncio.run(go())
    assert marks.count("miss") == 1 and marks.count("join") == 4 and marks[-1] == "hit"


def test_redis_entry_is_shared_between_clients(ref_server: Any, redis_url: str) -> None:
    prefix = f"e2e-{uuid.uuid4().hex[:8]}:"
    messages = question()
    with OpenAI(base_url=ref_server.base_url, api_key="sk-a",
                cache=RedisBackend(redis_url, prefix=prefix)) as one, \
            OpenAI(base_url=ref_server.base_url, api_key="sk-a",
                   cache=RedisBackend(redis_url, prefix=prefix)) as two:
        first = one.chat.completions.create(model=MODEL, messages=messages, temperature=0, max_tokens=4)
        second = two.chat.completions.create(model=MODEL, messages=messages, temperature=0, max_tokens=4)
        assert second.timings.cache == "hit" and second.id == first.id
        one.cache.clear()


def test_cancelled_stream_stores_nothing(ref_server: Any) -> None:
    cache = ResponseCache("memory")
    with OpenAI(base_url=ref_server.base_url, api_key="sk-a", cache=cache) as client:
        args: dict[str, Any] = {"model": MODEL, "messages": question(), "temperature": 0, "max_tokens": 16}
        with client.chat.completions.create(**args, stream=True) as stream:
            for i, _ in enumerate(stream):
                if i == 1:
                    break  # the caller stops reading: the answer is incomplete
        assert cache.stats()["stores"] == 0
        assert client.chat.completions.create(**args).timings.cache == "miss"


def test_raw_and_streaming_responses_bypass_the_cache(ref_server: Any) -> None:
    # with_raw_response / with_streaming_response promise the server's own HTTP answer
    # (headers, status): a cached entry has none, so they never read the cache.
    kw: dict[str, Any] = {"model": MODEL, "temperature": 0, "max_tokens": 8}
    with OpenAI(base_url=ref_server.base_url, api_key="sk-a", cache="memory") as client:
        messages = question()
        client.chat.completions.create(messages=messages, **kw)  # now cached
        raw = client.chat.completions.with_raw_response.create(messages=messages, **kw)
        assert raw.headers.get("x-request-id") and raw.parse().choices[0].message.content
        with client.chat.completions.with_streaming_response.create(messages=messages, **kw) as resp:
            assert resp.status_code == 200 and resp.parse().choices[0].message.content

    async def go() -> None:
        async with AsyncOpenAI(base_url=ref_server.base_url, api_key="sk-a", cache="memory") as client:
            messages = question()
            await client.chat.completions.create(messages=messages, **kw)
            raw = await client.chat.completions.with_raw_response.create(messages=messages, **kw)
            assert raw.headers.get("x-request-id") and raw.parse().choices[0].message.content

    asyncio.run(go())
