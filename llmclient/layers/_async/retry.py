"""The attempt loop: whether a failed attempt is tried again, and after how long.

The decisions are ``pipeline/retry.py``'s (pure): a transport error or a retryable status
(408, 409, 429, 5xx, ``x-should-retry``) is retried up to ``max_retries`` with backoff, honouring
``retry-after``; a send the protocol proves never ran (a stream above a GOAWAY's
last-stream-id, REFUSED_STREAM) is repeated at once without counting. Anything else raises the
face's error, with the call's trace id, timings and, with several replicas, each replica tried.
Always in the chain.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import httpx

from ..._logging import logger
from ..._synchronization import asleep
from ...pipeline.retry import error_retry, status_retry
from .read import aread_error_body

if TYPE_CHECKING:
    from ...pipeline.call import Call
    from ..context import Context
    from ..options import CallOptions

__all__ = ["Layer", "Retry", "wanted"]


def wanted(ctx: Context, options: CallOptions) -> bool:
    return True


class Retry:
    __slots__ = ("_errors", "_inner")

    def __init__(self, inner: Any, ctx: Context) -> None:
        self._inner, self._errors = inner, ctx.errors

    async def __call__(self, call: Call) -> httpx.Response:
        record = call.record
        record.begin()
        attempt = free_used = 0
        while True:
            try:
                response = await self._inner(call)
            except Exception as exc:
                delay, free = error_retry(exc, attempt, call.max_retries, free_used, call.url)
                if not isinstance(exc, httpx.TransportError):
                    raise
                err = self._errors.connection_error(call, exc, exc._request)
                if delay is None:
                    if call.route is not None:
                        err.message = f"{err.message}; replicas tried: {call.route.describe()}"
                        err.args = (err.message,)
                    raise err from exc
                why = str(err)
            else:
                if response.status_code < 400:
                    return response
                raw = await aread_error_body(response)
                record.bytes_received += response.num_bytes_downloaded
                delay = status_retry(response.status_code, response.headers, attempt, call.max_retries)
                if delay is None:
                    record.finish()
                    raise self._errors.status_error(call, response, raw)
                why, free = f"HTTP {response.status_code}", False
            logger.info("retrying %s %s in %.2fs (attempt %d of %d): %s",
                        call.method, call.path, delay, attempt + 1, call.max_retries, why)
            if delay > 0:
                if call.cancel is not None:  # a hedged call's wait ends when its copy wins
                    await call.cancel.asleep(delay)
                else:
                    await asleep(delay)
            if free:
                free_used += 1
            else:
                attempt += 1
            record.retries += 1
            record.new_attempt()


Layer = Retry
