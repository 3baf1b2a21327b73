from __future__ import annotations

import asyncio
import os
import sqlite3
import stat
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from llmclient.cache import (
    Backend,
    MemoryBackend,
    RedisBackend,
    SQLiteBackend,
    open_backend,
)


@pytest.fixture(params=["memory", "sqlite", "redis"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "memory":
        yield MemoryBackend()
    elif request.param == "sqlite":
        b = SQLiteBackend(f"sqlite://{tmp_path}/c.db")
        yield b
        b.close()
    else:
        yield request.getfixturevalue("redis_backend")


def test_set_get_delete_clear(backend: Backend) -> None:
    assert backend.get("k1") is None
    backend.set("k1", b"v1", None)
    backend.set("k2", b"v2", None)
    assert backend.get("k1") == b"v1"
    backend.set("k1", b"v1-new", None)
    assert backend.get("k1") == b"v1-new"
    backend.delete("k1")
    assert backend.get("k1") is None and backend.get("k2") == b"v2"
    backend.clear()
    assert backend.get("k2") is None


def test_ttl_expiry(backend: Backend) -> None:
    backend.set("short", b"x", 0.15)
    backend.set("long", b"y", 60)
    assert backend.get("short") == b"x"
    time.sleep(0.3)
    assert backend.get("short") is None
    assert backend.get("long") == b"y"


def test_async_methods(backend: Backend) -> None:
    async def go() -> tuple[bytes | None, bytes | None]:
        await backend.aset("ak", b"av", None)  # type: ignore[attr-defined]
        return await backend.aget("ak"), await backend.aget("missing")  # type: ignore[attr-defined]

    assert asyncio.run(go()) == (b"av", None)
    assert backend.get("ak") == b"av"


def test_bad_ttl_is_rejected(backend: Backend) -> None:
    with pytest.raises(ValueError, match="ttl"):
        backend.set("k", b"v", -1)


def test_memory_evicts_by_bytes_and_by_entries() -> None:
    by_bytes = MemoryBackend(max_entries=1000, max_bytes=10_000)
    for i in range(20):
        by_bytes.set(f"k{i}", bytes(1000), None)
    assert by_bytes.size_bytes <= 10_000
    assert by_bytes.get("k0") is None and by_bytes.get("k19") is not None
    assert by_bytes.stats.evictions > 0
    by_count = MemoryBackend(max_entries=3)
    for i in range(5):
        by_count.set(f"k{i}", b"x", None)
    assert len(by_count) == 3 and by_count.stats.evictions == 2
    assert by_count.get("k1") is None and by_count.get("k4") == b"x"


def test_memory_is_lru() -> None:
    b = MemoryBackend(max_entries=2)
    b.set("a", b"1", None)
    b.set("b", b"2", None)
    b.get("a")  # a is now the most recently used
    b.set("c", b"3", None)
    assert b.get("a") == b"1" and b.get("b") is None


def test_sqlite_file_is_private_and_in_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "cache.db"
    b = SQLiteBackend(f"sqlite://{path}")
    b.set("k", b"v", None)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    b.close()


def test_sqlite_evicts_oldest_by_size(tmp_path: Path) -> None:
    b = SQLiteBackend(f"sqlite://{tmp_path}/c.db", max_bytes=50_000)
    for i in range(30):
        b.set(f"k{i}", bytes(5000), None)
    total, count = b.size()
    assert total <= 50_000 and count <= 10
    assert b.get("k0") is None and b.get("k29") is not None
    assert b.stats.evictions == 30 - count
    b.close()


def test_sqlite_persists_across_instances(tmp_path: Path) -> None:
    spec = f"sqlite://{tmp_path}/c.db"
    first = SQLiteBackend(spec)
    first.set("k", b"persisted", None)
    first.close()
    second = SQLiteBackend(spec)
    assert second.get("k") == b"persisted"
    second.close()


def test_redis_clear_only_touches_its_prefix(redis_url: str) -> None:
    mine = RedisBackend(redis_url, prefix="mine:")
    theirs = RedisBackend(redis_url, prefix="theirs:")
    mine.set("k", b"1", None)
    theirs.set("k", b"2", None)
    mine.clear()
    assert mine.get("k") is None and theirs.get("k") == b"2"
    theirs.clear()
    mine.close()
    theirs.close()


def test_open_backend_specs(tmp_path: Path) -> None:
    assert isinstance(open_backend("memory"), MemoryBackend)
    assert isinstance(open_backend(None), MemoryBackend)
    s = open_backend(f"sqlite://{tmp_path}/x.db")
    assert isinstance(s, SQLiteBackend)
    s.close()  # type: ignore[attr-defined]
    custom = MemoryBackend()
    assert open_backend(custom) is custom
    with pytest.raises(ValueError, match="unknown cache backend"):
        open_backend("mongodb://x")
    with pytest.raises(TypeError, match="get/set/delete/clear"):
        open_backend(42)  # type: ignore[arg-type]


def test_sqlite_is_safe_with_threads(tmp_path: Path) -> None:
    import threading

    b = SQLiteBackend(f"sqlite://{tmp_path}/threads.db")
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            for i in range(50):
                b.set(f"{n}-{i}", f"{n}-{i}".encode(), None)
                assert b.get(f"{n}-{i}") == f"{n}-{i}".encode()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert errors == []
    assert b.size()[1] == 300
    b.close()


def test_sqlite_fresh_file_opened_by_many_at_once(tmp_path: Path) -> None:
    """Several backends (as several processes would) and threads open one new file at the
    same moment: SQLite answers "database is locked" to a concurrent journal-mode change
    without waiting (seen in CI), so the set-up must wait its turn, not fail."""
    import threading

    for rep in range(20):
        path = f"sqlite://{tmp_path}/fresh-{rep}.db"
        backends = [SQLiteBackend(path) for _ in range(4)]
        start = threading.Barrier(8)
        errors: list[BaseException] = []

        def worker(n: int, backends: list[SQLiteBackend] = backends, start: threading.Barrier = start,
                   errors: list[BaseException] = errors) -> None:
            start.wait()
            try:
                backend = backends[n % 4]
                backend.set(f"k{n}", b"v", None)
                assert backend.get(f"k{n}") == b"v"
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert errors == [], f"round {rep}: {errors!r}"
        assert backends[0].size()[1] == 8
        for backend in backends:
            backend.close()


def test_sqlite_forked_child_opens_its_own_connection(tmp_path: Path) -> None:
    import multiprocessing

    b = SQLiteBackend(f"sqlite://{tmp_path}/fork.db")
    b.set("parent", b"p", None)
    ctx = multiprocessing.get_context("fork")
    proc = ctx.Process(target=_child_writes, args=(b,))
    proc.start()
    proc.join(30)
    assert proc.exitcode == 0
    assert b.get("child") == b"c"
    b.close()


def _child_writes(b: SQLiteBackend) -> None:
    assert b.get("parent") == b"p"
    b.set("child", b"c", None)
