"""The response cache's I/O: read, write, and the client's entry point (look up, then lead or
join an identical call in flight). The decisions (plan, key, policy, entries) are the pure
parts of ``llmclient.cache``; ``ResponseCache`` and ``CacheHandle`` mix these in."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from .._entry import CachedEntry, encode_entry
from .._signing import sign
from .replay import AsyncReplayStream

if TYPE_CHECKING:
    from .._backends import AsyncBackendView  # unasync: sync=from .._backends import Backend
    from .._cache import CacheHandle, CachePlan
    from .singleflight import AsyncSingleFlight

__all__ = ["AsyncCacheHandleIO", "AsyncCacheIO"]


class AsyncCacheIO:
    """``ResponseCache``'s reads, writes and the client's entry point, ``abegin``."""

    abackend: AsyncBackendView  # unasync: sync=backend: Backend
    default_ttl: float | None
    _signing_key: bytes | None
    aflights: AsyncSingleFlight[CachedEntry]

    if TYPE_CHECKING:  # ResponseCache's own, used here
        def _usable(self) -> bool: ...
        def _backend_failed(self, op: str, key: str, exc: BaseException) -> None: ...
        def _backend_ok(self) -> None: ...
        def _decode(self, key: str, data: bytes | None) -> CachedEntry | None: ...
        def _stored(self, data: bytes) -> None: ...
        def _handle(self, call: Any, plan: CachePlan) -> CacheHandle: ...
        def plan(self, call: Any) -> CachePlan | None: ...
        def note_join(self) -> None: ...
        @staticmethod
        def entry_for_response(plan: CachePlan, response: Mapping[str, Any]) -> CachedEntry | None: ...
        @staticmethod
        def entry_for_stream(plan: CachePlan, chunks: Iterable[Mapping[str, Any]]) -> CachedEntry | None: ...

    # -- reads ---------------------------------------------------------------------------

    async def aget(self, key: str) -> CachedEntry | None:
        data = None
        if self._usable():
            try:
                data = await self.abackend.get(key)
            except Exception as exc:
                self._backend_failed("get", key, exc)
            else:
                self._backend_ok()
        return self._decode(key, data)

    async def alookup(self, plan: CachePlan | None) -> CachedEntry | None:
        return await self.aget(plan.key) if plan is not None and plan.read else None

    # -- writes --------------------------------------------------------------------------

    async def aput(self, key: str, entry: CachedEntry, ttl: float | None = None) -> bool:
        if not self._usable():
            return False
        data = sign(self._signing_key, key, encode_entry(entry))
        try:
            await self.abackend.set(key, data, ttl if ttl is not None else self.default_ttl)
        except Exception as exc:
            self._backend_failed("set", key, exc)
            return False
        self._backend_ok()
        self._stored(data)
        return True

    async def astore_response(self, plan: CachePlan, response: Mapping[str, Any]) -> CachedEntry | None:
        entry = self.entry_for_response(plan, response)
        return entry if entry is not None and await self.aput(plan.key, entry, plan.ttl) else None

    async def astore_stream(self, plan: CachePlan, chunks: Iterable[Mapping[str, Any]]) -> CachedEntry | None:
        entry = self.entry_for_stream(plan, chunks)
        return entry if entry is not None and await self.aput(plan.key, entry, plan.ttl) else None

    # -- the client's entry point --------------------------------------------------------

    async def abegin(self, call: Any) -> CacheHandle | None:
        """Plan, look up and (for non-stream calls) join or lead; sets ``call.record.cache``."""
        _start_clock(call)
        plan = self.plan(call)
        if plan is None:
            return None
        handle = self._handle(call, plan)
        handle.entry = await self.alookup(plan)
        if handle.entry is not None:
            call.record.cache = "hit"
            handle._owned = True
            return handle
        call.record.cache = "miss"
        if not plan.stream:
            flight = self.aflights.begin(plan.key)
            if flight.leader:
                handle._flight = flight
            else:
                ok, entry = await flight.wait(_wait_timeout(call))
                if ok and entry is not None:
                    self.note_join()
                    handle.entry, call.record.cache = entry, "join"
        return handle

    async def aclose(self) -> None:
        close = getattr(self.abackend, "close", None)  # a backend of one's own may have none
        if close is not None:
            await close()


class AsyncCacheHandleIO:
    """``CacheHandle``'s replay and store."""

    call: Any
    plan: CachePlan
    cache: Any

    if TYPE_CHECKING:
        def chunks(self) -> list[dict[str, Any]]: ...
        def _resolve(self, entry: CachedEntry | None) -> None: ...

    def areplay_stream(self, make: Any) -> AsyncReplayStream[Any]:
        return AsyncReplayStream(self.call, self.chunks(), make)

    async def astore_response(self, value: Mapping[str, Any]) -> None:
        self._resolve(await self.cache.astore_response(self.plan, value))


def _start_clock(call: Any) -> None:
    # A hit never reaches the transport (which starts the call's clock on send), so the
    # lookup starts it; a miss restarts it at send time.
    start = getattr(call.record, "start", None)
    if start is not None:
        start()


def _wait_timeout(call: Any) -> float | None:
    # A waiter gives up on the leader after the call's own read timeout and goes upstream.
    timeout = getattr(call, "timeout", None)
    return getattr(timeout, "read", None) if timeout is not None else None
