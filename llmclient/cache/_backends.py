"""Storage backends: bytes in, bytes out, with a per-entry TTL.

The interface (:class:`Backend`) is deliberately small so users can plug in their own store::

    get(key) -> bytes | None          # None on miss or expiry
    set(key, value: bytes, ttl: float | None) -> None
    delete(key) -> None
    clear() -> None                   # every entry this backend owns
    close() -> None
    aget / aset / adelete             # async; optional (the sync method is used if absent)
    name: str; stats: CacheStats      # evictions are counted here

Backends never interpret values; ResponseCache encodes/decodes entries and turns any
backend exception into a logged, counted miss. The async cache reaches a backend through an
:class:`AsyncBackendView`; the sync cache calls it directly.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import stat
import threading
import time
import warnings
from typing import Any, Protocol, runtime_checkable

import cachetools

from ._async.backends import AsyncRedisIO
from ._stats import CacheStats
from ._sync.backends import RedisIO

__all__ = [
    "AsyncBackend",
    "AsyncBackendView",
    "Backend",
    "BaseBackend",
    "MemoryBackend",
    "RedisBackend",
    "SQLiteBackend",
    "open_backend",
]


@runtime_checkable
class Backend(Protocol):
    def get(self, key: str) -> bytes | None: ...
    def set(self, key: str, value: bytes, ttl: float | None) -> None: ...
    def delete(self, key: str) -> None: ...
    def clear(self) -> None: ...


@runtime_checkable
class AsyncBackend(Protocol):
    async def aget(self, key: str) -> bytes | None: ...
    async def aset(self, key: str, value: bytes, ttl: float | None) -> None: ...


class BaseBackend:
    """Shared plumbing: stats, close, and async methods that call the sync ones.

    Calling the sync method from the event loop is right for stores that answer in
    microseconds (memory, a local SQLite file); network stores override the async methods.
    """

    name = "base"

    def __init__(self) -> None:
        self.stats = CacheStats()

    def get(self, key: str) -> bytes | None:
        raise NotImplementedError

    def set(self, key: str, value: bytes, ttl: float | None) -> None:
        raise NotImplementedError

    def delete(self, key: str) -> None:
        raise NotImplementedError

    def clear(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        pass

    async def aget(self, key: str) -> bytes | None:
        return self.get(key)

    async def aset(self, key: str, value: bytes, ttl: float | None) -> None:
        self.set(key, value, ttl)

    async def adelete(self, key: str) -> None:
        self.delete(key)

    async def aclose(self) -> None:
        self.close()


def _check_ttl(ttl: float | None) -> None:
    if ttl is not None and not ttl > 0:
        raise ValueError(f"ttl must be a positive number of seconds or None, got {ttl!r}")


# -- memory ------------------------------------------------------------------------------

# Per-entry bookkeeping (key string, tuple, dict slot) counted against the byte bound so a
# flood of tiny entries cannot exceed it unnoticed; an estimate, not an exact measure.
_MEMORY_OVERHEAD = 200


class _CountingLRU(cachetools.LRUCache):
    def __init__(self, maxsize: int, stats: CacheStats) -> None:
        super().__init__(maxsize, getsizeof=lambda item: len(item[1]) + _MEMORY_OVERHEAD)
        self._stats = stats

    def popitem(self) -> Any:
        item = super().popitem()
        self._stats.add("evictions")
        return item


class MemoryBackend(BaseBackend):
    """In-process LRU bounded by entry count and by bytes, with a per-entry TTL."""

    name = "memory"

    def __init__(self, max_entries: int = 10_000, max_bytes: int = 256 * 1024 * 1024) -> None:
        super().__init__()
        if max_entries < 1 or max_bytes < 1:
            raise ValueError("MemoryBackend: max_entries and max_bytes must be positive")
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._lru = _CountingLRU(max_bytes, self.stats)
        self._lock = threading.Lock()

    def get(self, key: str) -> bytes | None:
        with self._lock:
            item = self._lru.get(key)
            if item is None:
                return None
            expires, value = item
            if expires is not None and time.monotonic() >= expires:
                del self._lru[key]
                return None
            return value

    def set(self, key: str, value: bytes, ttl: float | None) -> None:
        _check_ttl(ttl)
        expires = time.monotonic() + ttl if ttl is not None else None
        with self._lock:
            if len(value) + _MEMORY_OVERHEAD > self.max_bytes:
                return  # larger than the whole cache: storing it would only evict everything
            self._lru[key] = (expires, bytes(value))
            while len(self._lru) > self.max_entries:
                self._lru.popitem()

    def delete(self, key: str) -> None:
        with self._lock:
            self._lru.pop(key, None)

    def clear(self) -> None:
        with self._lock:
            self._lru.clear()

    def __len__(self) -> int:
        return len(self._lru)

    @property
    def size_bytes(self) -> int:
        return int(self._lru.currsize)


# -- SQLite ------------------------------------------------------------------------------

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    key     TEXT PRIMARY KEY,
    value   BLOB NOT NULL,
    size    INTEGER NOT NULL,
    created REAL NOT NULL,
    expires REAL
);
CREATE INDEX IF NOT EXISTS entries_created ON entries(created);
CREATE TABLE IF NOT EXISTS totals (id INTEGER PRIMARY KEY CHECK (id = 0),
                                   bytes INTEGER NOT NULL, count INTEGER NOT NULL);
INSERT OR IGNORE INTO totals VALUES (0, 0, 0);
-- Triggers keep the totals exact across processes without scanning the table per write.
CREATE TRIGGER IF NOT EXISTS entries_ins AFTER INSERT ON entries BEGIN
    UPDATE totals SET bytes = bytes + new.size, count = count + 1 WHERE id = 0; END;
CREATE TRIGGER IF NOT EXISTS entries_del AFTER DELETE ON entries BEGIN
    UPDATE totals SET bytes = bytes - old.size, count = count - 1 WHERE id = 0; END;
CREATE TRIGGER IF NOT EXISTS entries_upd AFTER UPDATE OF size ON entries BEGIN
    UPDATE totals SET bytes = bytes + new.size - old.size WHERE id = 0; END;
"""


