"""Ejections and in-flight counts shared across processes through Redis
(``Replicas(..., redis="redis://...")``).

Many app processes route consistently by construction (the same keys hash the same way), but
each learns load and health on its own: without sharing, every worker of a fleet pays its own
failed connection before it stops sending to a dead replica. With ``redis=``, an ejection is
published as one key per replica (``SET key <wall-clock end> PX <cooldown>``: it expires with
the cooldown, so nothing needs cleaning) and every process reads the fleet's keys at most once
per ``REFRESH_S`` (one ``MGET``): a replica another process ejected is out here too within that
bounded staleness.

In-flight counts: each process writes its own count per replica as one field of a hash per
replica (``HSET key <process id> "<count> <wall clock>"``, the hash expiring ``LOAD_STALE_S``
after its last write) and reads every process's fields back, at most every ``LOAD_REFRESH_S``;
a field older than ``LOAD_STALE_S`` (a process that died or lost Redis) is ignored and deleted
(:func:`others_load`, pure). The router adds the others' counts to its own when it bounds a
replica's load, so a fleet of workers spreads one hot prefix as one process would. A process
that closes deletes its fields.

All Redis I/O runs on one daemon thread per router, never on the call's path (an async client's
event loop never waits on Redis). Redis down or slow: the thread keeps trying, the shared view
empties as its entries run out, and every process falls back to its own view; calls are not
affected. The fleet's keys are named by a hash of its sorted replica URLs (and a namespace), so
processes with the same list share them and never see another fleet's.
"""

from __future__ import annotations

import hashlib
import queue
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["LOAD_REFRESH_S", "LOAD_STALE_S", "REFRESH_S", "SharedEjections", "merge", "others_load"]

REFRESH_S = 1.0         # the most a shared ejection can be stale in another process
LOAD_REFRESH_S = 0.25   # in-flight counts: written and read at most this often
LOAD_STALE_S = 3.0      # a process's count not rewritten for this long is ignored (and deleted)
SOCKET_TIMEOUT_S = 0.5


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def others_load(fields: Mapping[Any, Any], me: str, now_wall: float,
                stale_s: float = LOAD_STALE_S) -> tuple[int, list[str]]:
    """The in-flight calls other processes have on one replica (the fields of its hash,
    ``{process id: "<count> <wall clock>"}``), and the fields too old to count (to delete).
    This process's own field and malformed ones are skipped. Pure."""
    total, stale = 0, []
    for name, value in fields.items():
        who = _text(name)
        if who == me:
            continue
        try:
            count_s, at_s = _text(value).split()
            count, at = int(count_s), float(at_s)
        except ValueError:
            stale.append(who)
            continue
        if now_wall - at > stale_s:
            stale.append(who)
        elif count > 0:
            total += count
    return total, stale


def merge(local: float, shared_wall: float | None, now_mono: float, now_wall: float) -> float:
    """A replica's ejection end on this process's monotonic clock: its own, or a later one
    another process published (``shared_wall``: wall-clock end), whichever is later. Pure."""
    if shared_wall is None or shared_wall <= now_wall:
        return local
    return max(local, now_mono + (shared_wall - now_wall))


