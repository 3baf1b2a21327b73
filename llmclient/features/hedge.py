"""Hedged requests: a second copy of a call that is slower than usual, first answer wins.

One slow replica, one request stuck behind a long prefill, one lost packet: a few calls in a
hundred take several times the usual time and set the P99. Sending a second copy of a call that
has not answered by the time most calls have (the "hedged request" of Dean and Barroso, "The
Tail at Scale", CACM 2013) cuts that tail for a bounded amount of extra load.

The decisions are pure functions of small state, kept here; the clients only do the I/O:

- which calls: chat completions, completions and embeddings, streamed or not (side-effect
  free; a body with ``store: true`` is not hedged, as the server would store it twice).
- when: after ``after_ms`` when given, else after the ``quantile`` (default p95) of the time to
  the answer's headers (streams: to the first chunk with a token, as a slow replica sends its
  headers, and often a role-only chunk, at once and its first token late) of the last
  ``window`` calls to the same endpoint, model and mode (streamed or not), once ``min_samples``
  are known (before that, no hedging). A call that lost to its hedge counts as at least as slow
  as the moment it lost, so the learned delay does not creep down.
- how many: a token bucket gives each eligible call ``max_ratio`` of a hedge (at most ``burst``
  saved up), so hedges are at most ``max_ratio`` of calls plus the burst; when it is empty the
  call waits for its first copy alone.

The copy carries the same trace id, ``x-llm-hedge: 1``, and its own ``Idempotency-Key`` (a
server that deduplicates by key would otherwise hold the copy behind the first). Whichever copy
answers first (2xx or a final error, after its own retries) is the call's answer; the other is
cancelled: its HTTP/2 stream is reset, so the server stops working on it, and a retry wait it
was in ends. Only llmclient's own HTTP/2 connections can cancel a request from outside, so calls
to an origin known to speak HTTP/1.1 only, or through a caller's ``http_client``, are not hedged.
"""

from __future__ import annotations

import math
import threading
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..wire.codec import RESPONSES_PATH
from ._async.hedge import AsyncCancelTokenIO
from ._sync.hedge import CancelTokenIO

__all__ = [
    "HEDGE_HEADER",
    "CancelToken",
    "HedgeConfig",
    "HedgeLost",
    "HedgeTrack",
    "delay_ms",
    "eligible",
    "hedge_config",
]

HEDGE_HEADER = "x-llm-hedge"
_HEDGED_PATHS = ("/chat/completions", "/completions", "/embeddings", "/v1/messages")  # Messages: nothing stored


@dataclass(frozen=True, slots=True)
class HedgeConfig:
    """When and how often to send a second copy of a slow call (``OpenAI(hedge=...)``)."""

    after_ms: float | None = None  # a fixed delay; None: learn it (``quantile`` of recent calls)
    quantile: float = 0.95
    min_samples: int = 20
    window: int = 200
    max_ratio: float = 0.1  # hedges per eligible call, on average, at most
    burst: float = 3.0
    min_delay_ms: float = 10.0  # never hedge sooner than this, whatever was learned

    def __post_init__(self) -> None:
        problems = []
        if self.after_ms is not None and not self.after_ms >= 0:
            problems.append(f"after_ms must be >= 0, got {self.after_ms!r}")
        if not 0.5 <= self.quantile < 1:
            problems.append(f"quantile must be in [0.5, 1), got {self.quantile!r}")
        if self.min_samples < 1 or self.window < self.min_samples:
            problems.append(f"need 1 <= min_samples <= window, got {self.min_samples}, {self.window}")
        if not 0 < self.max_ratio <= 1:
            problems.append(f"max_ratio must be in (0, 1], got {self.max_ratio!r}")
        if not self.burst >= 1:
            problems.append(f"burst must be >= 1, got {self.burst!r}")
        if problems:
            raise ValueError("HedgeConfig: " + "; ".join(problems))


