"""Streams replayed from the cache: the same surface as the client's Stream/AsyncStream.

A replay yields every stored chunk at once, with no artificial delay: the point of a hit is
that the answer is already here. ``timings.cache`` says where it came from. The replay is here;
the iteration of each kind is ``cache/_async/replay.py`` (``AsyncReplayStream``) and its
generated twin ``cache/_sync/replay.py`` (``ReplayStream``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

from ..wire.codec import has_token

__all__ = ["ReplayBase"]

_T = TypeVar("_T")


class ReplayBase(Generic[_T]):
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
