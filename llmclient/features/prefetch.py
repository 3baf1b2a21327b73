"""Glue from the pipeline to ``speculative``: prefetch follow-ups, join them, warm prefixes.

The decisions live in ``speculative`` (what to predict, what the budget allows, what is stale);
this module only runs them through the client's own pipeline, by the
:class:`~llmclient.pipeline.shared.Port` a :class:`Speculation` is given (it never sees the client;
``_features`` attaches it):

* **lookup** (every app call, :meth:`Speculation.lookup` / :meth:`Speculation.alookup`): the speculator observes the
  call (budget credit, history learning, cancelling prefetches of a conversation that moved
  on). A call that matches a prefetch exactly reads the response cache even where the cache's
  policy would not (a sampled request), so it is served by the landed answer (``hit``) or joins
  the prefetch still in flight through the cache's single-flight (``join``).
* **after** (:meth:`Speculation.after`, an answer arrived): the speculator plans follow-ups under the
  client's budget; each is sent in the background (a thread for ``OpenAI``, a task for
  ``AsyncOpenAI``) as a *stream* through the same pipeline, with the cache store forced for
  that exact request. Streaming is what makes cancellation real: closing the stream resets it
  (HTTP/2 RST_STREAM), and the server stops generating.
* **warm** (:meth:`Speculation.warm` / :meth:`Speculation.awarm`, ``prefetch="prefix"``): the prompt with
  ``max_tokens=1`` so the server's prefix cache holds it; ``keep_warm`` refreshes it on a timer.

Prefetch and warm requests carry ``x-llm-prefetch: 1`` (``warm`` for warm-ups) and
``x-llm-priority: low`` (headers, never the body: the body is the cache key). They inherit the
originating call's headers (a header may pick a deployment, so an answer fetched without it
might not be the answer the app would get) plus ``SpeculationConfig.headers``; they continue
the originating call's trace (a child span), so logs of a failed prefetch carry its trace id.

A prefetched answer to a sampled request (temperature > 0, no seed) is a sample the app has not
seen: it is served once and deleted. So is any prefetched answer when the client has no cache
of its own (the in-memory cache then exists only to carry prefetches). Nothing here ever raises
into the app's call: errors are counted (``speculation_stats()["errors"]``) and logged.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from llmclient.speculative import (
    PROVIDER_CACHE_TTL_S,
    BudgetConfig,
    HistoryPredictor,
    Prefetch,
    Speculator,
    as_predictor,
    conversation_id,
    fingerprint,
    is_sampled,
    refresh_interval,
    run_in_task,
    run_in_thread,
    warm_request,
)

from .._logging import get_logger
from .._redact import redact_text
from ..pipeline.call import NOT_GIVEN, Call
from . import otel as _otel

if TYPE_CHECKING:
    from .port import Port

__all__ = [
    "PREFETCH_HEADER",
    "PRIORITY_HEADER",
    "PrefetchError",
    "Speculation",
    "SpeculationConfig",
    "SpeculationState",
    "config_from",
]

log = get_logger("llmclient.prefetch")

PREFETCH_HEADER = "x-llm-prefetch"
PRIORITY_HEADER = "x-llm-priority"
CHAT_PATH = "/chat/completions"
# Headers that belong to one request, not to what is asked: a prefetch gets its own.
_PER_REQUEST_HEADERS = frozenset({"idempotency-key", "x-request-id", "accept", "content-type",
                                  "content-length", "tracestate"})
_MAX_LANDED = 1024  # unused landed prefetches remembered per client (oldest count as wasted)
_DEFAULT_BACKOFF_S = 1.0


class PrefetchError(Exception):
    """A prefetch or warm-up failed; the message names its trace id (never raised into a call)."""


@dataclass(frozen=True)
class SpeculationConfig:
    """Per-client speculation settings (``OpenAI(speculation=SpeculationConfig(...))``).

    budget            in flight, extra-load share, tokens per minute, candidates per answer
    predictor         what ``prefetch=True`` uses: a predictor, a list of next user messages or
                      a function; default: a :class:`~speculative.HistoryPredictor` that learns
                      from the calls this client makes
    allow_tools       speculate requests that offer tools (off: a prefetched tool call could
                      make the app act on something the user never asked for)
    headers           extra headers on prefetch and warm-up requests only
    priority          value of ``x-llm-priority`` on them (None: no header)
    provider          whose prompt-cache TTL ``keep_warm=True`` refreshes against
    single_use_ttl_s  lifetime of a single-use prefetched answer nobody asked for
    """

    budget: BudgetConfig = field(default_factory=BudgetConfig)
    predictor: Any = None
    allow_tools: bool = False
    headers: Mapping[str, str] = field(default_factory=dict)
    priority: str | None = "low"
    provider: str = "openai"
    single_use_ttl_s: float = 600.0

    def __post_init__(self) -> None:
        if not isinstance(self.budget, BudgetConfig):
            raise TypeError(f"SpeculationConfig.budget must be a BudgetConfig, got {type(self.budget).__name__}")
        if self.provider not in PROVIDER_CACHE_TTL_S:
            raise ValueError(f"SpeculationConfig.provider must be one of {sorted(PROVIDER_CACHE_TTL_S)}, "
                             f"got {self.provider!r}")
        if not self.single_use_ttl_s > 0:
            raise ValueError("SpeculationConfig.single_use_ttl_s must be > 0")


def config_from(setting: Any) -> SpeculationConfig | None:
    """The client's ``speculation=`` argument: None, True, a BudgetConfig or a SpeculationConfig."""
    if setting is None or setting is False:
        return None
    if setting is True:
        return SpeculationConfig()
    if isinstance(setting, BudgetConfig):
        return SpeculationConfig(budget=setting)
    if isinstance(setting, SpeculationConfig):
        return setting
    raise TypeError("speculation= must be None, True, a speculative.BudgetConfig or a "
                    f"llmclient SpeculationConfig, got {type(setting).__name__}")


