"""One budget for every process and host using a credential: GCRA reservations in Redis.

The arithmetic is ``budget.py``'s, run atomically in Redis by one Lua script per reservation
(``EVALSHA``; Redis runs a script alone, so two processes can never take the same slot): it
reads each budget's ``tat``, applies what this process learned since its last reservation (the
server's debt from the latest headers, only ever raising ``tat``: other processes' calls in
flight are not in it; units a refused attempt gave back), reserves the call's cost on Redis's
own clock (``TIME``: hosts' clocks need not agree) and answers the wait. The budget's size and
window travel with each reservation, as the headers described them.

Staleness is bounded by the traffic: each answer's headers reach Redis with the next
reservation from that process. Redis down or slow (``socket_timeout``) never fails a call: the
reservation answers None and the pacer decides on this process's own view, and Redis is tried
again after :data:`RETRY_AFTER_S`.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from ._async.shared import AsyncSharedBudgetIO
from ._sync.shared import SharedBudgetIO
from .budget import HEADROOM, LOW_PRIORITY_SHARE

__all__ = ["RETRY_AFTER_S", "SharedBudget"]

log = logging.getLogger("llmclient.admit")

RETRY_AFTER_S = 2.0  # after a Redis failure, pace locally this long before trying it again
SOCKET_TIMEOUT_S = 0.25  # a reservation is on every call's path: a slow Redis is a down Redis

# KEYS: one tat per budget. ARGV[1]: the longest wait the caller accepts (-1: any); ARGV[2]:
# the share of a whole budget the call may find spent (budget.wait_for); then per key: limit,
# window_s, cost, debt_s (-1: none seen), released units.
_RESERVE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local max_wait = tonumber(ARGV[1])
local spendable = tonumber(ARGV[2])
local wait = 0
local before, after, windows = {}, {}, {}
for i = 1, #KEYS do
  local b = 2 + (i - 1) * 5
  local limit, window = tonumber(ARGV[b + 1]), tonumber(ARGV[b + 2])
  local cost, debt, rel = tonumber(ARGV[b + 3]), tonumber(ARGV[b + 4]), tonumber(ARGV[b + 5])
  local per = window / limit
  local tat = tonumber(redis.call('GET', KEYS[i]) or '0') or 0
  if rel > 0 then tat = math.max(now, tat - rel * per) end
  if debt >= 0 then tat = math.max(tat, now + debt) end
  local nxt = math.max(tat, now) + cost * per
  local w = nxt - window * spendable - now
  if w > wait then wait = w end
  before[i], after[i], windows[i] = tat, nxt, window
end
local ok = max_wait < 0 or wait <= max_wait
for i = 1, #KEYS do
  local v = before[i]
  if ok then v = after[i] end
  local ttl = math.ceil((v - now + windows[i]) * 1000)
  if ttl < 1 then ttl = 1 end
  redis.call('SET', KEYS[i], tostring(v), 'PX', ttl)
  local b = 2 + (i - 1) * 5
  redis.call('SET', KEYS[i] .. ':policy', ARGV[b + 1] .. ' ' .. ARGV[b + 2], 'EX', POLICY_TTL_S)
end
if ok then return {1, tostring(wait)} end
return {0, tostring(wait)}
""".replace("POLICY_TTL_S", "86400")
# Each budget's size and window stay in Redis a day after its last reservation: a process that
# starts paces its first call from them (:meth:`SharedBudget.learned`) instead of sending it
# blind into a budget the others have spent.


def _import_redis() -> Any:
    try:
        import redis  # the redis extra: loaded by the first shared budget
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("redis= (shared rate-limit budgets) needs redis-py: pip install 'llmclient[redis]'") from exc
    return redis


