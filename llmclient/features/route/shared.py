"""Ejections shared across processes through Redis (``Replicas(..., redis="redis://...")``).

Many app processes route consistently by construction (the same keys hash the same way), but
each learns load and health on its own: without sharing, every worker of a fleet pays its own
failed connection before it stops sending to a dead replica. With ``redis=``, an ejection is
published as one key per replica (``SET key <wall-clock end> PX <cooldown>``: it expires with
the cooldown, so nothing needs cleaning) and every process reads the fleet's keys at most once
per ``REFRESH_S`` (one ``MGET``): a replica another process ejected is out here too within that
bounded staleness.

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
from collections.abc import Sequence
from typing import Any

__all__ = ["REFRESH_S", "SharedEjections", "merge"]

REFRESH_S = 1.0         # the most a shared ejection can be stale in another process
SOCKET_TIMEOUT_S = 0.5


def merge(local: float, shared_wall: float | None, now_mono: float, now_wall: float) -> float:
    """A replica's ejection end on this process's monotonic clock: its own, or a later one
    another process published (``shared_wall``: wall-clock end), whichever is later. Pure."""
    if shared_wall is None or shared_wall <= now_wall:
        return local
    return max(local, now_mono + (shared_wall - now_wall))


class SharedEjections:
    def __init__(self, redis: Any, urls: Sequence[str], namespace: str = "llmclient") -> None:
        fleet = hashlib.blake2b("\n".join(sorted(urls)).encode(), digest_size=8).hexdigest()
        self.keys = [f"{namespace}:route:{fleet}:{hashlib.blake2b(u.encode(), digest_size=8).hexdigest()}"
                     for u in urls]
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

    def _connect(self) -> Any:
        if self._client is None:
            if isinstance(self._redis, str):
                import redis  # the redis extra: loaded only for a fleet shared through Redis

                self._client = redis.Redis.from_url(self._redis, socket_timeout=SOCKET_TIMEOUT_S,
                                                    socket_connect_timeout=SOCKET_TIMEOUT_S)
            else:
                self._client = self._redis
        return self._client

    def _run(self) -> None:
        next_read = 0.0
        while not self._stop.is_set():
            try:
                item = self._outbox.get(timeout=max(0.0, next_read - time.monotonic()))
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
            except Exception:  # Redis down, slow or refusing: this process's own view only
                self.errors += 1
                self.view = [None] * len(self.keys)
                next_read = time.monotonic() + REFRESH_S