# -- per-client state ---------------------------------------------------------------------

@dataclass
class _Landed:
    """A prefetched answer now in the cache, waiting for the app's identical call."""

    cache_key: str
    conversation: str
    single_use: bool
    tokens: int
    latency_ms: float
    cache: Any


@dataclass
class _Claim:
    """A prefetch in flight: the cache key whose single-flight it leads."""

    cache_key: str
    single_use: bool
    cache: Any
    scope: str = ""  # the credential scope it was fetched under (llmclient.pipeline.call.credential_scope)
    consumer: bool = False  # an app call already counts on it (a single-use answer serves one)


@dataclass
class _Match:
    prefetch: Prefetch | None
    landed: _Landed | None
    cache_key: str
    single_use: bool
    cache: Any
    observed_at: float


@dataclass
class _KeepWarm:
    call_args: dict[str, Any]
    prefix_len: int
    conversation: str
    interval_s: float
    last_used: float
    stop: threading.Event = field(default_factory=threading.Event)
    runner: Any = None  # a Thread (sync client) or an asyncio.Task (async client)


class SpeculationState:
    """What one client knows about its speculation: the speculator, landed and claimed
    prefetches, keep-warm timers, and counters the speculator itself does not keep."""

    def __init__(self, config: SpeculationConfig) -> None:
        self.config = config
        predictor = as_predictor(config.predictor) if config.predictor is not None else HistoryPredictor()
        self.speculator = Speculator(config.budget, predictor=predictor, allow_tools=config.allow_tools)
        # Keyed by (credential scope, request fingerprint): a prefetch fetched under one
        # tenant's credentials never answers, joins or cancels another's call.
        self.landed: OrderedDict[tuple[str, str], _Landed] = OrderedDict()
        self.claims: dict[tuple[str, str], _Claim] = {}
        self.keepers: list[_KeepWarm] = []
        self.backoff_until = 0.0
        self.peak_in_flight = 0
        self.refused: dict[str, int] = {}
        self.closed = False
        self._lock = threading.Lock()

    # -- observing the app's calls (bookkeeping, no I/O) -----------------------------------
    def observe(self, body: Mapping[str, Any], scope: str) -> tuple[_Match | None, list[_Landed]]:
        """Tell the speculator about an app call made under credential ``scope``; returns (its
        prefetch match, wasted landings). Only prefetches fetched under the same scope match."""
        prefetch = self.speculator.observe(body)
        key = (scope, fingerprint(body))
        messages = body.get("messages") or []
        now = time.monotonic()
        match: _Match | None = None
        wasted: list[_Landed] = []
        with self._lock:
            landed = self.landed.pop(key, None)
            if self.landed:
                conv = conversation_id(messages[:-1]) if messages else ""
                for other_key in [k for k, v in self.landed.items()
                                  if v.conversation == conv and k[0] == scope]:
                    wasted.append(self.landed.pop(other_key))
            claim = self.claims.get(key) if prefetch is not None else None
            if landed is not None:
                match = _Match(None, landed, landed.cache_key, landed.single_use, landed.cache, now)
            elif claim is not None and not (claim.single_use and claim.consumer):
                # A single-use answer serves one caller; a second identical call goes upstream.
                claim.consumer = True
                match = _Match(prefetch, None, claim.cache_key, claim.single_use, claim.cache, now)
            for keeper in self.keepers:
                if len(messages) >= keeper.prefix_len and \
                        conversation_id(messages[: keeper.prefix_len]) == keeper.conversation:
                    keeper.last_used = now
        for item in wasted:
            self.speculator.note_wasted(item.tokens)
        _otel.prefetch_wasted(len(wasted))  # the llmclient.prefetch.requests metric
        return match, wasted

    def land(self, prefetch: Prefetch, claim: _Claim, tokens: int, latency_ms: float) -> None:
        evicted: list[_Landed] = []
        with self._lock:
            self.claims.pop((claim.scope, prefetch.key), None)
            if prefetch.token.cancelled or claim.consumer:
                return  # cancelled, or already served to the call that joined it
            self.landed[(claim.scope, prefetch.key)] = _Landed(claim.cache_key, prefetch.conversation, claim.single_use,
                                                tokens, latency_ms, claim.cache)
            while len(self.landed) > _MAX_LANDED:
                evicted.append(self.landed.popitem(last=False)[1])
        for item in evicted:
            self.speculator.note_wasted(item.tokens)
        _otel.prefetch_wasted(len(evicted))

    def unclaim(self, prefetch: Prefetch, scope: str) -> None:
        with self._lock:
            self.claims.pop((scope, prefetch.key), None)

    def refuse(self, why: str) -> None:
        with self._lock:
            self.refused[why] = self.refused.get(why, 0) + 1

    def note_in_flight(self) -> None:
        with self._lock:
            self.peak_in_flight = max(self.peak_in_flight, self.speculator.budget.in_flight)

    def stats(self) -> dict[str, Any]:
        out = self.speculator.stats.as_dict()
        budget = self.speculator.budget
        with self._lock:
            refused = dict(out["refused"])
            for why, n in self.refused.items():
                refused[why] = refused.get(why, 0) + n
            out.update(
                refused=refused,
                in_flight=budget.in_flight,
                peak_in_flight=self.peak_in_flight,
                app_calls=budget.app_calls,
                landed_unused=len(self.landed),
                keep_warm=len(self.keepers),
            )
        # Extra load as backup-request budgets state it: speculative requests per app call.
        out["extra_load"] = (out["sent"] + out["warmups"]) / budget.app_calls if budget.app_calls else 0.0
        return out


