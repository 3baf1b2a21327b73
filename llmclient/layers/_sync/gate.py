# Generated from llmclient/layers/_async/gate.py by scripts/unasync.py: do not edit here, edit that
# file and run `python scripts/unasync.py` (make lint checks that this file is current).
"""Adaptive concurrency (``concurrency="adaptive"``): a slot per origin before the call is sent,
held until its answer's body is closed (a stream: until it ends); the limit moves with the
latency the answers show (``features/admit/concurrency.py``, AIMD). In the chain only when asked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...features.admit.pacer import admit_timeout

if TYPE_CHECKING:
    import httpx

    from ...pipeline.call import Call
    from ..context import Context
    from ..options import CallOptions

__all__ = ["Gate", "Layer", "wanted"]


def wanted(ctx: Context, options: CallOptions) -> bool:
    return ctx.gates is not None


class Gate:
    __slots__ = ("_gates", "_inner")

    def __init__(self, inner: Any, ctx: Context) -> None:
        assert ctx.gates is not None
        self._inner, self._gates = inner, ctx.gates

    def __call__(self, call: Call) -> httpx.Response:
        gate = self._gates.gate(call.base_url)
        gate.acquire(admit_timeout(call.timeout))
        try:
            response = self._inner(call)
        except BaseException:
            gate.release(None)
            raise
        gate.hold(response, call.record, call.stream)
        return response


Layer = Gate
