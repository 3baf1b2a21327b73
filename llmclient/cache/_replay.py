"""Streams replayed from the cache: the same surface as the client's Stream/AsyncStream.

A replay yields every stored chunk at once, with no artificial delay: the point of a hit is
that the answer is already here. ``timings.cache`` says where it came from.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from types import TracebackType
from typing import Any, Generic, TypeVar

from ..wire.codec import has_token

__all__ = ["AsyncReplayStream", "ReplayStream"]

_T = TypeVar("_T")


class _ReplayBase(Generic[_T]):
    response = None  # no HTTP response: nothing was sent

    def __init__(self, call: Any, chunks: list[dict[str, Any]], make: Callable[[dict[str, Any]], _T]) -> None:
        self._call = call
        self._chunks = chunks
        self._make = make
        self._closed = False
        self.trace_id = call.trace.trace_id

    @property
    def timings(self) -> Any:
        return self._call.record

    def _items(self) -> Iterator[_T]:
        record = self._call.record
        for chunk in self._chunks:
            if self._closed:
                return
            if has_token(chunk):
                record.mark_first_token()  # idempotent: only the first content chunk counts
            yield self._make(chunk)
        record.finish()


class ReplayStream(_ReplayBase[_T]):
    def __iter__(self) -> Iterator[_T]:
        yield from self._items()

    def __next__(self) -> _T:
        it = self.__dict__.get("_iter")
        if it is None:
            it = self.__dict__["_iter"] = iter(self)
        return next(it)

    def close(self) -> None:
        self._closed = True

    def __enter__(self) -> ReplayStream[_T]:
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


class AsyncReplayStream(_ReplayBase[_T]):
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
