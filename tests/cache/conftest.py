"""Fixtures for the cache tests: a Redis backend on the real redis-server of tests/conftest.py's
``redis_url``, one key prefix per test."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from llmclient.cache import RedisBackend


@pytest.fixture
def redis_backend(redis_url: str) -> Iterator[RedisBackend]:
    # A fresh prefix per test isolates tests that share the session's server.
    backend = RedisBackend(redis_url, prefix=f"t-{uuid.uuid4().hex[:12]}:")
    try:
        yield backend
    finally:
        backend.clear()
        backend.close()
