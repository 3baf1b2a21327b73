"""A retry's wait that a cancelled call leaves at once (``CancelToken`` mixes this in; the
token itself is ``features/hedge.py``)."""

from __future__ import annotations

import threading
from typing import Any

from ..._synchronization import AsyncEvent

__all__ = ["AsyncCancelTokenIO"]


class AsyncCancelTokenIO:
    __slots__ = ()

    _lock: threading.Lock
    _exc: Exception | None
    _event: Any

    async def asleep(self, seconds: float) -> None:
        """A retry's wait that ends early, raising, when the call is cancelled meanwhile."""
        with self._lock:
            if self._event is None:
                self._event = AsyncEvent()
            event = self._event
            if self._exc is not None:
                raise self._exc
        if await event.wait(seconds) and self._exc is not None:
            raise self._exc
