# Generated from llmclient/cache/_async/replay.py by scripts/unasync.py: do not edit here, edit that
# file and run `python scripts/unasync.py` (make lint checks that this file is current).
"""A stream replayed from the cache, with the same surface as the client's Stream (the
replay itself, shared with the sync twin, is ``cache/_replay.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from types import TracebackType
from typing import TypeVar

from .._replay import ReplayBase

__all__ = ["ReplayStream"]

_T = TypeVar("_T")


class ReplayStream(ReplayBase[_T]):
    def __iter__(self) -> Iterator[_T]:
        for item in self._items():
            yield item

    def __next__(self) -> _T:
        it = self.__dict__.get("_iter")
        if it is None:
            it = self.__dict__["_iter"] = self.__iter__()
        return it.__next__()

    def close(self) -> None:
        self._closed = True

    def __enter__(self) -> ReplayStream[_T]:
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.close()
