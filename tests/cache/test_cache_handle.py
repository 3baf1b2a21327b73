"""ResponseCache.begin/abegin: the lookup -> join -> store journey on real Call objects."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import httpx

from llmclient.cache import CacheOptions, ResponseCache
from llmclient.layers.calls import build_call
from llmclient.layers.options import CallOptions
from llmclient.pipeline.call import Call, credential_scope

from ._samples import CHAT_RESPONSE, chat_chunks

BASE = "http://127.0.0.1:9/v1"


def make_call(cache: Any = None, api_key: str = "sk-a", **body: Any) -> Call:
    b: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "temperature": 0}
    b.update(body)
    headers = {"authorization": f"Bearer {api_key}"}
    return build_call("POST", "/chat/completions", b, base_url=BASE, headers=headers, query={},
                      timeout=httpx.Timeout(5.0), max_retries=0,
                      scope=credential_scope(headers, BASE),
                      options=CallOptions(cache=cache), stream=bool(b.get("stream")))


def test_miss_store_hit_and_replay_as_stream() -> None:
    cache = ResponseCache("memory")
    first = cache.begin(make_call())
    assert first is not None and first.entry is None and first.call.record.cache == "miss"
    first.store_response(CHAT_RESPONSE)
    first.release()
    again = cache.begin(make_call())
    assert again is not None and again.call.record.cache == "hit"
    assert again.response() == CHAT_RESPONSE
    streamed = cache.begin(make_call(stream=True, stream_options={"include_usage": True}))
    assert streamed is not None and streamed.call.record.cache == "hit"
    chunks = list(streamed.replay_stream(lambda c: c))
    assert chunks[-1]["usage"] == CHAT_RESPONSE["usage"]
    assert "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"]) == \
        CHAT_RESPONSE["choices"][0]["message"]["content"]
    assert streamed.call.record.first_token_ms is not None


def test_bypassed_calls_get_no_handle() -> None:
    cache = ResponseCache("memory")
    assert cache.begin(make_call(temperature=1.0)) is None
    assert cache.begin(make_call(cache=False)) is None
    assert cache.begin(make_call(cache=CacheOptions(force=True), temperature=1.0)) is not None


def test_stream_leader_stores_only_finished_streams() -> None:
    cache = ResponseCache("memory")
    handle = cache.begin(make_call(stream=True))
    assert handle is not None
    handle.on_stream_complete(handle.call, chat_chunks(finish=None))
    assert cache.begin(make_call()).call.record.cache == "miss"  # type: ignore[union-attr]
    handle.on_stream_complete(handle.call, chat_chunks("x y"))
    hit = cache.begin(make_call())
    assert hit is not None and hit.call.record.cache == "hit"
    assert hit.response()["choices"][0]["message"]["content"] == "x y "


def test_threads_join_the_leader() -> None:
    cache = ResponseCache("memory")
    leader = cache.begin(make_call())
    assert leader is not None and leader.call.record.cache == "miss"
    records: list[str | None] = []

    def follower() -> None:
        h = cache.begin(make_call())
        assert h is not None
        records.append(h.call.record.cache)

    threads = [threading.Thread(target=follower) for _ in range(4)]
    for t in threads:
        t.start()
    leader.store_response(CHAT_RESPONSE)
    for t in threads:
        t.join(5)
    # each follower either joined the flight or (if it started after the store) hit the entry
    assert set(records) <= {"hit", "join"} and len(records) == 4


def test_failed_leader_releases_waiters_to_go_upstream() -> None:
    cache = ResponseCache("memory")
    leader = cache.begin(make_call())
    assert leader is not None
    out: list[Any] = []
    t = threading.Thread(target=lambda: out.append(cache.begin(make_call())))
    t.start()
    leader.release()  # e.g. the upstream call raised
    t.join(5)
    assert out[0].call.record.cache == "miss" and out[0].entry is None


def test_asyncio_join_and_other_scope_misses() -> None:
    async def go() -> list[str | None]:
        cache = ResponseCache("memory")
        leader = await cache.abegin(make_call())
        assert leader is not None
        waiters = [asyncio.create_task(cache.abegin(make_call())) for _ in range(3)]
        other = await cache.abegin(make_call(api_key="sk-b"))
        await asyncio.sleep(0.01)
        await leader.astore_response(CHAT_RESPONSE)
        handles = await asyncio.gather(*waiters)
        assert other is not None and other.call.record.cache == "miss"
        return [h.call.record.cache for h in handles if h is not None]

    assert asyncio.run(go()) == ["join"] * 3