class Speculation:
    """Speculation attached to one client's pipeline (by ``_features``): its state, and the
    :class:`~llmclient.pipeline.shared.Port` it builds and sends its requests through. It never sees
    the client itself."""

    __slots__ = ("port", "state")

    def __init__(self, port: Port, config: SpeculationConfig) -> None:
        self.port = port
        self.state = SpeculationState(config)

    def lookup(self, call: Call) -> Any:
        """The cache stage with speculation around it (sync)."""
        return _lookup(self.port, self.state, call)

    async def alookup(self, call: Call) -> Any:
        """The cache stage with speculation around it (async)."""
        return await _alookup(self.port, self.state, call)

    def after(self, call: Call, value: Mapping[str, Any]) -> None:
        """An answer arrived: plan follow-ups and start them in the background. Never raises."""
        after_call(self.port, self.state, call, value)

    def on_stream_complete(self, prior: Any) -> Any:
        """A Stream ``on_complete`` callback: ``prior`` (the cache's store), then plan
        prefetches from the finished stream's answer."""
        return _on_stream_complete(self.port, self.state, prior)

    def warm(self, keep_warm: bool | float, args: dict[str, Any]) -> Any:
        """``client.warm(...)`` (sync)."""
        return warm(self.port, self.state, keep_warm, args)

    async def awarm(self, keep_warm: bool | float, args: dict[str, Any]) -> Any:
        """``client.warm(...)`` (async)."""
        return await awarm(self.port, self.state, keep_warm, args)

    def close(self) -> None:
        """Stop keep-warm timers and cancel prefetches in flight (sync client)."""
        close(self.state)

    async def aclose(self) -> None:
        """Stop keep-warm timers and cancel prefetches in flight (async client)."""
        await aclose(self.state)


