from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from llmclient.cache import (
    CachedEntry,
    CacheOptions,
    RedisBackend,
    ResponseCache,
    encode_entry,
    replay_chunks,
    replay_response,
    scope_hash,
)

from ._samples import CHAT_RESPONSE, chat_chunks

BASE = "http://127.0.0.1:8000/v1"
ALICE = scope_hash("sk-alice")
BOB = scope_hash("sk-bob")


def req(scope: str = ALICE, options: Any = None, **body: Any) -> dict[str, Any]:
    b: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "temperature": 0}
    b.update(body)
    return {"base_url": BASE, "path": "/chat/completions", "body": b, "scope": scope, "options": options}


@pytest.fixture(params=["memory", "sqlite", "redis"])
def cache(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ResponseCache]:
    if request.param == "memory":
        c = ResponseCache("memory")
    elif request.param == "sqlite":
        c = ResponseCache(f"sqlite://{tmp_path}/c.db")
    else:
        c = ResponseCache(request.getfixturevalue("redis_backend"))
    yield c
    c.close()


def test_miss_then_store_then_hit(cache: ResponseCache) -> None:
    plan = cache.plan_for(**req())
    assert plan is not None and plan.read
    assert cache.lookup(plan) is None
    assert cache.store_response(plan, CHAT_RESPONSE) is not None
    hit = cache.lookup(cache.plan_for(**req()))
    assert hit is not None and replay_response(hit) == CHAT_RESPONSE
    stats = cache.stats()
    assert (stats["hits"], stats["misses"], stats["stores"]) == (1, 1, 1)
    assert stats["bytes"] == len(encode_entry(hit)) and stats["backend"] in ("memory", "sqlite", "redis")


def test_another_api_key_misses(cache: ResponseCache) -> None:
    plan = cache.plan_for(**req(ALICE))
    assert plan is not None
    cache.store_response(plan, CHAT_RESPONSE)
    assert cache.lookup(cache.plan_for(**req(BOB))) is None


def test_temperature_above_zero_is_not_cached_by_default(cache: ResponseCache) -> None:
    assert cache.plan_for(**req(temperature=0.7)) is None
    assert cache.key_for(**req(temperature=0.7)) is None
    forced = cache.plan_for(**req(options=True, temperature=0.7))
    assert forced is not None and forced.read


def test_refresh_skips_the_read_and_stores_the_new_answer(cache: ResponseCache) -> None:
    plan = cache.plan_for(**req())
    assert plan is not None
    cache.store_response(plan, CHAT_RESPONSE)
    refresh = cache.plan_for(**req(options=CacheOptions(refresh=True)))
    assert refresh is not None and refresh.key == plan.key
    assert cache.lookup(refresh) is None
    newer = {**CHAT_RESPONSE, "id": "chatcmpl-new"}
    cache.store_response(refresh, newer)
    hit = cache.lookup(plan)
    assert hit is not None and hit.response is not None and hit.response["id"] == "chatcmpl-new"


def test_namespaces_are_separate(cache: ResponseCache) -> None:
    v1 = cache.plan_for(**req(options=CacheOptions(namespace="prompt-v1")))
    v2 = cache.plan_for(**req(options=CacheOptions(namespace="prompt-v2")))
    assert v1 is not None and v2 is not None and v1.key != v2.key
    cache.store_response(v1, CHAT_RESPONSE)
    assert cache.lookup(v2) is None and cache.lookup(v1) is not None


def test_disabled_per_call(cache: ResponseCache) -> None:
    assert cache.plan_for(**req(options=False)) is None


def test_per_call_ttl_expires(cache: ResponseCache) -> None:
    import time

    plan = cache.plan_for(**req(options=CacheOptions(ttl=0.15)))
    assert plan is not None and plan.ttl == 0.15
    cache.store_response(plan, CHAT_RESPONSE)
    assert cache.lookup(plan) is not None
    time.sleep(0.3)
    assert cache.lookup(plan) is None


def test_corrupt_entry_is_a_logged_counted_miss(cache: ResponseCache, caplog: pytest.LogCaptureFixture) -> None:
    plan = cache.plan_for(**req())
    assert plan is not None
    cache.backend.set(plan.key, b"\x80\x04not an entry", None)
    with caplog.at_level(logging.WARNING, logger="llmclient.cache"):
        assert cache.lookup(plan) is None
    assert any("unreadable entry" in r.getMessage() for r in caplog.records)
    assert cache.stats()["errors"] == 1 and cache.stats()["misses"] == 1
    assert cache.backend.get(plan.key) is None  # removed so it is not re-parsed every call


def test_errors_are_never_stored(cache: ResponseCache) -> None:
    plan = cache.plan_for(**req())
    assert plan is not None
    assert cache.store_response(plan, {"error": {"message": "boom"}}) is None
    assert cache.lookup(plan) is None


def test_cut_stream_stores_nothing_and_finished_stream_replays(cache: ResponseCache) -> None:
    plan = cache.plan_for(**req(stream=True, stream_options={"include_usage": True}))
    assert plan is not None and plan.stream and plan.include_usage
    assert cache.store_stream(plan, chat_chunks(finish=None)) is None
    assert cache.lookup(plan) is None
    assert cache.store_stream(plan, chat_chunks("a b")) is not None
    # the same request without stream shares the key and gets the merged answer
    non_stream = cache.plan_for(**req())
    assert non_stream is not None and non_stream.key == plan.key
    hit = cache.lookup(non_stream)
    assert hit is not None
    assert replay_response(hit)["choices"][0]["message"]["content"] == "a b "
    assert replay_chunks(hit, include_usage=True) == chat_chunks("a b")


def test_async_paths(cache: ResponseCache) -> None:
    async def go() -> CachedEntry | None:
        plan = cache.plan_for(**req(seed=3, temperature=0.9))
        assert plan is not None
        assert await cache.alookup(plan) is None
        await cache.astore_response(plan, CHAT_RESPONSE)
        return await cache.alookup(plan)

    hit = asyncio.run(go())
    assert hit is not None and hit.response == CHAT_RESPONSE


def test_backend_down_is_a_miss_not_a_crash(caplog: pytest.LogCaptureFixture) -> None:
    import socket

    with socket.socket() as s:  # a port with nothing listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cache = ResponseCache(RedisBackend(f"redis://127.0.0.1:{port}/0", socket_timeout=0.2))
    plan = cache.plan_for(**req())
    assert plan is not None
    with caplog.at_level(logging.WARNING, logger="llmclient.cache"):
        assert cache.lookup(plan) is None
        assert cache.store_response(plan, CHAT_RESPONSE) is None
    # The failed get puts the backend to rest: the store is skipped, not tried and failed.
    assert cache.stats()["errors"] == 1 and cache.stats()["unavailable"] == 1


def test_bad_constructor_arguments() -> None:
    with pytest.raises(ValueError, match="ttl"):
        ResponseCache("memory", ttl=-1)
    with pytest.raises(ValueError, match="namespace"):
        ResponseCache("memory", namespace="bad space")
