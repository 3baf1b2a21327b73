# Generated from llmclient/features/_async/held_body.py by scripts/unasync.py: do not edit here, edit that
# file and run `python scripts/unasync.py` (make lint checks that this file is current).
"""A held body's iteration and close (``HeldBody`` mixes these in, for both kinds of transport
stream; what it holds and gives back is ``features/held_body.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import httpx

__all__ = ["HeldBodyIO"]


class HeldBodyIO:
    _inner: Any
    _failure: str | None

    if TYPE_CHECKING:  # HeldBody's own, used here
        def _release(self) -> None: ...

    def __iter__(self) -> Iterator[bytes]:
        try:
            for piece in self._inner:
                yield piece
        except httpx.TransportError as exc:  # cut mid-body
            self._failure = f"{type(exc).__name__}: {exc}"
            raise

    def close(self) -> None:
        try:
            self._inner.close()
        finally:
            self._release()