def is_prefetch_call(call: Call) -> bool:
    return PREFETCH_HEADER in call.headers


# -- pure decisions ------------------------------------------------------------------------

def _single_use(port: Port, body: Mapping[str, Any]) -> bool:
    # A sampled answer is a fresh sample; without a cache of its own the client keeps a
    # prefetched answer only until the one call it was fetched for.
    return is_sampled(body) or not port.has_cache


def _forced_cache_option(setting: Any, single_use: bool, ttl_s: float) -> Any:
    """The cache option of a prefetch (store forced) built from the app call's own."""
    # the cache (sqlite3, backends): loaded when speculation meets a cache
    from ..cache import CacheOptions

    ttl = ttl_s if single_use else None
    if isinstance(setting, CacheOptions):
        return dataclasses.replace(setting, enabled=True, force=True, refresh=False,
                                   ttl=setting.ttl if setting.ttl is not None else ttl)
    return CacheOptions(force=True, ttl=ttl)


def _read_options(options: Any, single_use: bool, ttl_s: float) -> Any:
    """Options that make a matched app call read (and join) the prefetch's cache entry."""
    if not single_use:
        return options
    return dataclasses.replace(options, cache=_forced_cache_option(options.cache, True, ttl_s))


def _prefetch_headers(state: SpeculationState, origin: Call, kind: str) -> dict[str, str]:
    headers = {k: v for k, v in origin.headers.items() if k not in _PER_REQUEST_HEADERS}
    headers.update({k.lower(): str(v) for k, v in state.config.headers.items()})
    headers[PREFETCH_HEADER] = "warm" if kind == "warm" else "1"
    if state.config.priority:
        headers[PRIORITY_HEADER] = state.config.priority
    return headers


def _build_prefetch_call(port: Port, state: SpeculationState, origin: Call, prefetch: Prefetch) -> Call:
    body = dict(prefetch.request)
    warm = prefetch.kind == "warm"
    if warm:
        # Nothing worth keeping comes back (one token); never store it.
        options = port.options(cache=False, prefetch=None, images=False, wire=origin.options.wire)
    else:
        single_use = _single_use(port, body)
        cache = _forced_cache_option(origin.options.cache, single_use, state.config.single_use_ttl_s)
        options = port.options(cache=cache, prefetch=None, images=False, wire=origin.options.wire)
        # Streamed so that cancelling closes the stream and the server stops generating;
        # stream/stream_options are not part of the cache key or of the exact-match fingerprint.
        body["stream"] = True
        body["stream_options"] = {**(body.get("stream_options") or {}), "include_usage": True}
    call = port.build("POST", origin.path, body, options=options, stream=not warm,
                              extra_headers=_prefetch_headers(state, origin, prefetch.kind),
                              extra_query=origin.query, timeout=origin.timeout)
    call.max_retries = 0  # optional work: a failure is not worth a retry's extra load
    return call


def _completion_tokens(chunks: list[dict[str, Any]]) -> int:
    content = 0
    for chunk in chunks:
        usage = chunk.get("usage")
        if isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int):
            return int(usage["completion_tokens"])
        for choice in chunk.get("choices") or ():
            if (choice.get("delta") or {}).get("content"):
                content += 1
    return content


def _retry_after_s(exc: BaseException) -> float | None:
    """Seconds to stop speculating after the server refused a prefetch (429), else None."""
    if getattr(exc, "status_code", None) != 429:
        return None
    response = getattr(exc, "response", None)
    raw = response.headers.get("retry-after") if response is not None else None
    try:
        return max(float(raw), _DEFAULT_BACKOFF_S) if raw is not None else _DEFAULT_BACKOFF_S
    except ValueError:
        return _DEFAULT_BACKOFF_S


def _failure(state: SpeculationState, call: Call, origin_trace: str, exc: BaseException) -> PrefetchError:
    backoff = _retry_after_s(exc)
    if backoff is not None:
        state.backoff_until = max(state.backoff_until, time.monotonic() + backoff)
    # The prefetch is a child span of the call that caused it: same trace id (so the same
    # X-Request-ID, the trace id as a UUID), its own span id.
    return PrefetchError(redact_text(
        f"{type(exc).__name__}: {exc} (prefetch span_id={call.trace.span_id}, "
        f"trace_id={call.trace.trace_id}, caused by the call in trace {origin_trace})"))


