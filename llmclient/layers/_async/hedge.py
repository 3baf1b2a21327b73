"""Hedged requests (``hedge=``): a call slower than its learned p95 (time to first token for a
stream) is also sent as a second copy, under a budget; the first answer wins and the other copy
is cancelled. The decisions are ``features/hedge.py``'s (which calls, when, how many); the race
is ``features/hedge_run.py`` (threads for the sync client, tasks for the async one). In the chain
when the client or the call asks for hedging.
"""

from __future__ import annotations

import dataclasses
import time
from typing import TYPE_CHECKING, Any

from ...features import otel as _otel
from ...features.hedge import HEDGE_HEADER, CancelToken, HedgeTrack
from ...features.hedge import eligible as hedge_eligible
from ..answer import first_token_probe

if TYPE_CHECKING:
    import httpx

    from ...pipeline.call import Call
    from ..context import Context
    from ..options import CallOptions

__all__ = ["Hedge", "Layer", "twin", "wanted"]


def wanted(ctx: Context, options: CallOptions) -> bool:
    return options.hedge is not None


class Hedge:
    __slots__ = ("_ctx", "_inner")

    def __init__(self, inner: Any, ctx: Context) -> None:
        self._inner, self._ctx = inner, ctx

    async def __call__(self, call: Call) -> httpx.Response:
        plan = self._plan(call)
        if plan is None:
            return await self._inner(call)
        track, delay = plan
        if delay is None:  # not enough known yet: send it once, and learn
            t0 = time.perf_counter()
            response = await self._first(call)
            track.observe((time.perf_counter() - t0) * 1000.0)
            return response
        # the race (a thread pool or tasks): loaded by the first hedged call that races
        from ...features.hedge_run import race_async

        primary, adopt = _racers(call)

        async def send(copy: Call) -> httpx.Response:
            response = await self._first(copy)
            call.codec = copy.codec  # what the answer is decoded with (the same for both copies)
            return response

        return await race_async(send, primary, lambda: twin(call), track, delay, adopt)

    async def _first(self, call: Call) -> httpx.Response:
        """The call sent; a stream also read until its first token (what a hedged stream races
        on: a slow replica sends its headers, and often a role-only chunk, at once, its token
        late)."""
        response = await self._inner(call)
        read_until = getattr(response.stream, "read_until", None) if call.stream else None
        if read_until is not None:
            try:
                await read_until(first_token_probe(response, call.codec))
            except BaseException:
                await response.aclose()
                raise
        return response

    def _plan(self, call: Call) -> tuple[HedgeTrack, float | None] | None:
        """The call's hedge track and how long to wait before its copy (None: send none, but
        learn from its latency); None when the call is not hedged at all. Only our HTTP/2
        connections can cancel the losing copy: over HTTP/1.1 (or a caller's http_client) a
        copy would only add load."""
        config = call.options.hedge
        ctx = self._ctx
        if config is None or not hedge_eligible(call.method, call.path, call.body) or ctx.speaks_h2(call) is False:
            return None
        site = call.base_url
        router = ctx.router
        if router is not None:  # several replicas: the deadline of the call's first choice
            replica = router.first_choice(call.path, call.body, call.route_pin)
            site = replica.url
            if replica.hedge_after_ms is not None:
                config = dataclasses.replace(config, after_ms=replica.hedge_after_ms)
        key = (site, call.path + (" stream" if call.stream else ""), str((call.body or {}).get("model")))
        tracks = ctx.hedge_tracks
        track = tracks.get(key)
        if track is None or track.config != config:  # a per-call hedge=True is a new, equal config
            track = tracks[key] = HedgeTrack(config)
        return track, track.plan()


def twin(call: Call) -> Call:
    """The second copy: same trace and body, marked, with its own Idempotency-Key."""
    headers = {**call.headers, HEDGE_HEADER: "1"}
    key = headers.get("idempotency-key")
    if key:
        headers["idempotency-key"] = key + "-hedge"
    call.record.hedged = True
    copy = call.sibling(headers, call.record.twin(), CancelToken())
    if _otel._live:
        _otel.hedge_copy(call, copy)  # its own span, child of and linked to the call's
    return copy


def _racers(call: Call) -> tuple[Call, Any]:
    """The primary's own Call (the same record: the copy never writes into it), and what makes
    the copy's record the call's when the copy wins."""

    def adopt(copy: Call) -> None:
        copy.record.hedge_won = True
        call.record = copy.record

    return call.sibling(call.headers, call.record, CancelToken()), adopt


Layer = Hedge
