"""Single-flight: identical calls in flight at the same moment share one upstream request.

The first caller for a key becomes the *leader* and does the work; callers arriving while
it runs become *waiters*. When the leader resolves, waiters get its result. When the leader
fails (error, cancellation, a stream cut short), waiters are released with no result and go
upstream themselves, so one failure is never multiplied into many.

Threads use :class:`SingleFlight`; coroutines :class:`AsyncSingleFlight` (futures of the
running loop). Both offer a context-manager-free low-level API (``begin`` -> ``Flight``)
for pipelines whose leader resolves later (a stream, after its last chunk), and ``do``.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

__all__ = ["AsyncFlight", "AsyncSingleFlight", "Flight", "SingleFlight"]

T = TypeVar("T")
_NO_RESULT: Any = object()


class Flight(Generic[T]):
    """One in-flight call. The leader must call exactly one of ``resolve``/``fail``."""

    def __init__(self, group: SingleFlight[T], key: str, leader: bool, shared: _Shared[T]) -> None:
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
        """Waiters: (True, value) when the leader resolved in time, else (False, None)."""
        if not self._shared.done.wait(timeout):
            return False, None
        value = self._shared.value
        return (False, None) if value is _NO_RESULT else (True, value)


class _Shared(Generic[T]):
    def __init__(self) -> None:
        self.done = threading.Event()
        self.value: Any = _NO_RESULT


class SingleFlight(Generic[T]):
    """Thread-safe single-flight groups by key."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._flights: dict[str, _Shared[T]] = {}

    def begin(self, key: str) -> Flight[T]:
        with self._lock:
            shared = self._flights.get(key)
            if shared is None:
                shared = self._flights[key] = _Shared()
                return Flight(self, key, True, shared)
        return Flight(self, key, False, shared)

    def _forget(self, key: str, shared: _Shared[T]) -> None:
        with self._lock:
            if self._flights.get(key) is shared:
                del self._flights[key]

    def in_flight(self) -> int:
        with self._lock:
            return len(self._flights)

    def do(self, key: str, fn: Callable[[], T], timeout: float | None = None) -> tuple[T, bool]:
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


class AsyncFlight(Generic[T]):
    def __init__(self, group: AsyncSingleFlight[T], key: Any, leader: bool, future: asyncio.Future[Any]) -> None:
        self._group, self.key, self.leader, self._future = group, key, leader, future

    def resolve(self, value: T) -> None:
        self._finish(value)

    def fail(self) -> None:
        self._finish(_NO_RESULT)

    def _finish(self, value: Any) -> None:
        if not self.leader:
            raise RuntimeError("only the leader of a flight resolves it")
        self._group._forget(self.key, self._future)
        if not self._future.done():
            self._future.set_result(value)

    async def wait(self, timeout: float | None = None) -> tuple[bool, T | None]:
        try:
            # shield: a waiter that times out or is cancelled must not cancel the leader's future.
            value = await asyncio.wait_for(asyncio.shield(self._future), timeout)
        except asyncio.TimeoutError:
            return False, None
        return (False, None) if value is _NO_RESULT else (True, value)


class AsyncSingleFlight(Generic[T]):
    """Single-flight for coroutines; groups are per event loop (futures belong to one loop)."""

    def __init__(self) -> None:
        self._flights: dict[Any, asyncio.Future[Any]] = {}

    def begin(self, key: str) -> AsyncFlight[T]:
        loop = asyncio.get_running_loop()
        slot = (id(loop), key)
        future = self._flights.get(slot)
        if future is None or future.done():
            future = self._flights[slot] = loop.create_future()
            return AsyncFlight(self, slot, True, future)
        return AsyncFlight(self, slot, False, future)

    def _forget(self, slot: Any, future: asyncio.Future[Any]) -> None:
        if self._flights.get(slot) is future:
            del self._flights[slot]

    def in_flight(self) -> int:
        return len(self._flights)

    async def do(self, key: str, fn: Callable[[], Awaitable[T]], timeout: float | None = None) -> tuple[T, bool]:
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
