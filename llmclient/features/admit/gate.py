"""The gate that holds calls at an origin's adaptive concurrency limit (``concurrency.py``
decides the limit; this is its thin I/O).

One :class:`Gate` per origin per client. A call takes a slot before it is sent and gives it back
when its response closes (a body read, a stream ended or abandoned), with its latency sample.
Waiters are served in arrival order, each woken by the release that hands it its slot; a call
whose timeout passes while it waits raises ``APITimeoutError`` and was never sent.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from typing import Any

import httpx

from ..held_body import HeldBody
from ._async.gate import AsyncGateIO
from ._sync.gate import GateIO
from .concurrency import AdaptiveConfig, AdaptiveLimit, observe, unsignalled

__all__ = ["Gate", "Gates", "sample_ms"]

log = logging.getLogger("llmclient.admit")


def sample_ms(record: Any, stream: bool) -> float | None:
    """A call's congestion sample: the server's queue time (Server-Timing) where it reports
    one, else a stream's time to first token; None for a plain call without Server-Timing
    (its latency mixes queueing with however long its answer is)."""
    timing = getattr(record, "server_timing", None) or {}
    queue = timing.get("queue") if isinstance(timing, dict) else None
    if isinstance(queue, (int, float)):
        return float(queue)
    first = getattr(record, "first_token_ms", None) if stream else None
    return float(first) if isinstance(first, (int, float)) else None


class Gate(GateIO, AsyncGateIO):
    """One origin's slots: ``acquire``/``aacquire`` (``_async/gate.py``, the sync twin
    generated) take one, :meth:`release` gives it back and hands it to the next in line."""

    def __init__(self, base_url: str, config: AdaptiveConfig) -> None:
        self.base_url, self.config = base_url, config
        self.limit = AdaptiveLimit(float(config.initial))
        self.in_flight = 0
        self.waited = 0
        self._lock = threading.Lock()
        self._waiters: deque[Any] = deque()  # an Event (sync client) or AsyncEvent (async) each

    def _take(self) -> bool:
        if not self._waiters and self.in_flight < self.limit.allowed:
            self.in_flight += 1
            return True
        return False

    def _withdraw(self, waiter: Any) -> bool:
        """Take ``waiter`` out of the line: True if it was still waiting, False when a release
        handed it a slot meanwhile."""
        with self._lock:
            if waiter in self._waiters:
                self._waiters.remove(waiter)
                return True
        return False

    def release(self, sample: float | None, answered: bool = False) -> None:
        """Give a slot back: with the answer's sample, or ``answered`` without one (a plain call
        and no Server-Timing); neither for a call that failed."""
        blind = False
        with self._lock:
            if sample is not None:
                self.limit = observe(self.config, self.limit, sample, self.in_flight)
            elif answered:
                before = self.limit
                self.limit = unsignalled(self.config, before)
                blind = self.limit.reason != before.reason  # lifted just now (it says so once)
            self.in_flight -= 1
            while self._waiters and self.in_flight < self.limit.allowed:
                self._waiters.popleft().set()  # a waiter that gave up has left the line already
                self.in_flight += 1
        if blind:  # once per gate: the limit is lifted once, and only before any sample
            log.warning("concurrency='adaptive' at %s: %s", self.base_url, self.limit.reason)

    def hold(self, response: httpx.Response, record: Any, stream: bool) -> None:
        """Give the slot back when ``response`` closes, with the call's sample then (a plain
        call answered without Server-Timing: :func:`~.concurrency.unsignalled`)."""

        def close(failure: str | None) -> None:
            sample = sample_ms(record, stream)
            self.release(sample, answered=sample is None and not stream and failure is None)

        response.stream = _Releasing(response.stream, close)

    def stats(self) -> dict[str, Any]:
        with self._lock:
            return {"limit": self.limit.allowed, "in_flight": self.in_flight, "waiting": len(self._waiters),
                    "baseline_ms": self.limit.baseline_ms, "cuts": self.limit.cuts,
                    "samples": self.limit.samples, "calls_waited": self.waited, "reason": self.limit.reason}


class _Releasing(HeldBody):
    """A response body that calls ``on_close(failure)`` once, when it is closed (a failure
    mid-body frees the slot too; ``failure`` says what went wrong, None for a whole body)."""

    def __init__(self, inner: Any, on_close: Any) -> None:
        super().__init__(inner)
        self._on_close = on_close

    def _give_back(self, failure: str | None) -> None:
        self._on_close(failure)


class Gates:
    """The gates of one client, per base URL."""

    def __init__(self, config: AdaptiveConfig) -> None:
        self.config = config
        self._gates: dict[str, Gate] = {}
        self._lock = threading.Lock()

    def gate(self, base_url: str) -> Gate:
        gate = self._gates.get(base_url)
        if gate is None:
            with self._lock:
                gate = self._gates.setdefault(base_url, Gate(base_url, self.config))
        return gate

    def stats(self) -> dict[str, dict[str, Any]]:
        return {url: gate.stats() for url, gate in list(self._gates.items())}