def hedge_config(value: Any) -> HedgeConfig | None:
    """``hedge=`` as given to a client or a call: True, False/None, or a HedgeConfig."""
    if value is None or value is False:
        return None
    if value is True:
        return HedgeConfig()
    if isinstance(value, HedgeConfig):
        return value
    raise TypeError(f"hedge must be True, False or llmclient.HedgeConfig(...), got {value!r}")


def eligible(method: str, path: str, body: Mapping[str, Any] | None) -> bool:
    """Whether a call may be sent twice (pure). Streams may: they race on their first token.
    A request the server stores (``store``: chat's opt-in, the Responses API's default) may not:
    the losing copy would leave a second stored answer behind."""
    if method != "POST" or body is None or body.get("store") is True:
        return False
    if path.endswith(RESPONSES_PATH):
        return body.get("store") is False
    return path.endswith(_HEDGED_PATHS)


def delay_ms(samples: Sequence[float], config: HedgeConfig) -> float | None:
    """How long to wait before the copy, in ms, or None: do not hedge (not enough known yet)."""
    if config.after_ms is not None:
        return max(config.after_ms, 0.0)
    n = len(samples)
    if n < config.min_samples:
        return None
    ordered = sorted(samples)
    # The nearest-rank quantile: the smallest sample with at least `quantile` of them at or below.
    rank = min(n - 1, max(0, math.ceil(config.quantile * n) - 1))
    return max(ordered[rank], config.min_delay_ms)


class HedgeTrack:
    """Recent latencies and the hedge budget of one endpoint and model (thread-safe)."""

    __slots__ = ("_lock", "_samples", "_tokens", "config", "hedges", "wins")

    def __init__(self, config: HedgeConfig) -> None:
        self.config = config
        self._lock = threading.Lock()
        self._samples: deque[float] = deque(maxlen=config.window)
        self._tokens = 1.0  # the first slow call may be hedged
        self.hedges = 0  # copies sent
        self.wins = 0  # copies that answered first

    def plan(self) -> float | None:
        """For a new eligible call: credit the budget; the delay in seconds, or None."""
        with self._lock:
            cfg = self.config
            self._tokens = min(cfg.burst, self._tokens + cfg.max_ratio)
            ms = delay_ms(self._samples, cfg)
        return None if ms is None else ms / 1000.0

    def take(self) -> bool:
        """Spend one hedge, if the budget has one."""
        with self._lock:
            if self._tokens < 1.0:
                return False
            self._tokens -= 1.0
            self.hedges += 1
            return True

    def observe(self, ms: float, hedge_won: bool = False) -> None:
        with self._lock:
            self._samples.append(ms)
            if hedge_won:
                self.wins += 1

    def stats(self) -> dict[str, Any]:
        with self._lock:
            ms = delay_ms(self._samples, self.config)
            return {"samples": len(self._samples), "delay_ms": ms, "hedges": self.hedges,
                    "wins": self.wins, "budget": round(self._tokens, 3)}


class HedgeLost(Exception):
    """Raised in the copy of a hedged call that lost the race (never reaches the caller)."""


class CancelToken(CancelTokenIO, AsyncCancelTokenIO):
    """Lets one thread cancel another's request in flight (the sync client's losing copy).

    The HTTP/2 connection attaches a canceller when it opens the request's stream
    (``request.extensions["llmclient.cancel"]``); :meth:`cancel` runs it, at once if it is
    already attached, else as soon as it is (HTTP/2 resets the stream, HTTP/1.1 closes the
    connection). It also ends the call's retry wait (``sleep``/``asleep``, ``_async/hedge.py``).
    """

    __slots__ = ("_cancel", "_event", "_exc", "_lock")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancel: Any = None
        self._exc: Exception | None = None
        self._event: Any = None  # an Event or AsyncEvent, made by the first wait: most never do

    def attach(self, cancel: Any) -> None:
        with self._lock:
            self._cancel = cancel
            exc = self._exc
        if exc is not None:
            cancel(exc)

    def cancel(self, exc: Exception) -> None:
        with self._lock:
            self._exc = exc
            cancel, event = self._cancel, self._event
        if event is not None:
            event.set()
        if cancel is not None:
            cancel(exc)
