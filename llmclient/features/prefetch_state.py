"""Speculation's state and decisions, without I/O: the per-client config and state, the
prefetch and warm-up calls built from an app call, the match of an app call to a prefetch, and
what follows an answer (``features/prefetch.py`` tells the whole story; the sends and waits, of
each kind, are ``features/_async/prefetch.py`` and its generated sync twin).
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
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
    "SpeculationConfig",
    "SpeculationState",
    "Start",
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
CLOSE_WAIT_S = 5.0  # how long close() waits for a keep-warm refresh in progress

# How a client kind starts one planned prefetch in the background (``_start_sync`` or
# ``_start_async``, ``features/_async/prefetch.py``): port, state, the app call, the prefetch.
Start = Callable[["Port", "SpeculationState", Call, Prefetch], None]


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
    stop: Any  # an Event (sync client) or AsyncEvent (async): set by close
    runner: Any = None  # a Background (sync client) or AsyncBackground (async)


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

    def claim(self, prefetch: Prefetch, claim: _Claim) -> None:
        with self._lock:
            self.claims[(claim.scope, prefetch.key)] = claim

    def keep(self, keeper: _KeepWarm) -> None:
        with self._lock:
            self.keepers.append(keeper)

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


def _chain(port: Port, state: SpeculationState, call: Call, handle: Any, start: Start) -> None:
    """An answer served from the cache plans the next prefetches too (the cache layer's ``after``
    runs only for answers that came from the server)."""
    if call.options.prefetch and handle is not None and handle.entry is not None:
        # the cache (sqlite3, backends): loaded when speculation meets a cache
        from ..cache import replay_response

        after_call(port, state, call, replay_response(handle.entry), start)


# -- after: plan and start prefetches -----------------------------------------------------

def after_call(port: Port, state: SpeculationState, call: Call, value: Mapping[str, Any],
               start: Start) -> None:
    """An answer arrived: plan follow-ups and ``start`` them in the background. Never raises."""
    try:
        _after(port, state, call, value, start)
    except Exception:
        log.warning("speculation: planning failed (trace_id=%s)", call.trace.trace_id, exc_info=True)


def _on_stream_complete(port: Port, state: SpeculationState, prior: Any, start: Start) -> Any:

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
        after_call(port, state, call, answer, start)

    return complete


def _after(port: Port, state: SpeculationState, call: Call, value: Mapping[str, Any], start: Start) -> None:
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
            start(port, state, call, prefetch)
        except Exception as exc:
            state.speculator.done(prefetch, tokens=None, error=exc)


def _warm_tokens(value: Mapping[str, Any]) -> int:
    usage = value.get("usage") or {}
    return int(usage.get("completion_tokens") or 0)


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
    call = port.build("POST", port.chat_path, body, options=options, extra_headers=headers,
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


def _keeper(args: dict[str, Any], ttl: float, stop: Any) -> _KeepWarm:
    messages = list(args.get("messages") or [])
    return _KeepWarm(dict(args), len(messages), conversation_id(messages), refresh_interval(ttl),
                     time.monotonic(), stop)



def _next_wait(keeper: _KeepWarm) -> float:
    # The app's own calls with this prefix refresh the provider's cache too (observe notes them).
    return max(0.0, keeper.last_used + keeper.interval_s - time.monotonic())


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
