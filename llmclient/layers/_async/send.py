"""The innermost layer: one attempt's request on the wire, through the client's transport (our
HTTP/2 and HTTP/1.1 connections, ``transport/lanes.py``) or the caller's own ``http_client``.

What the answer's headers say about the attempt (its HTTP version, Server-Timing, the time to
its first byte) goes into the call's record here, for every attempt, whatever its status.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import httpx

from ...transport.http_clients import asend_through
from ..request import build_request

if TYPE_CHECKING:
    from ...pipeline.call import Call
    from ..context import Context

__all__ = ["Send"]


class Send:
    __slots__ = ("_ctx", "_fixed", "_forms")

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx
        self._forms = ctx.header_forms
        self._fixed = ctx.fixed_transport

    async def __call__(self, call: Call) -> httpx.Response:
        record = call.record
        request = build_request(call, self._forms, record.on_trace_async)  # unasync: sync=request = build_request(call, self._forms, record.on_trace)
        transport = self._fixed if self._fixed is not None else self._ctx.transport()
        try:
            if transport is not None:
                response: httpx.Response = await transport.send(request)
            else:
                response = await asend_through(self._ctx.http_client, request)  # its headers, params, auth, hooks
        except httpx.RequestError as exc:
            if exc._request is None:  # the public error names the request that failed
                exc.request = request
            raise
        record.finish_headers(response.http_version, response.headers.get("server-timing"))
        record.bytes_sent += len(request.content)
        return response
