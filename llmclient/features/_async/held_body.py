"""A held body's iteration and close (``HeldBody`` mixes these in, for both kinds of transport
stream; what it holds and gives back is ``features/held_body.py``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import httpx

__all__ = ["AsyncHeldBodyIO"]


class AsyncHeldBodyIO:
    _inner: Any
    _failure: str | None

    if TYPE_CHECKING:  # HeldBody's own, used here
        def _release(self) -> None: ...

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for piece in self._inner:
                yield piece
        except httpx.TransportError as exc:  # cut mid-body
            self._failure = f"{type(exc).__name__}: {exc}"
            raise

    async def aclose(self) -> None:
        try:
            await self._inner.aclose()
        finally:
            self._release()
