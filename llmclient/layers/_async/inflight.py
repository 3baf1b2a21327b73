"""How many of this client's attempts to an origin await their answer, for the timings: each
attempt's record says how many were in flight to its origin when it was sent, itself included
(``timings.in_flight``), so a slow call can be told from a call that queued behind the client's
own others. An attempt counts from when it is handed to the transport until its answer's headers
(or its failure). Always in the chain; its count per origin is the client's
(``ctx.own("inflight", ...)``), shared by the chains of every option set.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx

    from ...pipeline.call import Call
    from ..context import Context
    from ..options import CallOptions

__all__ = ["InFlight", "Layer", "wanted"]


def wanted(ctx: Context, options: CallOptions) -> bool:
    return True


class _Counts:
    """Attempts in flight per origin (a sync client's calls run on many threads)."""

    __slots__ = ("by_origin", "lock")

    def __init__(self) -> None:
        self.by_origin: dict[str, int] = {}
        self.lock = threading.Lock()


class InFlight:
    __slots__ = ("_counts", "_inner")

    def __init__(self, inner: Any, ctx: Context) -> None:
        self._inner = inner
        self._counts: _Counts = ctx.own("inflight", _Counts)

    async def __call__(self, call: Call) -> httpx.Response:
        counts, origin = self._counts, call.base_url
        with counts.lock:
            n = counts.by_origin[origin] = counts.by_origin.get(origin, 0) + 1
        call.record.in_flight = n
        try:
            return await self._inner(call)
        finally:
            with counts.lock:
                left = counts.by_origin[origin] - 1
                if left:
                    counts.by_origin[origin] = left
                else:
                    del counts.by_origin[origin]


Layer = InFlight