def _identity(value: dict[str, Any]) -> dict[str, Any]:
    return value


# -- lookup: every app call ---------------------------------------------------------------

def _match_for(state: SpeculationState, call: Call) -> tuple[_Match | None, list[_Landed]] | None:
    """The prefetch this call matches (if any) and the landed prefetches it made stale; None
    when speculation does not observe the call (not a chat call, a prefetch itself, or the
    observation failed): then it is a plain cache lookup."""
    if call.body is None or call.path != CHAT_PATH or is_prefetch_call(call):
        return None
    try:
        match, wasted = state.observe(call.body, call.scope)
    except Exception:  # speculation must never fail the app's call
        log.warning("speculation: observe failed (trace_id=%s)", call.trace.trace_id, exc_info=True)
        return None
    if match is None or call.options.cache is False:
        return None, wasted
    call.options = _read_options(call.options, match.single_use, state.config.single_use_ttl_s)
    return match, wasted


def _settle(state: SpeculationState, call: Call, match: _Match, handle: Any) -> tuple[Any, bool]:
    """Count a hit or join; returns (handle to use, whether to delete the single-use entry)."""
    served = handle is not None and handle.entry is not None and call.record.cache in ("hit", "join")
    if not served:
        if match.single_use and handle is not None:
            # The prefetch did not deliver: this call goes upstream, and its own sampled
            # answer must not be stored as if it were a deterministic one.
            handle.release()
            return None, False
        return handle, False
    joined = match.prefetch is not None
    if joined:
        saved = (match.observed_at - match.prefetch.started) * 1000.0 if match.prefetch else 0.0
    else:
        assert match.landed is not None
        saved = match.landed.latency_ms - (call.record.total_ms or 0.0)
    call.record.prefetch_joined = True
    state.speculator.record_hit(joined=joined, saved_ms=saved)
    return handle, match.single_use


def _lookup(port: Port, state: SpeculationState, call: Call) -> Any:
    observed = _match_for(state, call)
    if observed is None:
        return port.lookup(call)
    match, wasted = observed
    for item in wasted:
        if item.single_use:
            _discard(item.cache, item.cache_key)
    if match is not None and match.prefetch is not None and call.stream:
        # Streams do not join in the cache; wait on the prefetch's flight, then replay it.
        flight = match.cache.flights.begin(match.cache_key)
        if flight.leader:
            flight.fail()
        else:
            flight.wait(call.timeout.read)
    handle = port.lookup(call)
    if match is not None:
        handle, discard = _settle(state, call, match, handle)
        if discard:
            _discard(match.cache, match.cache_key)
    _chain(port, state, call, handle)
    return handle


async def _alookup(port: Port, state: SpeculationState, call: Call) -> Any:
    observed = _match_for(state, call)
    if observed is None:
        return await port.lookup(call)
    match, wasted = observed
    for item in wasted:
        if item.single_use:
            await _adiscard(item.cache, item.cache_key)
    if match is not None and match.prefetch is not None and call.stream:
        flight = match.cache.aflights.begin(match.cache_key)
        if flight.leader:
            flight.fail()
        else:
            await flight.wait(call.timeout.read)
    handle = await port.lookup(call)
    if match is not None:
        handle, discard = _settle(state, call, match, handle)
        if discard:
            await _adiscard(match.cache, match.cache_key)
    _chain(port, state, call, handle)
    return handle


def _chain(port: Port, state: SpeculationState, call: Call, handle: Any) -> None:
    """An answer served from the cache plans the next prefetches too (the client's ``_after``
    runs only for answers that came from the server)."""
    if call.options.prefetch and handle is not None and handle.entry is not None:
        # the cache (sqlite3, backends): loaded when speculation meets a cache
        from ..cache import replay_response

        after_call(port, state, call, replay_response(handle.entry))


def _discard(cache: Any, key: str) -> None:
    try:
        cache.backend.delete(key)
    except Exception:
        log.warning("speculation: could not delete single-use entry %s", key, exc_info=True)


