"""A stream replayed from the cache, with the same surface as the client's AsyncStream (the
replay itself, shared with the sync twin, is ``cache/_replay.py``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from types import TracebackType
from typing import TypeVar

from .._replay import ReplayBase

__all__ = ["AsyncReplayStream"]

_T = TypeVar("_T")


class AsyncReplayStream(ReplayBase[_T]):
    async def __aiter__(self) -> AsyncIterator[_T]:
        for item in self._items():
            yield item

    async def __anext__(self) -> _T:
        it = self.__dict__.get("_aiter")
        if it is None:
            it = self.__dict__["_aiter"] = self.__aiter__()
        return await it.__anext__()

    async def close(self) -> None:
        self._closed = True

    async def __aenter__(self) -> AsyncReplayStream[_T]:
        return self

    async def __aexit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        await self.close()
