# Generated from llmclient/cache/_async/cache.py by scripts/unasync.py: do not edit here, edit that
# file and run `python scripts/unasync.py` (make lint checks that this file is current).
"""The response cache's I/O: read, write, and the client's entry point (look up, then lead or
join an identical call in flight). The decisions (plan, key, policy, entries) are the pure
parts of ``llmclient.cache``; ``ResponseCache`` and ``CacheHandle`` mix these in."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from .._entry import CachedEntry, encode_entry
from .._signing import sign
from .replay import ReplayStream

if TYPE_CHECKING:
    from .._backends import Backend
    from .._cache import CacheHandle, CachePlan
    from .singleflight import SingleFlight

__all__ = ["CacheHandleIO", "CacheIO"]


class CacheIO:
    """``ResponseCache``'s reads, writes and the client's entry point, ``begin``."""

    backend: Backend
    default_ttl: float | None
    _signing_key: bytes | None
    flights: SingleFlight[CachedEntry]

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

    def get(self, key: str) -> CachedEntry | None:
        data = None
        if self._usable():
            try:
                data = self.backend.get(key)
            except Exception as exc:
                self._backend_failed("get", key, exc)
            else:
                self._backend_ok()
        return self._decode(key, data)

    def lookup(self, plan: CachePlan | None) -> CachedEntry | None:
        return self.get(plan.key) if plan is not None and plan.read else None

    # -- writes --------------------------------------------------------------------------

    def put(self, key: str, entry: CachedEntry, ttl: float | None = None) -> bool:
        if not self._usable():
            return False
        data = sign(self._signing_key, key, encode_entry(entry))
        try:
            self.backend.set(key, data, ttl if ttl is not None else self.default_ttl)
        except Exception as exc:
            self._backend_failed("set", key, exc)
            return False
        self._backend_ok()
        self._stored(data)
        return True

    def store_response(self, plan: CachePlan, response: Mapping[str, Any]) -> CachedEntry | None:
        entry = self.entry_for_response(plan, response)
        return entry if entry is not None and self.put(plan.key, entry, plan.ttl) else None

    def store_stream(self, plan: CachePlan, chunks: Iterable[Mapping[str, Any]]) -> CachedEntry | None:
        entry = self.entry_for_stream(plan, chunks)
        return entry if entry is not None and self.put(plan.key, entry, plan.ttl) else None

    # -- the client's entry point --------------------------------------------------------

    def begin(self, call: Any) -> CacheHandle | None:
        """Plan, look up and (for non-stream calls) join or lead; sets ``call.record.cache``."""
        _start_clock(call)
        plan = self.plan(call)
        if plan is None:
            return None
        handle = self._handle(call, plan)
        handle.entry = self.lookup(plan)
        if handle.entry is not None:
            call.record.cache = "hit"
            handle._owned = True
            return handle
        call.record.cache = "miss"
        if not plan.stream:
            flight = self.flights.begin(plan.key)
            if flight.leader:
                handle._flight = flight
            else:
                ok, entry = flight.wait(_wait_timeout(call))
                if ok and entry is not None:
                    self.note_join()
                    handle.entry, call.record.cache = entry, "join"
        return handle

    def close(self) -> None:
        close = getattr(self.backend, "close", None)  # a backend of one's own may have none
        if close is not None:
            close()


class CacheHandleIO:
    """``CacheHandle``'s replay and store."""

    call: Any
    plan: CachePlan
    cache: Any

    if TYPE_CHECKING:
        def chunks(self) -> list[dict[str, Any]]: ...
        def _resolve(self, entry: CachedEntry | None) -> None: ...

    def replay_stream(self, make: Any) -> ReplayStream[Any]:
        return ReplayStream(self.call, self.chunks(), make)

    def store_response(self, value: Mapping[str, Any]) -> None:
        self._resolve(self.cache.store_response(self.plan, value))


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