async def _adiscard(cache: Any, key: str) -> None:
    adelete = getattr(cache.backend, "adelete", None)
    try:
        if adelete is not None:
            await adelete(key)
        else:
            cache.backend.delete(key)
    except Exception:
        log.warning("speculation: could not delete single-use entry %s", key, exc_info=True)


# -- after: plan and start prefetches -----------------------------------------------------

def after_call(port: Port, state: SpeculationState, call: Call, value: Mapping[str, Any]) -> None:
    """An answer arrived: plan follow-ups and start them in the background. Never raises."""
    try:
        _after(port, state, call, value)
    except Exception:
        log.warning("speculation: planning failed (trace_id=%s)", call.trace.trace_id, exc_info=True)


def _on_stream_complete(port: Port, state: SpeculationState, prior: Any) -> Any:

    def complete(call: Call, chunks: list[dict[str, Any]]) -> None:
        if prior is not None:
            prior(call, chunks)
        try:
            # the cache (sqlite3, backends): loaded when speculation meets a cache
            from ..cache import merge_chunks

            answer = merge_chunks("chat.completions", chunks)
        except Exception:
            log.warning("speculation: could not read the finished stream (trace_id=%s)",
                        call.trace.trace_id, exc_info=True)
            return
        after_call(port, state, call, answer)

    return complete


def _after(port: Port, state: SpeculationState, call: Call, value: Mapping[str, Any]) -> None:
    if not call.options.prefetch or call.body is None or call.path != CHAT_PATH or is_prefetch_call(call):
        return
    if state.closed:
        return
    if call.options.cache is False and call.options.prefetch != "prefix":
        state.refuse("cache disabled for this call")
        return
    if time.monotonic() < state.backoff_until:
        state.refuse("server asked to back off (429)")
        return
    body = dict(call.body)
    body.pop("stream", None)
    body.pop("stream_options", None)
    for prefetch in state.speculator.plan(body, value, call.options.prefetch):
        state.note_in_flight()
        try:
            _start(port, state, call, prefetch)
        except Exception as exc:
            state.speculator.done(prefetch, tokens=None, error=exc)


def _start(port: Port, state: SpeculationState, origin: Call, prefetch: Prefetch) -> None:
    pcall = _build_prefetch_call(port, state, origin, prefetch)
    if port.is_async:
        _start_async(port, state, origin, prefetch, pcall)
    else:
        _start_sync(port, state, origin, prefetch, pcall)


def _claim(port: Port, state: SpeculationState, prefetch: Prefetch, pcall: Call) -> tuple[Any, _Claim, Any] | None:
    """Lead the prefetch's single-flight now, before the app can ask: its identical call joins."""
    cache = port.cache_for(pcall)
    plan = cache.plan(pcall) if cache is not None else None
    if plan is None:
        state.refuse("no cache plan for the prefetch")
        state.speculator.done(prefetch, tokens=0, error=None)
        return None
    flight = cache.aflights.begin(plan.key) if port.is_async else cache.flights.begin(plan.key)
    if not flight.leader:
        state.refuse("already in flight")
        state.speculator.done(prefetch, tokens=0, error=None)
        return None
    claim = _Claim(plan.key, _single_use(port, pcall.body or {}), cache, pcall.scope)
    with state._lock:
        state.claims[(pcall.scope, prefetch.key)] = claim
    prefetch.token.on_cancel(flight.fail)
    return plan, claim, flight


def _start_sync(port: Port, state: SpeculationState, origin: Call, prefetch: Prefetch, pcall: Call) -> None:
    if prefetch.kind == "warm":
        run_in_thread(state.speculator, prefetch, lambda p: _send_warm(port, state, origin, pcall))
        return
    claimed = _claim(port, state, prefetch, pcall)
    if claimed is not None:
        plan, claim, flight = claimed
        run_in_thread(state.speculator, prefetch,
                      lambda p: _send_followup(port, state, origin, p, pcall, plan, claim, flight))


def _start_async(port: Port, state: SpeculationState, origin: Call, prefetch: Prefetch,
                 pcall: Call) -> None:
    if prefetch.kind == "warm":
        run_in_task(state.speculator, prefetch, lambda p: _asend_warm(port, state, origin, pcall))
        return
    claimed = _claim(port, state, prefetch, pcall)
    if claimed is not None:
        plan, claim, flight = claimed
        run_in_task(state.speculator, prefetch,
                    lambda p: _asend_followup(port, state, origin, p, pcall, plan, claim, flight))


