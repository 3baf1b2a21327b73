"""Fixtures for the cache tests: a real redis-server on a free loopback port, per session
(started by benchmarks.fixtures.redis, the launcher the cache tools use too)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from benchmarks.fixtures.redis import REDIS_SERVER, redis_server
from llmclient.cache import RedisBackend


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    with redis_server() as url:
        if url is None:
            pytest.skip(f"redis-server binary not found at {REDIS_SERVER} "
                        "(apt-get install redis-server)")
        yield url


@pytest.fixture
def redis_backend(redis_url: str) -> Iterator[RedisBackend]:
    # A fresh prefix per test isolates tests that share the session's server.
    backend = RedisBackend(redis_url, prefix=f"t-{uuid.uuid4().hex[:12]}:")
    try:
        yield backend
    finally:
        backend.clear()
        backend.close()