class SharedEjections:
    """The Redis side of one router: ``view`` (ejection ends other processes published) and
    ``others`` (the in-flight calls other processes have on each replica), refreshed by a daemon
    thread; ``loads`` gives this process's own counts (None: counts are not shared)."""

    def __init__(self, redis: Any, urls: Sequence[str], namespace: str = "llmclient",
                 loads: Callable[[], Sequence[int]] | None = None) -> None:
        fleet = hashlib.blake2b("\n".join(sorted(urls)).encode(), digest_size=8).hexdigest()
        self.keys = [f"{namespace}:route:{fleet}:{hashlib.blake2b(u.encode(), digest_size=8).hexdigest()}"
                     for u in urls]
        self.load_keys = [f"{key}:load" for key in self.keys]
        self.me = uuid.uuid4().hex  # this process's (this router's) field in each load hash
        self._loads = loads
        self.others: list[int] = [0] * len(urls)
        self._redis = redis
        self._client: Any = None
        self.view: list[float | None] = [None] * len(urls)  # wall-clock ejection ends seen
        self.errors = 0
        self._outbox: queue.SimpleQueue[tuple[int, float] | None] = queue.SimpleQueue()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="llmclient-route-redis", daemon=True)
        self._thread.start()

    def publish(self, replica: int, cooldown_s: float) -> None:
        """Replica ``replica`` was ejected here for ``cooldown_s``: tell the others (queued)."""
        self._outbox.put((replica, cooldown_s))

    def close(self) -> None:
        self._stop.set()
        self._outbox.put(None)

    def _flush(self) -> None:
        """Closed: the ejections published before the close still reach the other processes (a
        process that ejects a replica and exits at once must not take the news with it)."""
        while True:
            try:
                item = self._outbox.get_nowait()
            except queue.Empty:
                return
            if item is None:
                continue
            replica, cooldown = item
            try:
                self._connect().set(self.keys[replica], repr(time.time() + cooldown), px=max(1, int(cooldown * 1000)))
            except Exception:  # Redis down: nothing more to do at shutdown
                self.errors += 1
                return

    def _connect(self) -> Any:
        if self._client is None:
            if isinstance(self._redis, str):
                import redis  # the redis extra: loaded only for a fleet shared through Redis

                self._client = redis.Redis.from_url(self._redis, socket_timeout=SOCKET_TIMEOUT_S,
                                                    socket_connect_timeout=SOCKET_TIMEOUT_S)
            else:
                self._client = self._redis
        return self._client

    def _share_loads(self, client: Any) -> None:
        """Write this process's counts, read everyone's (one pipelined round trip)."""
        assert self._loads is not None
        own = list(self._loads())
        wall = time.time()
        pipe = client.pipeline(transaction=False)
        for key, count in zip(self.load_keys, own, strict=True):
            pipe.hset(key, self.me, f"{count} {wall!r}")
            pipe.pexpire(key, int(LOAD_STALE_S * 1000))
            pipe.hgetall(key)
        replies = pipe.execute()
        others: list[int] = []
        stale: list[tuple[str, str]] = []
        for n, key in enumerate(self.load_keys):
            total, old = others_load(replies[3 * n + 2] or {}, self.me, wall)
            others.append(total)
            stale.extend((key, who) for who in old)
        self.others = others
        for key, who in stale:
            client.hdel(key, who)

    def _run(self) -> None:
        next_read = next_load = 0.0
        while not self._stop.is_set():
            wake = min(next_read, next_load) if self._loads is not None else next_read
            try:
                item = self._outbox.get(timeout=max(0.0, wake - time.monotonic()))
            except queue.Empty:
                item = None
            try:
                client = self._connect()
                if item is not None:
                    replica, cooldown = item
                    client.set(self.keys[replica], repr(time.time() + cooldown), px=max(1, int(cooldown * 1000)))
                if time.monotonic() >= next_read:
                    next_read = time.monotonic() + REFRESH_S
                    values = client.mget(self.keys)
                    self.view = [float(v) if v is not None else None for v in values]
                if self._loads is not None and time.monotonic() >= next_load:
                    next_load = time.monotonic() + LOAD_REFRESH_S
                    self._share_loads(client)
            except Exception:  # Redis down, slow or refusing: this process's own view only
                self.errors += 1
                self.view = [None] * len(self.keys)
                self.others = [0] * len(self.keys)
                next_read = time.monotonic() + REFRESH_S
                next_load = time.monotonic() + REFRESH_S
        self._flush()
        if self._loads is not None and self._client is not None:
            try:  # closed: this process's counts leave the fleet's view at once
                for key in self.load_keys:
                    self._client.hdel(key, self.me)
            except Exception:
                pass