class SharedBudget(SharedBudgetIO, AsyncSharedBudgetIO):
    """Reservations in Redis at ``url`` (``redis://``, ``rediss://``, ``unix://``), keys under
    ``prefix``. ``learned``/``reserve`` and their async twins are ``_async/shared.py``."""

    def __init__(self, url: str, prefix: str = "llmclient:rl:") -> None:
        if not isinstance(url, str) or not url.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError(f"redis= must be a redis://, rediss:// or unix:// URL, got {url!r}")
        redis = _import_redis()
        self.url, self.prefix = url, prefix
        self._client = redis.Redis.from_url(url, socket_timeout=SOCKET_TIMEOUT_S,
                                            socket_connect_timeout=SOCKET_TIMEOUT_S)
        self._script = self._client.register_script(_RESERVE)
        self._async: tuple[Any, Any] | None = None  # (loop, script) for the async client
        self._down_until = 0.0
        self._lock = threading.Lock()
        self.failures = 0
        self.last_ok = False  # whether the latest reservation was made in Redis

    @property
    def healthy(self) -> bool:
        return time.monotonic() >= self._down_until

    def note_release(self, state: Any, cost: int) -> None:
        """A refused attempt's units, given back with this process's next reservation."""
        state.shared_release["requests"] = state.shared_release.get("requests", 0.0) + 1
        state.shared_release["tokens"] = state.shared_release.get("tokens", 0.0) + cost

    def _policy_keys(self, key: tuple[str, str]) -> list[str]:
        return [f"{self.prefix}{key[1][:32]}:{kind}:policy" for kind in ("requests", "tokens")]

    @staticmethod
    def _policies(reply: Any) -> dict[str, tuple[int, float]]:
        found: dict[str, tuple[int, float]] = {}
        for kind, raw in zip(("requests", "tokens"), reply or (), strict=False):
            try:
                limit, window = (raw.decode() if isinstance(raw, bytes) else raw).split()
                found[kind] = (int(limit), float(window))
            except (AttributeError, ValueError):
                continue
        return {k: v for k, v in found.items() if v[0] > 0 and v[1] > 0}

    def _args(self, key: tuple[str, str], state: Any, cost: int, timeout_s: float | None,
              low: bool) -> tuple[list[str], list[Any]]:
        keys: list[str] = []
        spendable = 1.0 - HEADROOM - (LOW_PRIORITY_SHARE if low else 0.0)
        argv: list[Any] = [-1 if timeout_s is None else timeout_s, spendable]
        now = time.monotonic()
        with self._lock:
            seen_at = state.shared_debt.pop("at", None)
            for kind, bucket, units in (("requests", state.requests, 1), ("tokens", state.tokens, cost)):
                if bucket is None:
                    continue
                debt = state.shared_debt.pop(kind, None)
                debt_now = -1.0 if debt is None or seen_at is None else max(0.0, debt - (now - seen_at))
                keys.append(f"{self.prefix}{key[1][:32]}:{kind}")
                argv += [bucket.limit, bucket.window_s, units, debt_now, state.shared_release.pop(kind, 0.0)]
        return keys, argv

    def _answer(self, reply: Any) -> float:
        # Refused (nothing reserved) only when the wait is past the caller's timeout, which the
        # pacer then reports.
        self.last_ok = True
        return max(0.0, float(reply[1]))

    def _failed(self, exc: BaseException) -> None:
        self.failures += 1
        self.last_ok = False
        if self.healthy:
            log.warning("shared rate-limit budget unavailable (%s): pacing on this process's own "
                        "view for %.0f s", type(exc).__name__, RETRY_AFTER_S)
        self._down_until = time.monotonic() + RETRY_AFTER_S

    def _sync_redis(self) -> Any:
        return self._client

    def _sync_script(self) -> Any:
        return self._script

    def _async_redis(self) -> Any:
        return self._async_script().registered_client

    def _async_script(self) -> Any:
        import asyncio  # the async client's first shared reservation loads it

        import redis.asyncio as aredis  # the redis extra: loaded by the first async reservation

        loop = asyncio.get_running_loop()
        # redis.asyncio connections belong to the loop that opened them.
        if self._async is None or self._async[0] is not loop:
            client = aredis.Redis.from_url(self.url, socket_timeout=SOCKET_TIMEOUT_S,
                                           socket_connect_timeout=SOCKET_TIMEOUT_S)
            self._async = (loop, client.register_script(_RESERVE))
        return self._async[1]

    def close(self) -> None:
        try:
            self._client.close()
        except Exception:  # closing a dead connection
            pass
