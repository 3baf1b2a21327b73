# Generated from llmclient/features/_async/hedge.py by scripts/unasync.py: do not edit here, edit that
# file and run `python scripts/unasync.py` (make lint checks that this file is current).
"""A retry's wait that a cancelled call leaves at once (``CancelToken`` mixes this in; the
token itself is ``features/hedge.py``)."""

from __future__ import annotations

import threading
from typing import Any

from ..._synchronization import Event

__all__ = ["CancelTokenIO"]


class CancelTokenIO:
    __slots__ = ()

    _lock: threading.Lock
    _exc: Exception | None
    _event: Any

    def sleep(self, seconds: float) -> None:
        """A retry's wait that ends early, raising, when the call is cancelled meanwhile."""
        with self._lock:
            if self._event is None:
                self._event = Event()
            event = self._event
            if self._exc is not None:
                raise self._exc
        if event.wait(seconds) and self._exc is not None:
            raise self._exc
