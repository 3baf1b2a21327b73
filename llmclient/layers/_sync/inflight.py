# Generated from llmclient/layers/_async/inflight.py by scripts/unasync.py: do not edit here, edit that
# file and run `python scripts/unasync.py` (make lint checks that this file is current).
"""How many of this client's attempts to an origin their answer, for the timings: each
attempt's record says how many were in flight to its origin when it was sent, itself included
(``timings.in_flight``), so a slow call can be told from a call that queued behind the client's
own others. An attempt counts from when it is handed to the transport until its answer's headers
(or its failure). Always in the chain; its count per origin is the client's
(``ctx.own("inflight", ...)``), shared by the chains of every option set; a sync client's
threads count without a lock (a deque per origin: its append and pop are atomic).
"""

from __future__ import annotations

from collections import deque
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
    """Attempts in flight per origin: a deque per origin, one item per attempt (a deque's append
    and pop are atomic, so a sync client's threads need no lock for it)."""

    __slots__ = ("by_origin",)

    def __init__(self) -> None:
        self.by_origin: dict[str, deque[None]] = {}

    def now(self) -> dict[str, int]:
        """Attempts in flight per origin now (origins with none left out)."""
        return {origin: len(q) for origin, q in list(self.by_origin.items()) if q}


class InFlight:
    __slots__ = ("_by_origin", "_inner")

    def __init__(self, inner: Any, ctx: Context) -> None:
        self._inner = inner
        self._by_origin = ctx.own("inflight", _Counts).by_origin

    def __call__(self, call: Call) -> httpx.Response:
        queue = self._by_origin.get(call.base_url)
        if queue is None:
            queue = self._by_origin.setdefault(call.base_url, deque())
        queue.append(None)
        call.record.in_flight = len(queue)
        try:
            return self._inner(call)
        finally:
            queue.pop()


Layer = InFlight
