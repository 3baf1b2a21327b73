# Generated from llmclient/cache/_async/backends.py by scripts/unasync.py: do not edit here, edit that
# file and run `python scripts/unasync.py` (make lint checks that this file is current).
"""The Redis backend's reads and writes (``RedisBackend`` mixes these in; the rest of it, and
the other backends, are ``cache/_backends.py``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["RedisIO"]


class RedisIO:
    """``get``/``set``/``delete`` over ``_sync_client()``, the Redis client of this kind."""

    if TYPE_CHECKING:  # RedisBackend's own, used here
        def _sync_client(self) -> Any: ...
        def _k(self, key: str) -> str: ...
        @staticmethod
        def _px(ttl: float | None) -> int | None: ...

    def get(self, key: str) -> bytes | None:
        return self._sync_client().get(self._k(key))

    def set(self, key: str, value: bytes, ttl: float | None) -> None:
        self._sync_client().set(self._k(key), value, px=self._px(ttl))

    def delete(self, key: str) -> None:
        self._sync_client().delete(self._k(key))