def _sqlite_path(spec: str) -> str:
    """The file a ``sqlite:///path`` spec names, ``~`` expanded (``sqlite:///~/.cache/llm.db``
    is the home directory's, not ``/~/.cache``); a plain path is taken as it is."""
    if spec.startswith("sqlite:"):
        if not spec.startswith("sqlite://"):
            raise ValueError(f"SQLite spec must look like 'sqlite:///path/to/cache.db', got {spec!r}")
        path = spec[len("sqlite://"):]
        if not path or path == "/":
            raise ValueError(f"SQLite spec {spec!r} names no file")
        if path.startswith("/~"):
            path = path[1:]
    else:
        path = spec
    return os.path.expanduser(path)


# Cached answers can hold private data: the file and its -wal/-shm are the owner's alone.
_FILE_MODE = 0o600
_SIDE_FILES = ("", "-wal", "-shm", "-journal")


def _create_private(path: str) -> None:
    """Create ``path`` 0600 (and its directory 0700) unless it exists. O_EXCL: an existing file
    is never opened here, because closing any descriptor of a database file drops the POSIX
    locks this process's SQLite connections hold on it
    (https://sqlite.org/howtocorrupt.html#_posix_advisory_locks_canceled_by_a_separate_thread_doing_close_)."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, mode=0o700, exist_ok=True)
    try:
        # Mode 0600 before SQLite opens it; SQLite gives new -wal/-shm the database's mode.
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), _FILE_MODE)
    except FileExistsError:
        return
    os.close(fd)


def _keep_private(path: str) -> None:
    """Bring ``path`` and its SQLite side files to 0600 if others can read them (an existing
    0644 cache), or warn when that is not ours to change. By name (chmod), never by opening."""
    for suffix in _SIDE_FILES:
        name = path + suffix
        try:
            mode = stat.S_IMODE(os.stat(name).st_mode)
        except FileNotFoundError:
            continue
        if mode & 0o077:
            try:
                os.chmod(name, _FILE_MODE)
            except OSError as exc:
                warnings.warn(f"llmclient cache file {name} is mode {mode:o} (readable by others) "
                              f"and cannot be made 0600: {exc.strerror or exc}", stacklevel=4)


class SQLiteBackend(BaseBackend):
    """A persistent cache in one SQLite file, shared safely by threads and processes.

    WAL mode lets readers proceed while one writer writes (https://sqlite.org/wal.html);
    ``busy_timeout`` makes concurrent writers from other processes wait instead of failing.
    The file is created 0600: cached answers can hold private data. When the file grows past
    ``max_bytes``/``max_entries``, expired rows go first, then the oldest stored.
    Each thread uses its own connection (sqlite3 connections are not shared across threads).
    """

    name = "sqlite"

    def __init__(
        self,
        spec: str,
        *,
        max_bytes: int = 1024 * 1024 * 1024,
        max_entries: int = 1_000_000,
        busy_timeout_ms: int = 5000,
    ) -> None:
        super().__init__()
        self.path = _sqlite_path(spec)
        self.max_bytes = max_bytes
        self.max_entries = max_entries
        self._busy_timeout_ms = busy_timeout_ms
        self._local = threading.local()
        self._pid = os.getpid()
        self._connections: list[sqlite3.Connection] = []
        self._conn_lock = threading.Lock()
        self._ready = False
        # The file is opened on first use, not here: a file that is not a database, a
        # directory without permission or a full disk must fail a cache operation (which
        # ResponseCache turns into a counted miss), never the client's construction or call.

    def _open(self) -> sqlite3.Connection:
        if self._ready:
            return self._connect()
        # The first connection of this backend sets the file up while this process's other
        # threads wait: setting it up concurrently is what SQLite answers "locked" to.
        with self._conn_lock:
            if self._ready:
                return self._connect()
            _create_private(self.path)  # 0600 before SQLite makes it
            _keep_private(self.path)
            conn = self._connect()
            try:
                self._set_up(conn)
                _keep_private(self.path)  # the -wal/-shm SQLite just made or found
            except BaseException:
                conn.close()
                raise
            self._ready = True
            return conn

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=self._busy_timeout_ms / 1000,
                               isolation_level=None, check_same_thread=False)
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_ms)}")
            # NORMAL is durable across application crashes in WAL mode; a cache can lose the
            # last writes on power loss (https://sqlite.org/pragma.html#pragma_synchronous).
            conn.execute("PRAGMA synchronous = NORMAL")
        except BaseException:
            conn.close()
            raise
        return conn

    def _set_up(self, conn: sqlite3.Connection) -> None:
        """WAL mode and the schema, safe against other processes doing the same at once.

        SQLite does not call the busy handler where waiting could deadlock: a change of journal
        mode, and a statement that read and must then write (https://sqlite.org/c3ref/busy_handler.html).
        So the mode change is retried until ``busy_timeout`` runs out, and the schema is written
        in a transaction that takes the write lock first (``BEGIN IMMEDIATE``, which waits)."""
        deadline = time.monotonic() + self._busy_timeout_ms / 1000
        delay = 0.001
        while True:
            try:
                conn.execute("PRAGMA journal_mode = WAL")
                break
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() + delay > deadline:
                    raise
                time.sleep(delay)
                delay = min(delay * 2, 0.05)
        conn.executescript("BEGIN IMMEDIATE;\n" + _SCHEMA + "COMMIT;\n")

    def _conn(self) -> sqlite3.Connection:
        if self._pid != os.getpid():
            # A forked child must not use its parent's connections (https://sqlite.org/howtocorrupt.html#fork).
            self._pid, self._local, self._connections = os.getpid(), threading.local(), []
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._open()
            self._local.conn = conn
            with self._conn_lock:
                self._connections.append(conn)
        return conn

    def get(self, key: str) -> bytes | None:
        row = self._conn().execute(
            "SELECT value, expires FROM entries WHERE key = ?", (key,)
        ).fetchone()
        if row is None:
            return None
        value, expires = row
        if expires is not None and time.time() >= expires:
            self._conn().execute("DELETE FROM entries WHERE key = ? AND expires = ?", (key, expires))
            return None
        return bytes(value)

    def set(self, key: str, value: bytes, ttl: float | None) -> None:
        _check_ttl(ttl)
        now = time.time()
        expires = now + ttl if ttl is not None else None
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute(
                "INSERT INTO entries (key, value, size, created, expires) VALUES (?, ?, ?, ?, ?)"
                " ON CONFLICT(key) DO UPDATE SET value = excluded.value, size = excluded.size,"
                " created = excluded.created, expires = excluded.expires",
                (key, value, len(value), now, expires),
            )
            self._evict(conn, now)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def _evict(self, conn: sqlite3.Connection, now: float) -> None:
        total, count = conn.execute("SELECT bytes, count FROM totals WHERE id = 0").fetchone()
        if total <= self.max_bytes and count <= self.max_entries:
            return
        evicted = conn.execute(
            "DELETE FROM entries WHERE expires IS NOT NULL AND expires <= ?", (now,)
        ).rowcount
        while True:
            total, count = conn.execute("SELECT bytes, count FROM totals WHERE id = 0").fetchone()
            if (total <= self.max_bytes and count <= self.max_entries) or count == 0:
                break
            # Enough of the oldest rows to cover the excess at the average row size.
            over_bytes = -(-(total - self.max_bytes) * count // total) if total > self.max_bytes else 0
            batch = max(1, count - self.max_entries, over_bytes)
            evicted += conn.execute(
                "DELETE FROM entries WHERE key IN "
                "(SELECT key FROM entries ORDER BY created LIMIT ?)", (batch,)
            ).rowcount
        if evicted:
            self.stats.add("evictions", evicted)

    def delete(self, key: str) -> None:
        self._conn().execute("DELETE FROM entries WHERE key = ?", (key,))

    def clear(self) -> None:
        self._conn().execute("DELETE FROM entries")

    def size(self) -> tuple[int, int]:
        """(bytes, entries) currently stored, expired rows included until evicted."""
        total, count = self._conn().execute("SELECT bytes, count FROM totals WHERE id = 0").fetchone()
        return int(total), int(count)

    def close(self) -> None:
        with self._conn_lock:
            for conn in self._connections:
                conn.close()
            self._connections.clear()
        self._local = threading.local()


# -- Redis -------------------------------------------------------------------------------


def _import_redis() -> Any:
    try:
        import redis  # the redis extra: loaded by the first Redis backend
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "RedisBackend needs redis-py: pip install 'llmclient[redis]'"
        ) from exc
    return redis


class RedisBackend(RedisIO, AsyncRedisIO, BaseBackend):
    """Entries in Redis, shared by every process and machine pointing at the same server.

    Keys are namespaced by ``prefix`` so ``clear()`` only removes this cache's keys. TTLs use
    ``SET ... PX`` (https://redis.io/commands/set/); eviction beyond that is Redis's own
    ``maxmemory-policy``, which this client does not see (``evictions`` stays 0).
    """

    name = "redis"

    def __init__(self, url: str = "redis://127.0.0.1:6379/0", *, prefix: str = "llmclient:",
                 socket_timeout: float = 1.0) -> None:
        super().__init__()
        if not url.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError(f"Redis URL must start with redis://, rediss:// or unix://, got {url!r}")
        redis = _import_redis()
        self.url = url
        self.prefix = prefix
        self._socket_timeout = socket_timeout
        # A connect timeout too: an unreachable host must cost one bounded wait, not the OS's
        # minutes-long SYN retries (ResponseCache then skips the backend for a while).
        self._client = redis.Redis.from_url(url, socket_timeout=socket_timeout,
                                            socket_connect_timeout=socket_timeout)
        self._async: tuple[asyncio.AbstractEventLoop, Any] | None = None

    def _k(self, key: str) -> str:
        return self.prefix + key

    @staticmethod
    def _px(ttl: float | None) -> int | None:
        _check_ttl(ttl)
        return None if ttl is None else max(1, int(ttl * 1000))

    def _sync_client(self) -> Any:
        return self._client

    def clear(self) -> None:
        batch: list[Any] = []
        for key in self._client.scan_iter(match=self.prefix + "*", count=500):
            batch.append(key)
            if len(batch) >= 500:
                self._client.unlink(*batch)
                batch.clear()
        if batch:
            self._client.unlink(*batch)

    def _async_client(self) -> Any:
        # redis.asyncio connections belong to the loop that opened them.
        loop = asyncio.get_running_loop()
        if self._async is None or self._async[0] is not loop:
            import redis.asyncio as aredis  # the redis extra: loaded by the first Redis backend

            self._async = (loop, aredis.Redis.from_url(self.url, socket_timeout=self._socket_timeout,
                                                       socket_connect_timeout=self._socket_timeout))
        return self._async[1]

    def close(self) -> None:
        self._client.close()

    async def aclose(self) -> None:
        """The loop's connections, then :meth:`close` (the async cache clears and deletes
        through the sync client too)."""
        if self._async is not None:
            await self._async[1].aclose()
            self._async = None
        self.close()


class AsyncBackendView:
    """A backend as the async cache reaches it: each operation awaits the backend's
    ``a<op>`` where it has one (Redis), else calls ``<op>`` (memory and SQLite are local and
    quick, and a backend written for the sync client has only those)."""

    __slots__ = ("_backend",)

    def __init__(self, backend: Any) -> None:
        self._backend = backend

    async def get(self, key: str) -> bytes | None:
        aget = getattr(self._backend, "aget", None)
        return await aget(key) if aget is not None else self._backend.get(key)

    async def set(self, key: str, value: bytes, ttl: float | None) -> None:
        aset = getattr(self._backend, "aset", None)
        if aset is not None:
            await aset(key, value, ttl)
        else:
            self._backend.set(key, value, ttl)

    async def delete(self, key: str) -> None:
        adelete = getattr(self._backend, "adelete", None)
        if adelete is not None:
            await adelete(key)
        else:
            self._backend.delete(key)

    async def close(self) -> None:
        aclose = getattr(self._backend, "aclose", None)
        if aclose is not None:
            await aclose()
            return
        close = getattr(self._backend, "close", None)
        if close is not None:
            close()


def open_backend(spec: str | Backend | None) -> Backend:
    """``"memory"``, ``"sqlite:///path"``, ``"redis://host:port/db"`` or a backend object."""
    if spec is None or spec == "memory":
        return MemoryBackend()
    if isinstance(spec, str):
        if spec.startswith("sqlite:"):
            return SQLiteBackend(spec)
        if spec.startswith(("redis://", "rediss://")):
            return RedisBackend(spec)
        raise ValueError(
            f"unknown cache backend {spec!r}: use 'memory', 'sqlite:///path' or 'redis://host:port/db'"
        )
    if isinstance(spec, Backend):
        return spec
    raise TypeError(
        f"cache backend must be a spec string or an object with get/set/delete/clear, got {type(spec).__name__}"
    )
