"""Retry budgets shared by every process using one Redis (``redis=``), so that a fleet's
retries, not only one process's, stay a bounded share of its calls while an origin fails.

Each origin's bucket (``retry_budget.Bucket``'s tokens) is one Redis key. A daemon thread per
Redis URL sends, every :data:`SYNC_S`, what each budget of this process saw since its last
trip (its failures and successes) and gets the fleet's tokens back, in one atomic Lua script
(``EVALSHA``: Redis runs a script alone, so two processes' deltas never interleave); the
local view is then the fleet's tokens plus what happened here since (``OriginBudget.merge``).
No call waits on Redis (an async client's event loop never does): decisions are made on the
local view, at most :data:`SYNC_S` plus a round trip behind the fleet, so in the first moments
of an outage each process may allow up to half its bucket before it learns the others' news.

Redis down or slow (``socket_timeout``): each process keeps deciding on its own view (what
it has seen, as without ``redis=``), logs it once, and tries Redis again after
:data:`RETRY_AFTER_S`. A key not written for :data:`KEY_TTL_S` expires (a full bucket again).
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
import weakref
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from .retry_budget import OriginBudget

__all__ = ["KEY_TTL_S", "RETRY_AFTER_S", "SYNC_S", "SharedRetryBudgets", "shared_budgets"]

log = logging.getLogger("llmclient.admit")

SYNC_S: Final = 0.1  # the most a process's view lags the fleet's (plus a round trip)
IDLE_AFTER_S: Final = 30.0  # a budget untouched this long is no longer refreshed
IDLE_WAIT_S: Final = 5.0  # the thread's sleep while no budget is in use
KEY_TTL_S: Final = 600
RETRY_AFTER_S: Final = 2.0
SOCKET_TIMEOUT_S: Final = 0.25

# KEYS: one per budget; per key 4 ARGV: max_tokens, token_ratio, failures, successes. Returns
# each budget's tokens after this process's deltas (successes first, then failures: the order
# retry_budget.apply uses).
_SYNC = """
local out = {}
for i = 1, #KEYS do
  local b = (i - 1) * 4
  local top, ratio = tonumber(ARGV[b + 1]), tonumber(ARGV[b + 2])
  local failures, successes = tonumber(ARGV[b + 3]), tonumber(ARGV[b + 4])
  local t = tonumber(redis.call('GET', KEYS[i]) or ARGV[b + 1]) or top
  t = math.min(top, t + successes * ratio)
  t = math.max(0, t - failures)
  redis.call('SET', KEYS[i], tostring(t), 'EX', KEY_TTL_S)
  out[i] = tostring(t)
end
return out
""".replace("KEY_TTL_S", str(KEY_TTL_S))


def _import_redis() -> Any:
    try:
        import redis  # the redis extra: loaded by the first shared retry budget
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("redis= (shared retry budgets) needs redis-py: pip install 'llmclient[redis]'") from exc
    return redis


def key_for(prefix: str, budget: OriginBudget) -> str:
    """The Redis key of one origin's bucket under one policy (processes with another policy
    for the same origin keep their own)."""
    p = budget.policy
    return f"{prefix}{budget.origin}:{p.max_tokens:g}:{p.token_ratio:g}"


class SharedRetryBudgets:
    """The Redis side of this process's retry budgets at ``url``: one daemon thread."""

    def __init__(self, url: str, prefix: str = "llmclient:rb:") -> None:
        if not url.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError(f"redis= must be a redis://, rediss:// or unix:// URL, got {url!r}")
        redis = _import_redis()
        self.url, self.prefix = url, prefix
        self._client = redis.Redis.from_url(url, socket_timeout=SOCKET_TIMEOUT_S,
                                            socket_connect_timeout=SOCKET_TIMEOUT_S)
        self._script = self._client.register_script(_SYNC)
        self._budgets: weakref.WeakSet[OriginBudget] = weakref.WeakSet()  # a dropped client's go with it
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._down_until = 0.0
        self.syncs = 0
        self.failures = 0
        self._thread: threading.Thread | None = None

    def touched(self, budget: OriginBudget) -> None:
        """``budget`` changed here: it goes to Redis with the next trip."""
        now = time.monotonic()
        if now - budget.used_at >= IDLE_AFTER_S:
            self._wake.set()  # the thread may be in its long sleep
        budget.used_at = now
        if budget not in self._budgets:  # two clients' budgets may share a key: by the object
            with self._lock:
                self._budgets.add(budget)
        if self._thread is None:
            with self._lock:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name="llmclient-retry-budget", daemon=True)
                    self._thread.start()

    def join(self, budget: OriginBudget) -> None:
        """A budget new in this process: it starts from the fleet's tokens (one round trip,
        now), not from a full bucket the others may have spent."""
        self.touched(budget)
        self.sync(only=budget)

    def sync(self, only: OriginBudget | None = None) -> bool | None:
        """One trip now (the thread's, also callable): whether Redis answered; None when no
        budget was touched lately (nothing to do)."""
        now = time.monotonic()
        if now < self._down_until:
            return False
        with self._lock:
            live = [(key_for(self.prefix, b), b) for b in self._budgets
                    if (b is only if only is not None else now - b.used_at < IDLE_AFTER_S)]
        if not live:
            return None
        keys: list[str] = []
        args: list[Any] = []
        taken: list[tuple[OriginBudget, float, int]] = []  # (tokens failures took, successes)
        for key, budget in live:
            failures, successes = budget.take_pending()
            keys.append(key)
            args += [budget.policy.max_tokens, budget.policy.token_ratio, failures, successes]
            taken.append((budget, failures, successes))
        try:
            reply = self._script(keys=keys, args=args)
        except Exception as exc:  # Redis must never fail a call: each process decides alone
            for budget, failures, successes in taken:  # what was not sent stays here
                with budget.lock:
                    budget.pending_failures += failures
                    budget.pending_successes += successes
            self._failed(exc)
            return False
        for (budget, _, _), value in zip(taken, reply, strict=True):
            budget.merge(float(value.decode() if isinstance(value, bytes) else value))
        self.syncs += 1
        return True

    def _failed(self, exc: BaseException) -> None:
        self.failures += 1
        if time.monotonic() >= self._down_until:
            log.warning("shared retry budget unavailable (%s): deciding on this process's own view for %.0f s",
                        type(exc).__name__, RETRY_AFTER_S)
        self._down_until = time.monotonic() + RETRY_AFTER_S

    def _run(self) -> None:
        idle = False
        while True:
            self._wake.wait(IDLE_WAIT_S if idle else SYNC_S)  # touched() wakes an idle thread
            self._wake.clear()
            idle = self.sync() is None

    def close(self) -> None:
        try:
            self._client.close()
        except Exception:  # closing a dead connection
            pass


_lock = threading.Lock()
_shared: dict[str, SharedRetryBudgets] = {}


def shared_budgets(url: str) -> SharedRetryBudgets:
    """The process's shared retry budgets at ``url`` (one thread per Redis)."""
    found = _shared.get(url)
    if found is None:
        with _lock:
            found = _shared.get(url)
            if found is None:
                found = _shared[url] = SharedRetryBudgets(url)
    return found


def _last_trip() -> None:
    """At exit: what this process saw last still reaches the fleet."""
    for shared in list(_shared.values()):
        shared.sync()


atexit.register(_last_trip)


def _forget_after_fork() -> None:
    """A forked child: the parent's threads do not run here; the child starts its own."""
    global _lock
    _lock = threading.Lock()
    _shared.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)
