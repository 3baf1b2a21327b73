"""Rate limits: before each attempt, the call waits for budget the server described (GCRA,
``features/admit``); each answer's headers correct the budget.

In the chain when the client paces at all (``pacing`` is not False); a call that never fits,
or would wait past its timeout, fails here at once. Low-priority work (batches, prefetches:
``x-llm-priority: low``) waits behind the others.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..._synchronization import asleep
from ...features.admit.pacer import admit_timeout

if TYPE_CHECKING:
    import httpx

    from ...pipeline.call import Call
    from ..context import Context
    from ..options import CallOptions

__all__ = ["Layer", "Pace", "wanted"]


def wanted(ctx: Context, options: CallOptions) -> bool:
    return ctx.pacer is not None


class Pace:
    __slots__ = ("_inner", "_pacer")

    def __init__(self, inner: Any, ctx: Context) -> None:
        assert ctx.pacer is not None
        self._inner, self._pacer = inner, ctx.pacer

    async def __call__(self, call: Call) -> httpx.Response:
        pacer = self._pacer
        low = call.headers.get("x-llm-priority") == "low"  # batch, prefetch: after the others
        ticket = await pacer.aadmit(call.base_url, call.scope, call.body, admit_timeout(call.timeout), low)
        if ticket is not None and ticket.wait_s > 0:
            if call.cancel is not None:  # a hedged copy's wait ends when the other wins
                await call.cancel.asleep(ticket.wait_s)
            else:
                await asleep(ticket.wait_s)
        try:
            response = await self._inner(call)
        except Exception:
            pacer.settle(ticket, call.base_url, call.scope, None, None)
            raise
        pacer.settle(ticket, call.base_url, call.scope, response.status_code, response.headers)
        return response


Layer = Pace
