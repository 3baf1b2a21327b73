# Generated from llmclient/cache/_async/singleflight.py by scripts/unasync.py: do not edit here, edit that
# file and run `python scripts/unasync.py` (make lint checks that this file is current).
"""Single-flight: identical calls in flight at the same moment share one upstream request.

The first caller for a key becomes the *leader* and does the work; callers arriving while
it runs become *waiters*. When the leader resolves, waiters get its result. When the leader
fails (error, cancellation, a stream cut short), waiters are released with no result and go
upstream themselves, so one failure is never multiplied into many.

:class:`SingleFlight` offers a context-manager-free low-level API (``begin`` ->
:class:`Flight`) for pipelines whose leader resolves later (a stream, after its last
chunk), and ``do``. Which callers share a flight is :func:`sync_scope`'s answer
(``llmclient/_synchronization.py``).
"""

from __future__ import annotations

import threading
from collections.abc import Hashable
from typing import Any, Generic, TypeVar

from ..._synchronization import Event, Work, sync_scope

__all__ = ["Flight", "SingleFlight"]

T = TypeVar("T")
_NO_RESULT: Any = object()


class Flight(Generic[T]):
    """One in-flight call. The leader must call exactly one of ``resolve``/``fail``."""

    def __init__(self, group: SingleFlight[T], key: Hashable, leader: bool, shared: _Shared) -> None:
        self._group, self.key, self.leader, self._shared = group, key, leader, shared

    def resolve(self, value: T) -> None:
        self._shared.value = value
        self._finish()

    def fail(self) -> None:
        self._finish()

    def _finish(self) -> None:
        if not self.leader:
            raise RuntimeError("only the leader of a flight resolves it")
        self._group._forget(self.key, self._shared)
        self._shared.done.set()

    def wait(self, timeout: float | None = None) -> tuple[bool, T | None]:
        """Waiters: (True, value) when the leader resolved in time, else (False, None). A waiter
        that gives up (a timeout, a cancellation) leaves the leader's flight as it is."""
        if not self._shared.done.wait(timeout):
            return False, None
        value = self._shared.value
        return (False, None) if value is _NO_RESULT else (True, value)


class _Shared:
    __slots__ = ("done", "value")

    def __init__(self) -> None:
        self.done = Event()
        self.value: Any = _NO_RESULT


class SingleFlight(Generic[T]):
    """Single-flight groups by key, safe to use from several threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._flights: dict[Hashable, _Shared] = {}

    def begin(self, key: str) -> Flight[T]:
        slot = sync_scope(key)
        with self._lock:
            shared = self._flights.get(slot)
            if shared is None:
                shared = self._flights[slot] = _Shared()
                return Flight(self, slot, True, shared)
        return Flight(self, slot, False, shared)

    def _forget(self, slot: Hashable, shared: _Shared) -> None:
        with self._lock:
            if self._flights.get(slot) is shared:
                del self._flights[slot]

    def in_flight(self) -> int:
        with self._lock:
            return len(self._flights)

    def do(self, key: str, fn: Work[T], timeout: float | None = None) -> tuple[T, bool]:
        """Run ``fn`` once for concurrent callers of ``key``: returns (result, joined)."""
        flight = self.begin(key)
        if not flight.leader:
            ok, value = flight.wait(timeout)
            if ok:
                return value, True  # type: ignore[return-value]
            return fn(), False
        try:
            result = fn()
        except BaseException:
            flight.fail()
            raise
        flight.resolve(result)
        return result, False
