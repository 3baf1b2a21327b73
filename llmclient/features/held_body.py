"""A response body that holds something (a concurrency slot, a replica's in-flight count) and
gives it back exactly once: when the body is closed, or when it is collected unclosed.

The admit gate and the router each wrap a response's stream in one; what they give back, and
what they do with a transport failure seen mid-body, is their ``_give_back``. Every other
attribute is the transport stream's (``read_until``, byte counts), so the pipeline reads the
wrapped body as it would the bare one.
"""

from __future__ import annotations

from typing import Any

import httpx

from ._async.held_body import AsyncHeldBodyIO
from ._sync.held_body import HeldBodyIO

__all__ = ["HeldBody"]


class HeldBody(HeldBodyIO, AsyncHeldBodyIO, httpx.SyncByteStream, httpx.AsyncByteStream):
    """Wraps ``inner``; calls :meth:`_give_back` once, with the transport failure that cut the
    body mid-iteration (``"ReadError: ..."``) or None. Its iteration and close, of either kind,
    are ``_async/held_body.py`` and the generated sync twin."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self._failure: str | None = None
        self._held = True

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__dict__["_inner"], name)

    def _release(self) -> None:
        if self.__dict__.get("_held"):
            self._held = False
            self._give_back(self._failure)

    def _give_back(self, failure: str | None) -> None:
        raise NotImplementedError

    def __del__(self) -> None:
        # A body dropped without being closed still gives back what it held once collected.
        try:
            self._release()
        except Exception:  # at interpreter exit, or a loop already closed
            pass
