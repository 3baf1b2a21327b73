# Generated from llmclient/features/admit/_async/gate.py by scripts/unasync.py: do not edit here, edit that
# file and run `python scripts/unasync.py` (make lint checks that this file is current).
"""A call's wait for a concurrency slot at the gate (``Gate`` mixes this in; the limit, the
queue and the release are ``admit/gate.py``)."""

from __future__ import annotations

import threading
from collections import deque
from typing import TYPE_CHECKING, Any

from ...._errors import APITimeoutError
from ...._synchronization import Event

__all__ = ["GateIO"]


def _timed_out(base_url: str, timeout: float | None) -> APITimeoutError:
    return APITimeoutError(f"Request timed out waiting for a concurrency slot at {base_url} "
                           f"(adaptive limit; timeout {timeout:g} s; nothing was sent)")


class GateIO:
    base_url: str
    waited: int
    _lock: threading.Lock
    _waiters: deque[Any]

    if TYPE_CHECKING:  # Gate's own, used here
        def _take(self) -> bool: ...
        def _withdraw(self, waiter: Any) -> bool: ...
        def release(self, sample: float | None, answered: bool = False) -> None: ...

    def acquire(self, timeout: float | None) -> None:
        """Take a slot, waiting in line up to ``timeout`` seconds (None: as long as it takes);
        ``APITimeoutError`` when none came in time (the call was never sent)."""
        with self._lock:
            if self._take():
                return
            waiter = Event()
            self._waiters.append(waiter)
            self.waited += 1
        try:
            if waiter.wait(timeout):
                return
        except BaseException:  # cancelled or interrupted in line
            if not self._withdraw(waiter):
                self.release(None)  # a slot was handed over as it gave up: give it back
            raise
        if self._withdraw(waiter):
            raise _timed_out(self.base_url, timeout)
        # handed a slot just as the wait ended: keep it
