"""End to end: llmclient with a cache against the reference server (a real subprocess), through
``OpenAI`` and ``AsyncOpenAI`` (``drive``: each test runs on both)."""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from llmclient import IncompleteStreamError
from llmclient.cache import CacheOptions, RedisBackend, ResponseCache
from tests._both import Drive

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


def test_second_identical_call_is_served_from_cache(drive: Drive, ref_server: Any, cache_spec: Any) -> None:
    client = drive.client(base_url=ref_server.base_url, api_key="sk-a", cache=cache_spec)
    messages = question()
    first = drive(client.chat.completions.create(model=MODEL, messages=messages, temperature=0, max_tokens=8))
    before = served(ref_server)
    second = drive(client.chat.completions.create(model=MODEL, messages=messages, temperature=0, max_tokens=8))
    after = served(ref_server)
    assert first.timings.cache == "miss" and second.timings.cache == "hit"
    assert after - before == 1  # only the /metrics probe itself was counted
    assert second.id == first.id
    assert second.choices[0].message.content == first.choices[0].message.content
    if isinstance(cache_spec, ResponseCache):
        assert cache_spec.stats()["hits"] == 1


def test_sampling_other_keys_and_opt_out_go_upstream(drive: Drive, ref_server: Any) -> None:
    cache = ResponseCache("memory")
    messages = question()
    a = drive.client(base_url=ref_server.base_url, api_key="sk-a", cache=cache)
    b = drive.client(base_url=ref_server.base_url, api_key="sk-b", cache=cache)
    drive(a.chat.completions.create(model=MODEL, messages=messages, temperature=0, max_tokens=4))
    assert drive(b.chat.completions.create(model=MODEL, messages=messages, temperature=0,
                                           max_tokens=4)).timings.cache == "miss"
    assert drive(a.chat.completions.create(model=MODEL, messages=messages, temperature=0, max_tokens=4,
                                           cache=False)).timings.cache is None
    hot = drive(a.chat.completions.create(model=MODEL, messages=messages, temperature=0.9, max_tokens=4))
    assert hot.timings.cache is None
    fresh = drive(a.chat.completions.create(model=MODEL, messages=messages, temperature=0, max_tokens=4,
                                            cache=CacheOptions(refresh=True)))
    assert fresh.timings.cache == "miss"


def test_stream_replay_and_cut_stream_stores_nothing(drive: Drive, ref_server: Any) -> None:
    cache = ResponseCache("memory")
    client = drive.client(base_url=ref_server.base_url, api_key="sk-a", cache=cache)
    messages = question()
    args: dict[str, Any] = {"model": MODEL, "messages": messages, "temperature": 0, "max_tokens": 8}
    with pytest.raises(IncompleteStreamError):
        drive.iterate(drive(client.chat.completions.create(**args, stream=True,
                                                           extra_headers={"x-fault": "cut_after=3"})))
    assert cache.stats()["stores"] == 0
    streamed = drive.iterate(drive(client.chat.completions.create(**args, stream=True)))
    assert cache.stats()["stores"] == 1
    before = served(ref_server)
    answer = drive(client.chat.completions.create(**args))  # non-stream call answered by the stream
    replay = drive(client.chat.completions.create(**args, stream=True))
    chunks = drive.iterate(replay)
    assert served(ref_server) - before == 1
    assert answer.timings.cache == "hit" and replay.timings.cache == "hit"
    text = "".join(c.choices[0].delta.content or "" for c in streamed if c.choices)
    assert answer.choices[0].message.content == text
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == text


def test_concurrent_identical_calls_join_one_and_the_next_hits(drive: Drive, ref_server: Any) -> None:
    client = drive.client(base_url=ref_server.base_url, api_key="sk-a", cache="memory")
    messages = question()

    def call() -> Any:
        # The answer's first byte waits 200 ms, so all five are asking before the first is answered.
        return client.chat.completions.create(model=MODEL, messages=messages, temperature=0, max_tokens=8,
                                              extra_headers={"x-fault": "stall_ms=200"})

    results = drive.gather([call] * 5, workers=5)
    again = drive(client.chat.completions.create(model=MODEL, messages=messages, temperature=0, max_tokens=8))
    assert len({r.id for r in results}) == 1
    marks = [r.timings.cache for r in results] + [again.timings.cache]
    assert marks.count("miss") == 1 and marks.count("join") == 4 and marks[-1] == "hit"


def test_redis_entry_is_shared_between_clients(drive: Drive, ref_server: Any, redis_url: str) -> None:
    prefix = f"e2e-{uuid.uuid4().hex[:8]}:"
    messages = question()
    one = drive.client(base_url=ref_server.base_url, api_key="sk-a", cache=RedisBackend(redis_url, prefix=prefix))
    two = drive.client(base_url=ref_server.base_url, api_key="sk-a", cache=RedisBackend(redis_url, prefix=prefix))
    first = drive(one.chat.completions.create(model=MODEL, messages=messages, temperature=0, max_tokens=4))
    second = drive(two.chat.completions.create(model=MODEL, messages=messages, temperature=0, max_tokens=4))
    assert second.timings.cache == "hit" and second.id == first.id
    one.cache.clear()


def test_cancelled_stream_stores_nothing(drive: Drive, ref_server: Any) -> None:
    cache = ResponseCache("memory")
    client = drive.client(base_url=ref_server.base_url, api_key="sk-a", cache=cache)
    args: dict[str, Any] = {"model": MODEL, "messages": question(), "temperature": 0, "max_tokens": 16}
    with drive.enter(drive(client.chat.completions.create(**args, stream=True))) as stream:
        # The caller stops reading after two chunks: the answer is incomplete.
        assert len(drive.iterate(stream, limit=2)) == 2
    assert cache.stats()["stores"] == 0
    assert drive(client.chat.completions.create(**args)).timings.cache == "miss"


def test_raw_and_streaming_responses_bypass_the_cache(drive: Drive, ref_server: Any) -> None:
    # with_raw_response / with_streaming_response promise the server's own HTTP answer
    # (headers, status): a cached entry has none, so they never read the cache.
    kw: dict[str, Any] = {"model": MODEL, "temperature": 0, "max_tokens": 8}
    client = drive.client(base_url=ref_server.base_url, api_key="sk-a", cache="memory")
    messages = question()
    drive(client.chat.completions.create(messages=messages, **kw))  # now cached
    raw = drive(client.chat.completions.with_raw_response.create(messages=messages, **kw))
    assert raw.headers.get("x-request-id") and drive(raw.parse()).choices[0].message.content
    with drive.enter(client.chat.completions.with_streaming_response.create(messages=messages, **kw)) as resp:
        assert resp.status_code == 200 and drive(resp.parse()).choices[0].message.content
