# Generated from llmclient/layers/_async/route.py by scripts/unasync.py: do not edit here, edit that
# file and run `python scripts/unasync.py` (make lint checks that this file is current).
"""Several replicas behind one client (``base_url=[...]``): which replica each attempt goes to.

The decisions are the router's (``features/route/``: the plan over the replicas, prefix affinity
under bounded loads, health and ejection); this layer is the I/O around them, entered for each
attempt. A connection that could not be made (nothing was sent) goes on to the next replica at
once, and so does a 404 ``model_not_found`` (nothing was run): neither counts as a retry. A 5xx
or 429 is the retry layer's to decide; its retry goes to the next replica (the plan moved on).
An answer's body holds the replica's in-flight slot until it is closed. In the chain only with
several replicas.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..._logging import logger
from ...features.route.attempt import Routed, model_not_found
from .read import read_error_body

if TYPE_CHECKING:
    import httpx

    from ...pipeline.call import Call
    from ..context import Context
    from ..options import CallOptions

__all__ = ["Layer", "Route", "wanted"]


def wanted(ctx: Context, options: CallOptions) -> bool:
    return ctx.router is not None


class Route:
    __slots__ = ("_inner", "_router")

    def __init__(self, inner: Any, ctx: Context) -> None:
        assert ctx.router is not None
        self._inner, self._router = inner, ctx.router

    def __call__(self, call: Call) -> httpx.Response:
        route = call.route
        if route is None:  # the call's first attempt: its plan over the replicas
            route = call.route = Routed(self._router, call)
        record = call.record
        while True:
            route.begin(call)
            try:
                response = self._inner(call)
            except Exception as exc:
                if not route.failed(exc):
                    raise
                logger.info("%s %s: %s unreachable, trying the next replica", call.method, call.path, call.base_url)
            else:
                status = response.status_code
                if status < 400:
                    route.answered(response, record)
                    return response
                if status != 404 or route.model is None \
                        or not model_not_found(404, read_error_body(response)) or not route.missing_model():
                    route.status(status)
                    return response
                # this replica has no such model (nothing was run): the next one, now
                logger.info("%s %s: 404 model_not_found at %s, trying the next replica",
                            call.method, call.path, call.base_url)
            record.retries += 1  # another replica, nothing run: no attempt of max_retries
            record.new_attempt()


Layer = Route
