"""The attempt loop: whether a failed attempt is tried again, and after how long.

The decisions are ``pipeline/retry.py``'s (pure): a transport error or a retryable status
(408, 409, 429, 5xx, ``x-should-retry``) is retried up to ``max_retries`` with backoff, honouring
``retry-after``; a send the protocol proves never ran (a stream above a GOAWAY's
last-stream-id, REFUSED_STREAM) is repeated at once without counting. Anything else raises the
face's error, with the call's trace id, timings and, with several replicas, each replica tried.

Each attempt's outcome also goes into its origin's retry budget (``features/admit/
retry_budget.py``, gRPC's retry throttling; on unless ``retry_budget=False``): a retryable
failure takes a token (Anthropic's 529, a shed answer, a quarter of one), anything else (an answer, a status not retried) puts a share back, and a
retry the policy wants is refused while the bucket is at or below half, so an outage costs about
one attempt per call. A refused retry raises the call's own error at once, its message saying
so and ``retry_budget`` naming the origin. A send the transport proved never reached the server
(``unprocessed``, read by attribute: the transport re-sends those itself, ``transport/lanes.py``)
neither takes nor gives. Always in the chain.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import httpx

from ..._logging import logger
from ..._synchronization import asleep
from ...features.admit.retry_budget import NOT_COUNTED_STATUSES, failure_cost, mark_refused, outcome
from ...pipeline.retry import error_retry, is_retryable_status, refused, status_retry
from .read import aread_error_body

if TYPE_CHECKING:
    from ...pipeline.call import Call
    from ..context import Context
    from ..options import CallOptions

__all__ = ["Layer", "Retry", "wanted"]


def wanted(ctx: Context, options: CallOptions) -> bool:
    return True


class Retry:
    __slots__ = ("_budget", "_errors", "_inner", "_redis")

    def __init__(self, inner: Any, ctx: Context) -> None:
        self._inner, self._errors = inner, ctx.errors
        self._budget, self._redis = ctx.retry_budget, ctx.redis

    async def __call__(self, call: Call) -> httpx.Response:
        record = call.record
        budget = self._budget
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
                spent = None  # the origin's budget, when it refuses the retry
                # A refused connect reached no server (nothing listens): like a never-sent
                # request it costs the origin nothing, so it neither takes nor gives a token.
                if (budget is not None and not free and not isinstance(exc, httpx.UnsupportedProtocol)
                        and not refused(exc)):
                    origin = budget.for_url(call.base_url, self._redis)  # this attempt's (its replica's)
                    if outcome(origin, True, delay is not None):
                        spent = origin
                if delay is None or spent is not None:
                    if call.route is not None and delay is None:
                        err.message = f"{err.message}; replicas tried: {call.route.describe()}"
                        err.args = (err.message,)
                    raise (err if spent is None else mark_refused(err, spent)) from exc
                why = str(err)
            else:
                status = response.status_code
                if status < 400:
                    if budget is not None:  # the origin answers: a share of a token back
                        budget.for_url(call.base_url, self._redis).succeeded()
                    return response
                raw = await aread_error_body(response)
                record.bytes_received += response.num_bytes_downloaded
                delay = status_retry(status, response.headers, attempt, call.max_retries)
                spent = None
                if budget is not None and status not in NOT_COUNTED_STATUSES:
                    origin = budget.for_url(call.base_url, self._redis)
                    if outcome(origin, is_retryable_status(status, response.headers), delay is not None,
                               failure_cost(status)):
                        spent = origin
                if delay is None or spent is not None:
                    record.finish()
                    refusal = self._errors.status_error(call, response, raw)
                    raise refusal if spent is None else mark_refused(refusal, spent)
                why, free = f"HTTP {status}", False
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
