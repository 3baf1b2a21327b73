"""The features a call's pipeline runs, attached to each client in one place.

Images, the response cache, speculation (prefetch, prefix warming) and hedging each act at one
stage of a call (docs/ARCHITECTURE.md). The pipeline (``_async/pipeline.py`` and its generated
sync twin) reaches them only through the client's :class:`Features`, at these hooks:

=========== ================================================ ==================================
stage       hook                                             feature (module, loaded on first use)
=========== ================================================ ==================================
prepare     ``has_images(call)``, ``prepare(call)``          images (``_images``, Pillow)
lookup      ``lookup(call)`` / ``alookup(call)``             cache (``cache``), speculation
                                                             around it (``_prefetch``)
admit       ``pacer.admit`` / ``aadmit``, ``pacer.settle``;    rate limits, adaptive concurrency
            ``gates.gate(url)``: ``acquire`` / ``hold``        (``features/admit``)
send        ``hedge_plan(call, h2)``, ``hedge_racers(call)``, hedging (``_hedge``; the race:
            ``race_sync`` / ``race_async``                   ``_hedge_run``)
store       the lookup's handle (``store_response``)         cache
after       ``after(call, value)``                           speculation
stream end  ``on_stream_complete(call, handle)``             cache store, then speculation
close       ``close()`` / ``aclose()``                       speculation's timers and flights
=========== ================================================ ==================================

The client's own methods ``warm``, ``speculation_stats`` and ``hedge_stats`` are answered here
too. A feature never sees the client: what it may do with it is a
:class:`~llmclient.pipeline.shared.Port` (build a call as the client builds one, run one through the
whole pipeline, read the cache). Each feature's module is imported here on first use, and
nowhere else in the client, so that ``import llmclient`` loads no Pillow, cache backend, thread
pool or event loop.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..features import otel as _otel
from ..features.admit import Pacer, pacing_mode
from ..features.admit.concurrency import adaptive_config
from ..features.admit.gate import Gates
from ..features.batch import Batcher, batch_config
from ..features.hedge import HEDGE_HEADER, CancelToken, HedgeTrack
from ..features.hedge import eligible as hedge_eligible
from .shared import Port, has_image_part

if TYPE_CHECKING:
    from ..features.prefetch import Speculation
    from ..features.route.router import Router
    from .call import Call, CallOptions

__all__ = ["Features"]


class Features:
    """The features attached to one client's pipeline, and the client's settings for them."""

    __slots__ = ("_cache", "_speculation", "batcher", "cache_setting", "gates", "hedge_tracks", "pacer", "port",
                 "router")

    def __init__(
        self,
        *,
        build: Callable[..., Call],
        request: Callable[..., Any],
        defaults: CallOptions,
        is_async: bool,
        cache: Any,
        speculation: Any,
        prefetch: Any,
        pacing: Any = "auto",
        redis: Any = None,
        concurrency: Any = None,
        embedding_batch: Any = None,
    ) -> None:
        self.cache_setting = cache  # the client's ``cache=``: None (off unless a call asks), True, a backend...
        self._cache: Any = None  # the ResponseCache, opened on first use
        self.port = Port(
            build=build, request=request, lookup=self.acache_lookup if is_async else self.cache_lookup,
            cache_for=self.cache_for, defaults=defaults, has_cache=cache is not None, is_async=is_async,
        )
        # Speculation exists once configured (checked now: a bad setting raises here) or once a
        # call asks for prefetch; calls are observed only while it exists.
        self._speculation: Speculation | None = None
        if speculation is not None or prefetch:
            # speculation (llmclient.speculative): loaded when a client turns it on
            from ..features import prefetch as _prefetch

            config = _prefetch.config_from(speculation) or _prefetch.SpeculationConfig()
            self._speculation = _prefetch.Speculation(self.port, config)
        # Hedged requests: latencies and budget per (base URL, path, model).
        self.hedge_tracks: dict[tuple[str, str, str], HedgeTrack] = {}
        # Admit: rate limits learned from answers, pacing before send (features/admit); None
        # with pacing=False.
        self.pacer: Pacer | None = None
        if pacing_mode(pacing) is not False:
            shared = None
            if redis is not None:
                # redis-py: loaded only by a client that shares its budgets (the redis extra)
                from ..features.admit.shared import SharedBudget

                shared = redis if isinstance(redis, SharedBudget) else SharedBudget(redis)
            self.pacer = Pacer(pacing, shared)
        # Adaptive concurrency per origin (features/admit/concurrency.py); None unless asked.
        adaptive = adaptive_config(concurrency)
        self.gates: Gates | None = Gates(adaptive) if adaptive is not None else None
        # Embedding micro-batching (features/batch.py); None unless asked.
        batching = batch_config(embedding_batch)
        self.batcher: Batcher | None = Batcher(batching) if batching is not None else None
        self.router: Router | None = None  # several replicas: set by the client (features/route)

    # -- prepare: images -----------------------------------------------------------------------

    @staticmethod
    def has_images(call: Call) -> bool:
        """Whether the prepare stage has work for this call (its payload carries image parts)."""
        return call.body is not None and call.options.images is not False and has_image_part(call.body)

    @staticmethod
    def prepare(call: Call) -> Call:
        """Image parts through ``llmclient.preprocess`` (orientation, resize, metadata, format)."""
        if call.body is None or not Features.has_images(call):
            return call
        # with Pillow: loaded by the first call that carries an image
        from ..features import images as _images

        started = time.perf_counter()
        body, stats = _images.prepare_payload(call.body, call.options)
        call.body = body
        call.record.image_prep_ms = (time.perf_counter() - started) * 1000.0
        call.record.image_bytes_saved = int(getattr(stats, "bytes_saved", 0) or 0)
        return call

    # -- lookup: cache, speculation around it -------------------------------------------------

    def cache_for(self, call: Call) -> Any:
        """The ResponseCache for this call, or None (the client's, or one a call asks for)."""
        setting = call.options.cache
        if setting is False or (setting is None and self.cache_setting is None):
            return None
        if self._cache is None:
            # the cache (sqlite3, backends): loaded by the first call that asks for it
            from ..cache import open_cache

            self._cache = open_cache(self.cache_setting if self.cache_setting is not None else True)
        return self._cache

    def cache_lookup(self, call: Call) -> Any:
        """The cache stage alone: a CacheHandle (hit, join or lead) or None when not cached."""
        cache = self.cache_for(call)
        return cache.begin(call) if cache is not None else None

    async def acache_lookup(self, call: Call) -> Any:
        cache = self.cache_for(call)
        return await cache.abegin(call) if cache is not None else None

    def speculation(self, create: bool) -> Speculation | None:
        if self._speculation is None and create:
            # speculation (llmclient.speculative): loaded when a client turns it on
            from ..features import prefetch as _prefetch

            self._speculation = _prefetch.Speculation(self.port, _prefetch.SpeculationConfig())
        return self._speculation

    @property
    def speculation_config(self) -> Any:
        """The SpeculationConfig in force, or None while speculation does not exist."""
        return self._speculation.state.config if self._speculation is not None else None

    def lookup(self, call: Call) -> Any:
        """The lookup stage (sync): the cache, with speculation around it where it exists."""
        speculation = self.speculation(create=bool(call.options.prefetch))
        return self.cache_lookup(call) if speculation is None else speculation.lookup(call)

    async def alookup(self, call: Call) -> Any:
        """The lookup stage (async)."""
        speculation = self.speculation(create=bool(call.options.prefetch))
        if speculation is None:
            return await self.acache_lookup(call)
        return await speculation.alookup(call)

    # -- after, stream end: speculation --------------------------------------------------------

    def after(self, call: Call, value: Mapping[str, Any]) -> None:
        """A whole answer came from the server: speculation plans the follow-ups of a call that
        asked for them (started in the background; never raises)."""
        if call.options.prefetch:
            speculation = self.speculation(create=True)
            assert speculation is not None
            speculation.after(call, value)

    def on_stream_complete(self, call: Call, handle: Any) -> Any:
        """What runs when a stream completes: the cache's store, then speculation's planning."""
        on_complete = handle.on_stream_complete if handle is not None else None
        if call.options.prefetch:
            speculation = self.speculation(create=True)
            assert speculation is not None
            on_complete = speculation.on_stream_complete(on_complete)
        return on_complete

    # -- send: hedging (pure decisions in _hedge) ----------------------------------------------

    def hedge_plan(self, call: Call, h2: Callable[[Call], bool | None]) -> tuple[HedgeTrack, float | None] | None:
        """The call's hedge track and how long to wait before its copy (None: send none, but
        learn from its latency); None when the call is not hedged at all. ``h2(call)``: whether
        the origin is known to speak HTTP/2 (None: not yet known). Only our HTTP/2 connections
        can cancel the losing copy: over HTTP/1.1 (or a caller's http_client) a copy would only
        add load."""
        config = call.options.hedge
        if config is None or not hedge_eligible(call.method, call.path, call.body) or h2(call) is False:
            return None
        site = call.base_url
        if self.router is not None:  # several replicas: the deadline of the call's first choice
            replica = self.router.first_choice(call.path, call.body, call.route_pin)
            site = replica.url
            if replica.hedge_after_ms is not None:
                config = dataclasses.replace(config, after_ms=replica.hedge_after_ms)
        key = (site, call.path + (" stream" if call.stream else ""), str((call.body or {}).get("model")))
        track = self.hedge_tracks.get(key)
        if track is None or track.config != config:  # a per-call hedge=True is a new, equal config
            track = self.hedge_tracks[key] = HedgeTrack(config)
        return track, track.plan()

    @staticmethod
    def hedge_twin(call: Call) -> Call:
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

    @staticmethod
    def hedge_racers(call: Call) -> tuple[Call, Callable[[], Call], Callable[[Call], None]]:
        """The primary's own Call (the same record: the copy never writes into it), the maker
        of the copy, and what makes the copy's record the call's when the copy wins."""

        def adopt(copy: Call) -> None:
            copy.record.hedge_won = True
            call.record = copy.record

        primary = call.sibling(call.headers, call.record, CancelToken())
        return primary, lambda: Features.hedge_twin(call), adopt

    @staticmethod
    def race_sync(*args: Any) -> Any:
        """Race a hedged call's two copies on threads (``_hedge_run.race_sync``)."""
        # the hedge race: loaded by the first hedged call
        from ..features.hedge_run import race_sync

        return race_sync(*args)

    @staticmethod
    async def race_async(*args: Any) -> Any:
        """Race a hedged call's two copies as tasks (``_hedge_run.race_async``)."""
        # the hedge race (and asyncio): loaded by the first hedged call
        from ..features.hedge_run import race_async

        return await race_async(*args)

    def hedge_stats(self) -> dict[str, dict[str, Any]]:
        per_replica = self.router is not None  # one track per replica: its URL ends the name
        return {f"{path} {model}" + (f" {site}" if per_replica else ""): track.stats()
                for (site, path, model), track in self.hedge_tracks.items()}

    # -- the client's own methods: warm, stats, close -------------------------------------------

    def warm(self, keep_warm: bool | float, args: dict[str, Any]) -> Any:
        speculation = self.speculation(create=True)
        assert speculation is not None
        return speculation.warm(keep_warm, args)

    async def awarm(self, keep_warm: bool | float, args: dict[str, Any]) -> Any:
        speculation = self.speculation(create=True)
        assert speculation is not None
        return await speculation.awarm(keep_warm, args)

    def speculation_stats(self) -> dict[str, Any]:
        if self._speculation is not None:
            return self._speculation.state.stats()
        # speculation (llmclient.speculative): loaded when a client turns it on
        from ..features.prefetch import SpeculationConfig, SpeculationState

        return SpeculationState(SpeculationConfig()).stats()

    def rate_limits(self) -> dict[str, dict[str, Any]]:
        return self.pacer.snapshot() if self.pacer is not None else {}

    def concurrency_limits(self) -> dict[str, dict[str, Any]]:
        return self.gates.stats() if self.gates is not None else {}

    def close(self) -> None:
        if self.pacer is not None and self.pacer.shared is not None:
            self.pacer.shared.close()
        if self._speculation is not None:
            self._speculation.close()

    async def aclose(self) -> None:
        if self._speculation is not None:
            await self._speculation.aclose()
