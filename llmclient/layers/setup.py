"""The opt-in features' state, made once per client from its settings: the rate-limit pacer (and
the Redis it shares budgets through), the adaptive concurrency gates, the embedding batcher,
speculation and the retry budget. Each is None while its feature is off, and then its layer is
not in the chain (the retry budget's is the retry layer, always there: it skips the budget)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..features.admit import Pacer
from ..features.admit.gate import Gates
from ..features.admit.retry_budget import check_retry_budget
from ..features.batch import Batcher

if TYPE_CHECKING:
    from ..features.prefetch import Speculation
    from ..pipeline.call import Call
    from .context import Context

__all__ = ["aclose", "cache_for", "close", "speculation", "speculation_stats", "start"]


def start(ctx: Context, features: Any, prefetch: Any) -> None:
    """Fill ``ctx`` with the state of the features ``features`` (a Config's Features) turns on;
    speculation exists once configured (checked now: a bad setting raises here) or once the
    client's calls ask for prefetch. A retry budget already on ``ctx`` is the one of the client
    this one copies (``with_options``): it goes on unless the copy names another or none."""
    if features.pacing is not False:
        shared = None
        if features.redis is not None:
            # redis-py: loaded only by a client that shares its budgets (the redis extra)
            from ..features.admit.shared import SharedBudget

            shared = features.redis if isinstance(features.redis, SharedBudget) else SharedBudget(features.redis)
        ctx.pacer = Pacer(features.pacing, shared)
    if features.concurrency is not None:
        ctx.gates = Gates(features.concurrency)
    if features.embedding_batch is not None:
        ctx.batcher = Batcher(features.embedding_batch)
    ctx.retry_budget = check_retry_budget(features.retry_budget, ctx.retry_budget)
    ctx.redis = features.redis
    ctx.cache_setting = features.cache
    ctx.priority_field = features.priority_field
    if features.speculation is not None or prefetch:
        # speculation (llmclient.speculative): loaded when a client turns it on
        from ..features import prefetch as _prefetch

        assert ctx.port is not None
        config = _prefetch.config_from(features.speculation) or _prefetch.SpeculationConfig()
        ctx.speculation = _prefetch.Speculation(ctx.port, config)


def cache_for(ctx: Context, call: Call) -> Any:
    """The ResponseCache for this call, or None (the client's, or one a call asks for)."""
    setting = call.options.cache
    if setting is False or (setting is None and ctx.cache_setting is None):
        return None
    if ctx.cache is None:
        # the cache (sqlite3, backends): loaded by the first call that asks for it
        from ..cache import open_cache

        ctx.cache = open_cache(ctx.cache_setting if ctx.cache_setting is not None else True)
    return ctx.cache


def speculation(ctx: Context, create: bool) -> Speculation | None:
    """The client's speculation, made on first use when ``create``."""
    if ctx.speculation is None and create:
        # speculation (llmclient.speculative): loaded when a client turns it on
        from ..features import prefetch as _prefetch

        assert ctx.port is not None
        ctx.speculation = _prefetch.Speculation(ctx.port, _prefetch.SpeculationConfig())
        ctx.rebuild()  # every call now looks for a prefetch of it in flight (this layer)
    return ctx.speculation


def speculation_stats(ctx: Context) -> dict[str, Any]:
    """Speculation's counters (all zero while it does not exist)."""
    if ctx.speculation is not None:
        return ctx.speculation.state.stats()
    # speculation (llmclient.speculative): loaded when a client turns it on
    from ..features.prefetch import SpeculationConfig, SpeculationState

    return SpeculationState(SpeculationConfig()).stats()


def close(ctx: Context) -> None:
    """Stop what runs in the background (speculation's timers and flights, the shared budget's
    Redis connection)."""
    if ctx.pacer is not None and ctx.pacer.shared is not None:
        ctx.pacer.shared.close()
    if ctx.speculation is not None:
        ctx.speculation.close()


async def aclose(ctx: Context) -> None:
    if ctx.speculation is not None:
        await ctx.speculation.aclose()
