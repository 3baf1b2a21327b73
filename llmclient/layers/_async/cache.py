"""The response cache and speculation (``cache=``, ``prefetch=``): an identical call already
answered is answered from the cache (a stream replayed), one in flight is joined, a predicted
follow-up in flight (a prefetch) is adopted; only a complete answer is stored (a stream: once it
completed), and a call that asked for prefetch has its follow-ups planned from its answer.

The decisions are the cache's (``llmclient.cache``: the key, the policy, the entries) and
speculation's (``features/prefetch.py`` over ``llmclient.speculative``); the cache is opened,
and speculation made, on first use. In the chain when the client has a cache or speculation, or
the call asks for either.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...pipeline.reply import Reply
from ..setup import cache_for, speculation

if TYPE_CHECKING:
    from ...pipeline.call import Call
    from ..context import Context
    from ..options import CallOptions

__all__ = ["Cache", "Layer", "alookup_cache", "wanted"]


def wanted(ctx: Context, options: CallOptions) -> bool:
    return (options.cache is not False and (ctx.cache_setting is not None or options.cache is not None)) \
        or bool(options.prefetch) or ctx.speculation is not None


async def alookup_cache(ctx: Context, call: Call) -> Any:
    """The cache's look-up alone: a CacheHandle (hit, join or lead) or None when not cached."""
    cache = cache_for(ctx, call)
    return await cache.abegin(call) if cache is not None else None


class Cache:
    __slots__ = ("_ctx", "_inner")

    def __init__(self, inner: Any, ctx: Context) -> None:
        self._inner, self._ctx = inner, ctx

    async def __call__(self, call: Call) -> Reply:
        if call.raw:  # with_raw_response / with_streaming_response want the server's own answer
            return await self._inner(call)
        ctx = self._ctx
        prefetch = bool(call.options.prefetch)
        spec = speculation(ctx, create=prefetch)
        handle = await alookup_cache(ctx, call) if spec is None else await spec.alookup(call)
        try:
            if handle is not None and handle.entry is not None:
                if call.stream:
                    return Reply(None, result=handle.areplay_stream(call.stream_make or call.make))
                return Reply(None, result=ctx.finish(call, call.make(handle.response()), None))
            reply: Reply = await self._inner(call)
            if call.stream:
                on_complete = handle.on_stream_complete if handle is not None else None
                if prefetch:
                    assert spec is not None
                    on_complete = spec.on_stream_complete(on_complete)
                reply.on_complete = on_complete
                return reply
            if handle is not None:  # the cache keeps a complete answer, one that made an object
                await handle.astore_response(reply.value)
            if prefetch:  # plan the follow-ups (started in the background; never raises)
                assert spec is not None
                spec.after(call, reply.value or {})
            return reply
        finally:
            if handle is not None:
                handle.release()


Layer = Cache
