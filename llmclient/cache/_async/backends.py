"""The Redis backend's reads and writes (``RedisBackend`` mixes these in; the rest of it, and
the other backends, are ``cache/_backends.py``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["AsyncRedisIO"]


class AsyncRedisIO:
    """``aget``/``aset``/``adelete`` over ``_async_client()``, the Redis client of this kind."""

    if TYPE_CHECKING:  # RedisBackend's own, used here
        def _async_client(self) -> Any: ...
        def _k(self, key: str) -> str: ...
        @staticmethod
        def _px(ttl: float | None) -> int | None: ...

    async def aget(self, key: str) -> bytes | None:
        return await self._async_client().get(self._k(key))

    async def aset(self, key: str, value: bytes, ttl: float | None) -> None:
        await self._async_client().set(self._k(key), value, px=self._px(ttl))

    async def adelete(self, key: str) -> None:
        await self._async_client().delete(self._k(key))