def _send_followup(port: Port, state: SpeculationState, origin: Call, prefetch: Prefetch,
                   pcall: Call, plan: Any, claim: _Claim, flight: Any) -> int:
    started = time.perf_counter()
    chunks: list[dict[str, Any]] = []
    resolved = False
    try:
        if prefetch.token.cancelled:
            return 0
        stream = port.request(pcall, _identity, False, _identity)
        it = iter(stream)
        try:
            for chunk in it:
                chunks.append(chunk)
                if prefetch.token.cancelled:
                    break  # closing below resets the stream: the server stops generating
        finally:
            close = getattr(it, "close", None)
            if close is not None:
                close()
            stream.close()
        tokens = _completion_tokens(chunks)
        if prefetch.token.cancelled:
            state.speculator.note_wasted(tokens)
            _otel.prefetch_wasted(1)
            return tokens
        entry = type(claim.cache).entry_for_stream(plan, chunks)
        if entry is not None:
            flight.resolve(entry)
            resolved = True
            state.land(prefetch, claim, tokens, (time.perf_counter() - started) * 1000.0)
        return tokens
    except Exception as exc:
        raise _failure(state, pcall, origin.trace.trace_id, exc) from exc
    finally:
        if not resolved:
            flight.fail()
            state.unclaim(prefetch, pcall.scope)


async def _asend_followup(port: Port, state: SpeculationState, origin: Call, prefetch: Prefetch,
                          pcall: Call, plan: Any, claim: _Claim, flight: Any) -> int:
    started = time.perf_counter()
    chunks: list[dict[str, Any]] = []
    resolved = False
    try:
        stream = await port.request(pcall, _identity, False, _identity)
        try:
            async for chunk in stream:
                chunks.append(chunk)
        finally:
            await stream.close()
        tokens = _completion_tokens(chunks)
        entry = type(claim.cache).entry_for_stream(plan, chunks)
        if entry is not None:
            flight.resolve(entry)
            resolved = True
            state.land(prefetch, claim, tokens, (time.perf_counter() - started) * 1000.0)
        return tokens
    except asyncio.CancelledError:
        # The task is cancelled mid-stream; the stream's own cleanup resets it (RST_STREAM).
        state.speculator.note_wasted(_completion_tokens(chunks))
        _otel.prefetch_wasted(1)
        raise
    except Exception as exc:
        raise _failure(state, pcall, origin.trace.trace_id, exc) from exc
    finally:
        if not resolved:
            flight.fail()
            state.unclaim(prefetch, pcall.scope)


def _warm_tokens(value: Mapping[str, Any]) -> int:
    usage = value.get("usage") or {}
    return int(usage.get("completion_tokens") or 0)


def _send_warm(port: Port, state: SpeculationState, origin: Call, wcall: Call) -> int:
    try:
        return _warm_tokens(port.request(wcall, _identity))
    except Exception as exc:
        raise _failure(state, wcall, origin.trace.trace_id, exc) from exc


async def _asend_warm(port: Port, state: SpeculationState, origin: Call, wcall: Call) -> int:
    try:
        return _warm_tokens(await port.request(wcall, _identity))
    except Exception as exc:
        raise _failure(state, wcall, origin.trace.trace_id, exc) from exc


# -- client.warm(...) ----------------------------------------------------------------------

def _warm_call(port: Port, state: SpeculationState, args: dict[str, Any]) -> Call:
    extra_headers = args.get("extra_headers") or {}
    params = {k: v for k, v in args.items() if k not in ("extra_headers", "extra_query", "extra_body", "timeout")}
    body, _ = port.split(params)
    body = warm_request(body)
    options = port.options(cache=False, prefetch=None, images=None, wire=port.defaults.wire)
    headers = {**dict(extra_headers), **{k.lower(): str(v) for k, v in state.config.headers.items()},
               PREFETCH_HEADER: "warm"}
    if state.config.priority:
        headers[PRIORITY_HEADER] = state.config.priority
    call = port.build("POST", CHAT_PATH, body, options=options, extra_headers=headers,
                              extra_query=args.get("extra_query"), extra_body=args.get("extra_body"),
                              timeout=args.get("timeout", NOT_GIVEN))
    return call


