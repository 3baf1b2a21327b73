"""Single-flight: identical calls in flight at the same moment share one upstream request.

The first caller for a key becomes the *leader* and does the work; callers arriving while
it runs become *waiters*. When the leader resolves, waiters get its result. When the leader
fails (error, cancellation, a stream cut short), waiters are released with no result and go
upstream themselves, so one failure is never multiplied into many.

:class:`AsyncSingleFlight` offers a context-manager-free low-level API (``begin`` ->
:class:`AsyncFlight`) for pipelines whose leader resolves later (a stream, after its last
chunk), and ``do``. Which callers share a flight is :func:`async_scope`'s answer
(``llmclient/_synchronization.py``).
"""

from __future__ import annotations

import threading
from collections.abc import Hashable
from typing import Any, Generic, TypeVar

from ..._synchronization import AsyncEvent, AsyncWork, async_scope

__all__ = ["AsyncFlight", "AsyncSingleFlight"]

T = TypeVar("T")
_NO_RESULT: Any = object()


class AsyncFlight(Generic[T]):
    """One in-flight call. The leader must call exactly one of ``resolve``/``fail``."""

    def __init__(self, group: AsyncSingleFlight[T], key: Hashable, leader: bool, shared: _Shared) -> None:
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

    async def wait(self, timeout: float | None = None) -> tuple[bool, T | None]:
        """Waiters: (True, value) when the leader resolved in time, else (False, None). A waiter
        that gives up (a timeout, a cancellation) leaves the leader's flight as it is."""
        if not await self._shared.done.wait(timeout):
            return False, None
        value = self._shared.value
        return (False, None) if value is _NO_RESULT else (True, value)


class _Shared:
    __slots__ = ("done", "value")

    def __init__(self) -> None:
        self.done = AsyncEvent()
        self.value: Any = _NO_RESULT


class AsyncSingleFlight(Generic[T]):
    """Single-flight groups by key, safe to use from several threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._flights: dict[Hashable, _Shared] = {}

    def begin(self, key: str) -> AsyncFlight[T]:
        slot = async_scope(key)
        with self._lock:
            shared = self._flights.get(slot)
            if shared is None:
                shared = self._flights[slot] = _Shared()
                return AsyncFlight(self, slot, True, shared)
        return AsyncFlight(self, slot, False, shared)

    def _forget(self, slot: Hashable, shared: _Shared) -> None:
        with self._lock:
            if self._flights.get(slot) is shared:
                del self._flights[slot]

    def in_flight(self) -> int:
        with self._lock:
            return len(self._flights)

    async def do(self, key: str, fn: AsyncWork[T], timeout: float | None = None) -> tuple[T, bool]:
        """Run ``fn`` once for concurrent callers of ``key``: returns (result, joined)."""
        flight = self.begin(key)
        if not flight.leader:
            ok, value = await flight.wait(timeout)
            if ok:
                return value, True  # type: ignore[return-value]
            return await fn(), False
        try:
            result = await fn()
        except BaseException:
            flight.fail()
            raise
        flight.resolve(result)
        return result, False
