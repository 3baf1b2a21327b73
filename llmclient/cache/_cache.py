"""ResponseCache: the layer the client drives (plan -> lookup -> store), with single-flight.

Every backend failure and every unreadable entry becomes a logged, counted miss: a cache
must never turn a working call into a failing one. A backend that failed (a file that is not
a database, Redis down, a permission error) is skipped for ``retry_after_s`` before it is
tried again, so an outage costs one failed operation per interval, not one per call; the
skipped operations are counted (``unavailable``), ``stats()["last_error"]`` says why.
With a signing key (``signing_key=`` or ``$LLMCLIENT_CACHE_KEY``, see ``_signing``), an entry
without a valid MAC is refused (``rejected``) and answered as a miss.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from .._logging import get_logger
from .._redact import redact_text
from ._async.cache import AsyncCacheHandleIO, AsyncCacheIO
from ._async.singleflight import AsyncFlight, AsyncSingleFlight
from ._backends import AsyncBackendView, Backend, open_backend
from ._entry import (
    CachedEntry,
    EntryError,
    decode_entry,
    replay_chunks,
    replay_response,
    stream_finished,
)
from ._key import cache_key, endpoint_for, validate_namespace
from ._policy import Decision, cache_policy
from ._signing import SignatureError, resolve_signing_key, unsign
from ._stats import CacheStats
from ._sync.cache import CacheHandleIO, CacheIO
from ._sync.singleflight import Flight, SingleFlight

__all__ = ["CacheHandle", "CachePlan", "ResponseCache", "open_cache"]

# How long a backend that failed is left alone before the next try.
DEFAULT_RETRY_AFTER_S = 10.0

logger = get_logger("llmclient.cache")


class CachePlan(NamedTuple):
    """What the cache does for one call, decided before anything is sent (hot path: a tuple)."""

    key: str
    endpoint: str
    read: bool  # False for refresh: skip the read, still store
    ttl: float | None
    stream: bool
    include_usage: bool
    decision: Decision


class ResponseCache(CacheIO, AsyncCacheIO):
    """A response cache over one backend.

    ``ResponseCache("memory" | "sqlite:///path" | "redis://..." | backend, ttl=None,
    namespace=None, signing_key=None, retry_after_s=10)``. ``ttl`` is the default lifetime in
    seconds (None: until evicted); ``namespace`` is the default key space, overridable per
    call with CacheOptions; ``signing_key`` (str or bytes, >= 16 bytes; default
    ``$LLMCLIENT_CACHE_KEY``) signs every entry and refuses entries not signed with it: use
    one per deployment on a shared Redis or SQLite; ``retry_after_s`` is how long a failed
    backend is skipped.
    """

    def __init__(self, backend: str | Backend | None = "memory", *, ttl: float | None = None,
                 namespace: str | None = None, signing_key: str | bytes | None = None,
                 retry_after_s: float = DEFAULT_RETRY_AFTER_S) -> None:
        if ttl is not None and not ttl > 0:
            raise ValueError(f"ResponseCache ttl must be positive seconds or None, got {ttl!r}")
        if not retry_after_s >= 0:
            raise ValueError(f"ResponseCache retry_after_s must be >= 0 seconds, got {retry_after_s!r}")
        self.backend: Any = open_backend(backend)
        self.abackend = AsyncBackendView(self.backend)
        self.default_ttl = ttl
        self.namespace = validate_namespace(namespace) if namespace else None
        self._signing_key = resolve_signing_key(signing_key)
        self._retry_after_s = retry_after_s
        self._down_until = 0.0  # monotonic time before which the backend is not asked
        self._last_error: str | None = None
        self._health_lock = threading.Lock()
        stats = getattr(self.backend, "stats", None)
        self._stats: CacheStats = stats if isinstance(stats, CacheStats) else CacheStats()
        self.flights: SingleFlight[CachedEntry] = SingleFlight()
        self.aflights: AsyncSingleFlight[CachedEntry] = AsyncSingleFlight()

    # -- decisions (pure) ----------------------------------------------------------------

    def plan_for(self, *, base_url: str, path: str, body: Mapping[str, Any] | None, scope: str,
                 options: Any = None, stream: bool | None = None,
                 query: Mapping[str, Any] | None = None) -> CachePlan | None:
        """The plan for one request, or None when the cache is bypassed."""
        endpoint = endpoint_for(path)
        if endpoint is None or body is None:
            return None
        decision = cache_policy(body, options, endpoint)
        if not decision.write:
            return None
        key = cache_key(base_url=base_url, path=path, body=body, scope=scope,
                        namespace=decision.namespace or self.namespace, query=query)
        is_stream = bool(body.get("stream")) if stream is None else stream
        stream_options = body.get("stream_options") or {}
        return CachePlan(
            key=key,
            endpoint=endpoint,
            read=decision.read,
            ttl=decision.ttl if decision.ttl is not None else self.default_ttl,
            stream=is_stream,
            include_usage=bool(stream_options.get("include_usage")),
            decision=decision,
        )

    def plan(self, call: Any) -> CachePlan | None:
        """The plan for an ``llmclient.pipeline.call.Call``."""
        return self.plan_for(base_url=call.base_url, path=call.path, body=call.body,
                             scope=call.scope, options=call.options.cache, stream=call.stream,
                             query=call.query)

    def key_for(self, call: Any = None, **request: Any) -> str | None:
        """The key for a Call (or for ``base_url=, path=, body=, scope=, options=``), or None."""
        plan = self.plan(call) if call is not None else self.plan_for(**request)
        return plan.key if plan is not None else None

    # -- reads ---------------------------------------------------------------------------

    @property
    def signed(self) -> bool:
        """True when entries are signed and unsigned ones refused."""
        return self._signing_key is not None

    def _decode(self, key: str, data: bytes | None) -> CachedEntry | None:
        if data is None:
            self._stats.add("misses")
            return None
        try:
            entry = decode_entry(unsign(self._signing_key, key, data))
        except SignatureError as exc:
            # Not ours: forged, or written by a deployment with another key. Left in place
            # (it may be theirs); this call goes upstream and its answer overwrites it.
            logger.warning("llmclient.cache: entry %s refused, treated as a miss: %s", key, exc)
            self._stats.add("rejected")
            self._stats.add("misses")
            return None
        except EntryError as exc:
            logger.warning("llmclient.cache: unreadable entry %s treated as a miss: %s", key, exc)
            self._stats.add("errors")
            self._stats.add("misses")
            self._forget(key)
            return None
        self._stats.add("hits")
        return entry

    def _usable(self) -> bool:
        """Whether to ask the backend now (False for a while after it failed; counted)."""
        if self._down_until and time.monotonic() < self._down_until:
            self._stats.add("unavailable")
            return False
        return True

    def _backend_failed(self, op: str, key: str, exc: BaseException) -> None:
        name = getattr(self.backend, "name", type(self.backend).__name__)
        error = redact_text(f"{op} on {name} failed: {type(exc).__name__}: {exc}")
        with self._health_lock:
            self._last_error = error
            self._down_until = time.monotonic() + self._retry_after_s
        logger.warning("llmclient.cache: %s (key %s); calls go upstream, the backend is tried "
                       "again in %.0f s", error, key, self._retry_after_s)
        self._stats.add("errors")

    def _backend_ok(self) -> None:
        if self._down_until:
            with self._health_lock:
                self._down_until = 0.0

    def _stored(self, data: bytes) -> None:
        self._stats.add("stores")
        self._stats.add("bytes", len(data))

    def _handle(self, call: Any, plan: CachePlan) -> CacheHandle:
        return CacheHandle(self, call, plan)

    def _forget(self, key: str) -> None:
        if not self._usable():
            return
        try:
            self.backend.delete(key)
        except Exception as exc:
            self._backend_failed("delete", key, exc)

    # -- writes --------------------------------------------------------------------------

    @staticmethod
    def entry_for_response(plan: CachePlan, response: Mapping[str, Any]) -> CachedEntry | None:
        """An entry for a complete non-stream answer; None for an error body."""
        if plan.endpoint == "responses":  # its JSON always has "error": null
            if response.get("error") is not None or response.get("status") != "completed":
                return None
        elif plan.endpoint == "messages":  # Anthropic: a whole Message that came to its end
            if response.get("type") != "message" or not response.get("stop_reason"):
                return None
        elif "error" in response or (plan.endpoint != "embeddings" and not response.get("choices")):
            return None
        return CachedEntry.from_response(plan.endpoint, response)

    @staticmethod
    def entry_for_stream(plan: CachePlan, chunks: Iterable[Mapping[str, Any]]) -> CachedEntry | None:
        """An entry for a stream that finished with a finish_reason; None if cut or cancelled."""
        collected = [dict(c) for c in chunks]
        if not stream_finished(collected):
            return None
        return CachedEntry.from_chunks(plan.endpoint, collected)

    # -- housekeeping --------------------------------------------------------------------

    def note_join(self) -> None:
        """Count a call answered by joining an identical in-flight call."""
        self._stats.add("joins")

    def stats(self) -> dict[str, Any]:
        """Counters for this cache's backend: hits, misses, stores, bytes, evictions, errors
        (backend failures and unreadable entries), rejected (entries without a valid
        signature), unavailable (operations skipped while a failed backend rests), joins; and
        ``signed``, ``last_error`` (the latest backend failure, or None)."""
        return {"backend": getattr(self.backend, "name", type(self.backend).__name__),
                **self._stats.snapshot(), "signed": self.signed, "last_error": self._last_error}

    def clear(self) -> None:
        self.backend.clear()

def open_cache(setting: Any) -> ResponseCache | None:
    """The client's ``cache=`` argument as a ResponseCache: None/False -> no cache,
    True -> in memory, a spec string or backend -> a ResponseCache over it."""
    if setting is None or setting is False:
        return None
    if isinstance(setting, ResponseCache):
        return setting
    return ResponseCache("memory" if setting is True else setting)


class CacheHandle(CacheHandleIO, AsyncCacheHandleIO):
    """One call's journey through the cache, as the client drives it.

    ``ResponseCache.begin(call)`` looks up (hit), joins an identical in-flight call (join) or
    makes this call the leader (miss); the client then either replays ``entry`` or sends the
    request and calls ``store_response``/``on_stream_complete``; ``release()`` in a
    ``finally`` frees waiters if the leader never stored (error, cancellation).
    Streamed calls neither lead nor join: a waiter would have to wait for the whole stream.
    """

    def __init__(self, cache: ResponseCache, call: Any, plan: CachePlan) -> None:
        self.cache, self.call, self.plan = cache, call, plan
        self.entry: CachedEntry | None = None
        self._owned = False  # True when entry was decoded for this call (not shared)
        self._flight: Flight[CachedEntry] | AsyncFlight[CachedEntry] | None = None

    # the hit path
    def response(self) -> dict[str, Any]:
        """The answer for a non-stream call; stamps the call's total time (lookup + replay)."""
        entry = self.entry
        assert entry is not None
        if self._owned and entry.response is not None:
            # Decoded from bytes for this call alone: no copy needed (the caller may mutate it).
            self._owned = False
            value = entry.response
        else:
            value = replay_response(entry)
        finish = getattr(self.call.record, "finish", None)
        if finish is not None:
            finish()
        return value

    def chunks(self) -> list[dict[str, Any]]:
        assert self.entry is not None
        return replay_chunks(self.entry, self.plan.include_usage)

    def on_stream_complete(self, call: Any, chunks: list[dict[str, Any]]) -> None:
        """``Stream(on_complete=...)`` callback: store a stream that ended with a finish_reason.

        Runs synchronously for AsyncStream too (the callback is sync); for Redis that is one
        loopback round trip after the last chunk.
        """
        self.cache.store_stream(self.plan, chunks)

    def _resolve(self, entry: CachedEntry | None) -> None:
        flight, self._flight = self._flight, None
        if flight is not None:
            if entry is not None:
                flight.resolve(entry)
            else:
                flight.fail()

    def release(self) -> None:
        """Free waiters if this leader did not store (call in a ``finally``)."""
        self._resolve(None)
