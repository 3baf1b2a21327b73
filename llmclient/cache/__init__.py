"""Response cache for llmclient: memory, SQLite and Redis backends behind one small interface.

Use through the client (``OpenAI(cache="sqlite:///~/.cache/llm.db")``, per call
``create(..., cache=False | True | CacheOptions(ttl=60, namespace="v2", refresh=True))``) or
standalone with :class:`ResponseCache`. Keys: :func:`cache_key`; policy: :func:`cache_policy`.
"""

from ._async.replay import AsyncReplayStream
from ._async.singleflight import AsyncFlight, AsyncSingleFlight
from ._backends import (
    AsyncBackend,
    Backend,
    BaseBackend,
    MemoryBackend,
    RedisBackend,
    SQLiteBackend,
    open_backend,
)
from ._cache import CacheHandle, CachePlan, ResponseCache, open_cache
from ._entry import (
    ENTRY_VERSION,
    CachedEntry,
    EntryError,
    decode_entry,
    encode_entry,
    merge_chunks,
    replay_chunks,
    replay_response,
    stream_finished,
)
from ._key import ENDPOINTS, KEY_PREFIX, cache_key, endpoint_for, scope_hash
from ._policy import CacheOptions, CacheSetting, Decision, cache_policy, normalize_options
from ._stats import CacheStats
from ._sync.replay import ReplayStream
from ._sync.singleflight import Flight, SingleFlight

__all__ = [
    "ENDPOINTS",
    "ENTRY_VERSION",
    "KEY_PREFIX",
    "AsyncBackend",
    "AsyncFlight",
    "AsyncReplayStream",
    "AsyncSingleFlight",
    "Backend",
    "BaseBackend",
    "CacheHandle",
    "CacheOptions",
    "CachePlan",
    "CacheSetting",
    "CacheStats",
    "CachedEntry",
    "Decision",
    "EntryError",
    "Flight",
    "MemoryBackend",
    "RedisBackend",
    "ReplayStream",
    "ResponseCache",
    "SQLiteBackend",
    "SingleFlight",
    "cache_key",
    "cache_policy",
    "decode_entry",
    "encode_entry",
    "endpoint_for",
    "merge_chunks",
    "normalize_options",
    "open_backend",
    "open_cache",
    "replay_chunks",
    "replay_response",
    "scope_hash",
    "stream_finished",
]
