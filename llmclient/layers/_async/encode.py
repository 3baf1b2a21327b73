"""The body as it goes on the wire (``layers/encoding.py`` decides), for each attempt: encoded
at the call's first attempt, sent once more in a plainer form when the server refuses our wire,
our content-coding or a field llmclient added (neither counts as a retry: the server did not run
the request). Always in the chain.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..._logging import logger
from ..encoding import REFUSABLE_STATUSES, Encoder
from .read import aread_error_body

if TYPE_CHECKING:
    import httpx

    from ...pipeline.call import Call
    from ..context import Context
    from ..options import CallOptions

__all__ = ["Encode", "Layer", "wanted"]


def wanted(ctx: Context, options: CallOptions) -> bool:
    return True


class Encode:
    __slots__ = ("_encoder", "_inner")

    def __init__(self, inner: Any, ctx: Context) -> None:
        self._inner = inner
        self._encoder = Encoder(ctx.knowledge, compress=ctx.compress, priority_field=ctx.priority_field,
                                routed=ctx.router is not None)

    async def __call__(self, call: Call) -> httpx.Response:
        encoder = self._encoder
        if call.content is None:
            encoder.encode(call)
        resent = False
        while True:
            response = await self._inner(call)
            plainer = encoder.learn(call, response)
            status = response.status_code
            if status < 400:
                return response
            if plainer and not resent:  # the server refused our wire or coding: once more, plainer
                resent = True
                await response.aclose()
                encoder.plainer(call)
                call.record.new_attempt()
                continue
            if status not in REFUSABLE_STATUSES or (call.record.cache_key is None
                                                    and call.record.priority_field is None):
                return response
            name = encoder.refused_field(call, status, await aread_error_body(response))
            if name is None:
                return response
            logger.info("%s %s: %s refused, sent without it", call.method, call.path, name)
            call.record.bytes_received += response.num_bytes_downloaded
            encoder.encode(call)
            call.record.retries += 1
            call.record.new_attempt()


Layer = Encode