def _keep_warm_ttl(state: SpeculationState, keep_warm: bool | float) -> float | None:
    if keep_warm is False or keep_warm is None:
        return None
    if keep_warm is True:
        return PROVIDER_CACHE_TTL_S[state.config.provider]
    if isinstance(keep_warm, (int, float)) and keep_warm > 0:
        return float(keep_warm)
    raise ValueError(f"keep_warm must be False, True or the provider cache's TTL in seconds (> 0), got {keep_warm!r}")


def _count_warm(state: SpeculationState) -> None:
    with state.speculator._lock:
        state.speculator.stats.warmups += 1


def _keeper(state: SpeculationState, args: dict[str, Any], ttl: float) -> _KeepWarm:
    messages = list(args.get("messages") or [])
    return _KeepWarm(dict(args), len(messages), conversation_id(messages), refresh_interval(ttl),
                     time.monotonic())


def warm(port: Port, state: SpeculationState, keep_warm: bool | float, args: dict[str, Any]) -> Any:
    """``client.warm(...)``: send the prefix now (raises on failure); maybe keep it warm."""
    ttl = _keep_warm_ttl(state, keep_warm)
    result = port.request(_warm_call(port, state, args), port.chat_completion)
    _count_warm(state)
    if ttl is not None:
        keeper = _keeper(state, args, ttl)
        keeper.runner = threading.Thread(target=_refresh_loop, args=(port, state, keeper),
                                         name="llmclient-keep-warm", daemon=True)
        with state._lock:
            state.keepers.append(keeper)
        keeper.runner.start()
    return result


async def awarm(port: Port, state: SpeculationState, keep_warm: bool | float, args: dict[str, Any]) -> Any:
    ttl = _keep_warm_ttl(state, keep_warm)
    result = await port.request(_warm_call(port, state, args), port.chat_completion)
    _count_warm(state)
    if ttl is not None:
        keeper = _keeper(state, args, ttl)
        keeper.runner = asyncio.get_running_loop().create_task(_arefresh_loop(port, state, keeper))
        with state._lock:
            state.keepers.append(keeper)
    return result



def _next_wait(keeper: _KeepWarm) -> float:
    # The app's own calls with this prefix refresh the provider's cache too (observe notes them).
    return max(0.0, keeper.last_used + keeper.interval_s - time.monotonic())


def _refresh_loop(port: Port, state: SpeculationState, keeper: _KeepWarm) -> None:
    while not keeper.stop.wait(_next_wait(keeper)):
        if time.monotonic() - keeper.last_used < keeper.interval_s:
            continue
        keeper.last_used = time.monotonic()
        try:
            port.request(_warm_call(port, state, keeper.call_args), _identity)
            _count_warm(state)
        except Exception as exc:
            _refresh_failed(state, exc)


async def _arefresh_loop(port: Port, state: SpeculationState, keeper: _KeepWarm) -> None:
    while not keeper.stop.is_set():
        await asyncio.sleep(_next_wait(keeper))
        if keeper.stop.is_set():
            return
        if time.monotonic() - keeper.last_used < keeper.interval_s:
            continue
        keeper.last_used = time.monotonic()
        try:
            await port.request(_warm_call(port, state, keeper.call_args), _identity)
            _count_warm(state)
        except Exception as exc:
            _refresh_failed(state, exc)


def _refresh_failed(state: SpeculationState, exc: BaseException) -> None:
    with state.speculator._lock:
        state.speculator.stats.errors += 1
    log.warning("speculation: keep-warm refresh failed: %s: %s (trace_id=%s)", type(exc).__name__,
                redact_text(str(exc)), getattr(exc, "trace_id", None))


# -- close ---------------------------------------------------------------------------------

def _stop(state: SpeculationState) -> list[_KeepWarm]:
    state.closed = True
    with state._lock:
        keepers, state.keepers = state.keepers, []
    for keeper in keepers:
        keeper.stop.set()
    state.speculator.cancel_all()
    return keepers


def close(state: SpeculationState) -> None:
    """Stop keep-warm timers and cancel prefetches in flight (``client.close()``)."""
    for keeper in _stop(state):
        if isinstance(keeper.runner, threading.Thread) and keeper.runner is not threading.current_thread():
            keeper.runner.join(timeout=5.0)  # a refresh in progress finishes (its own timeout bounds it)


async def aclose(state: SpeculationState) -> None:
    for keeper in _stop(state):
        task = keeper.runner
        if isinstance(task, asyncio.Task) and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
