"""OpenTelemetry spans and metrics for llmclient's calls (the ``otel`` extra: the API only).

Nothing here imports OpenTelemetry. A call is instrumented only when the application has
imported it *and* configured a provider: :func:`start` looks for ``opentelemetry.trace`` /
``opentelemetry.metrics`` in ``sys.modules`` and checks that ``get_tracer_provider()`` /
``get_meter_provider()`` is not the API's default proxy or no-op one. Otherwise it returns
None and the call pays one dictionary lookup. ``OTEL_PYTHON_DISABLED_INSTRUMENTATIONS=llmclient``
(read at import) turns llmclient's telemetry off where the application's stays on.

A span the sampler drops still gives the call its trace context (sent, flagged not sampled)
but skips the attributes and events at its end. Counters are tallied in the process and read
by the SDK when it collects (observable counters), so counting costs no SDK work per call;
histograms are recorded per call, as the API requires.

**Spans** follow the OpenTelemetry GenAI semantic conventions
(https://opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-spans/): one CLIENT span per call,
named ``"{gen_ai.operation.name} {gen_ai.request.model}"``, with ``gen_ai.operation.name``,
``gen_ai.provider.name`` (the current name of ``gen_ai.system``), ``gen_ai.request.*`` parameters,
``gen_ai.response.id`` / ``model`` / ``finish_reasons``, ``gen_ai.usage.input_tokens`` /
``output_tokens``, ``server.address`` / ``server.port`` and ``error.type``; llmclient's own
facts under ``llmclient.*`` (:data:`ATTRIBUTES`), and the events ``llmclient.first_byte`` and
``llmclient.first_token``. Prompts and answers are never recorded (the conventions' content
capture is opt-in; llmclient has no switch for it).

The span *is* the call's trace context: its trace id and span id become the call's
``TraceContext``, so the ``traceparent`` sent, ``X-Request-ID``, ``response.trace_id``,
the logs and the span agree. Its parent is the caller's ``traceparent`` header, else the
active span; with neither it is a root, and its trace id comes from the SDK's id generator.

A stream's span ends when the stream does: read to its end, cut (an error), or closed early
(``llmclient.stream.closed_early``, not an error). A prefetch (``x-llm-prefetch``) is its own
span, a child of the call that caused it and linked to it; so is a hedge copy
(``llmclient.hedge.copy``), ended when its race is decided.

**Metrics** (:data:`METRICS`): the GenAI client histograms plus llmclient's counters.

Telemetry never fails a call: an exception from the SDK (a span processor that raises, an
exporter that is down) is logged once at debug level and the call goes on.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any
from urllib.parse import urlsplit

import orjson

from .._errors import OpenAIError
from .._logging import get_logger
from .._redact import redact_text
from .._version import __version__
from ..pipeline.tracing import TraceContext

__all__ = ["ATTRIBUTES", "METRICS", "CallSpan", "WsResponseSpan", "hedge_copy", "hedge_copy_done",
           "prefetch_wasted", "resume_end", "resume_start", "start", "stream_end", "ws_connection_end",
           "ws_connection_span", "ws_response_start"]

log = get_logger("llmclient.otel")

# The documented metrics: name -> (instrument, unit, what it measures).
METRICS: dict[str, tuple[str, str, str]] = {
    "gen_ai.client.operation.duration": (
        "histogram", "s", "call duration, from create() to the last byte (GenAI semconv)"),
    "gen_ai.client.token.usage": (
        "histogram", "{token}", "input and output tokens per call, gen_ai.token.type (GenAI semconv)"),
    "gen_ai.client.operation.time_to_first_chunk": (
        "histogram", "s", "streams: time to the first chunk with a token, i.e. TTFT (GenAI semconv)"),
    "llmclient.time_per_output_token": (
        "histogram", "s", "streams: (last byte - first token) / (output tokens - 1)"),
    "llmclient.cache.lookups": (
        "counter", "{lookup}", "response-cache lookups, llmclient.cache.result = hit|miss|join"),
    "llmclient.hedge.copies": ("counter", "{request}", "hedged requests: second copies sent"),
    "llmclient.hedge.wins": ("counter", "{request}", "second copies that answered first"),
    "llmclient.retries": ("counter", "{retry}", "retried attempts (free re-sends included)"),
    "llmclient.prefetch.requests": (
        "counter", "{request}",
        "speculative requests, llmclient.prefetch.outcome = sent|used|wasted"),
}

# llmclient's own span attributes (the GenAI ones are the conventions').
ATTRIBUTES: dict[str, str] = {
    "llmclient.stream": "the call was streamed",
    "llmclient.cache": "hit | miss | join (another identical call or a prefetch in flight)",
    "llmclient.prefetch": "this span is a prefetch ('1') or a prefix warm-up ('warm')",
    "llmclient.prefetch.joined": "the answer came from a prefetch",
    "llmclient.hedge.sent": "a second copy of the call was sent",
    "llmclient.hedge.winner": "primary | copy",
    "llmclient.hedge.copy": "this span is a hedge copy",
    "llmclient.hedge.won": "on a copy's span: it answered first",
    "llmclient.wire": "json | protobuf",
    "llmclient.request.encoding": "the request body's Content-Encoding (zstd, gzip)",
    "llmclient.http.version": "HTTP/1.1 | HTTP/2",
    "llmclient.connection.reused": "the call ran on a connection opened earlier",
    "llmclient.pool_wait_ms": "ms the last attempt waited for a connection (set when it waited)",
    "llmclient.retries": "retried attempts",
    "llmclient.stream.closed_early": "the caller closed the stream before its end",
    "llmclient.resume.step": "on a resume's span: resume (background, from an event) | resend | continue",
    "llmclient.resume.attempt": "on a resume's span: 1 for the stream's first resume, 2 for the next",
}

_OPERATIONS = {"/chat/completions": "chat", "/completions": "text_completion",
               "/embeddings": "embeddings", "/v1/messages": "chat"}
# The API shape a path speaks, where it is not OpenAI's (the conventions' well-known values:
# https://opentelemetry.io/docs/specs/semconv/gen-ai/, gen_ai.provider.name, read 2026-12-07).
_PROVIDERS = {"/v1/messages": "anthropic"}
# create() parameter -> GenAI request attribute.
_REQUEST_PARAMS = (
    ("max_tokens", "gen_ai.request.max_tokens"),
    ("max_completion_tokens", "gen_ai.request.max_tokens"),
    ("temperature", "gen_ai.request.temperature"),
    ("top_p", "gen_ai.request.top_p"),
    ("frequency_penalty", "gen_ai.request.frequency_penalty"),
    ("presence_penalty", "gen_ai.request.presence_penalty"),
    ("seed", "gen_ai.request.seed"),
)
_PROVIDER = "openai"  # the API shape spoken; the conventions' value for OpenAI-compatible APIs
_PREFETCH_HEADER = "x-llm-prefetch"  # llmclient.features.prefetch.PREFETCH_HEADER (not imported: heavy)


class _Instruments:
    """The tracer and metric instruments of one (tracer provider, meter provider) pair."""

    def __init__(self, tracer_provider: Any, meter_provider: Any) -> None:
        self.tracer_provider = tracer_provider
        self.meter_provider = meter_provider
        trace: Any = sys.modules.get("opentelemetry.trace")
        self.trace = trace
        self.tracer = (tracer_provider.get_tracer("llmclient", _version())
                       if tracer_provider is not None else None)
        self.on = self.tracer is not None or meter_provider is not None
        if meter_provider is None:
            return
        meter = meter_provider.get_meter("llmclient", _version())
        made: dict[str, Any] = {}
        for name, (kind, unit, what) in METRICS.items():
            if kind == "histogram":
                made[name] = meter.create_histogram(name, unit=unit, description=what)
            else:
                tally = made[name] = _Tally()
                meter.create_observable_counter(name, callbacks=[tally.observe], unit=unit,
                                                description=what)
        self.duration = made["gen_ai.client.operation.duration"]
        self.tokens = made["gen_ai.client.token.usage"]
        self.ttft = made["gen_ai.client.operation.time_to_first_chunk"]
        self.tpot = made["llmclient.time_per_output_token"]
        self.cache: _Tally = made["llmclient.cache.lookups"]
        self.hedges: _Tally = made["llmclient.hedge.copies"]
        self.hedge_wins: _Tally = made["llmclient.hedge.wins"]
        self.retries: _Tally = made["llmclient.retries"]
        self.prefetch: _Tally = made["llmclient.prefetch.requests"]


class _Tally:
    """A monotonic count kept in the process and reported by an ObservableCounter when the
    SDK collects. Counting is a dictionary update under a lock; a synchronous ``Counter.add``
    would have the SDK clean, hash and aggregate its attributes on every call instead."""

    __slots__ = ("counts", "lock")

    def __init__(self) -> None:
        self.counts: dict[tuple[tuple[str, str], ...], int] = {}
        self.lock = threading.Lock()

    def add(self, amount: int, attributes: dict[str, str] | None = None) -> None:
        key = tuple(attributes.items()) if attributes else ()
        with self.lock:
            self.counts[key] = self.counts.get(key, 0) + amount

    def observe(self, options: Any = None) -> list[Any]:
        metrics: Any = sys.modules["opentelemetry.metrics"]
        with self.lock:
            counts = list(self.counts.items())
        return [metrics.Observation(total, dict(key)) for key, total in counts]


def _version() -> str:
    return __version__


_cache: list[Any] = [None, None, None]  # tracer provider, meter provider, _Instruments | None
_failed: set[str] = set()


def _disabled() -> bool:
    """OpenTelemetry's own switch: ``OTEL_PYTHON_DISABLED_INSTRUMENTATIONS`` naming
    ``llmclient`` (a comma-separated list, as auto-instrumentation reads it) turns llmclient's
    spans and metrics off while the application's own telemetry stays on."""
    names = os.environ.get("OTEL_PYTHON_DISABLED_INSTRUMENTATIONS", "")
    return "llmclient" in {name.strip() for name in names.split(",")}


_DISABLED = _disabled()


def _instruments() -> _Instruments | None:
    """The configured providers' instruments, or None when neither is configured."""
    if _DISABLED:
        return None
    modules = sys.modules
    trace: Any = modules.get("opentelemetry.trace")
    metrics: Any = modules.get("opentelemetry.metrics")
    if trace is None and metrics is None:
        return None
    try:
        tp = trace.get_tracer_provider() if trace is not None else None
        mp = metrics.get_meter_provider() if metrics is not None else None
    except AttributeError:
        # Another thread is importing OpenTelemetry right now (redis-py's Redis thread imports
        # it, say): sys.modules holds the module half made. This call goes without a span.
        return None
    cached = _cache
    if cached[0] is tp and cached[1] is mp:
        return cached[2]
    inst = None
    try:
        real_tp = tp if tp is not None and not isinstance(
            tp, (trace.ProxyTracerProvider, trace.NoOpTracerProvider)) else None
        real_mp = mp if mp is not None and not isinstance(
            mp, (metrics._internal._ProxyMeterProvider, metrics.NoOpMeterProvider)) else None
        if real_tp is not None or real_mp is not None:
            inst = _Instruments(real_tp, real_mp)
    except Exception:
        _log_once("setup")
        inst = None
    cached[0], cached[1], cached[2] = tp, mp, inst
    return inst


def _log_once(where: str) -> None:
    if where not in _failed:
        _failed.add(where)
        log.debug("OpenTelemetry %s failed; calls go on without it", where, exc_info=True)


# Spans alive now, by id(call): a stream's span ends after _request returns, a hedge copy's
# span needs its call's. The Call is kept too, so that its id cannot be reused meanwhile.
_live: dict[int, tuple[Any, CallSpan]] = {}


def start(call: Any) -> CallSpan | None:
    """The call's span and metrics state, or None (OpenTelemetry not configured, or a call
    that is not a GenAI operation). Rewrites the call's trace context to the span's."""
    inst = _instruments()
    if inst is None:
        return None
    operation = _OPERATIONS.get(call.path)
    if operation is None or call.body is None:
        return None
    try:
        state = CallSpan(inst, call, operation)
    except Exception:
        _log_once("span start")
        return None
    _live[id(call)] = (call, state)
    return state


class CallSpan:
    """One call's span (None when only metrics are configured) and what its end records."""

    __slots__ = ("attrs", "chunk_info", "ended", "inst", "kind", "model", "operation", "provider", "recording",
                 "span", "start_ns", "stream", "value")

    def __init__(self, inst: _Instruments, call: Any, operation: str, kind: str = "call",
                 parent: Any = None) -> None:
        self.inst = inst
        self.operation = operation
        self.kind = kind  # call | prefetch | hedge
        body = call.body
        self.model = str(body.get("model") or "")
        self.ended = False
        self.stream = False  # handed to a Stream: ends with it
        self.value: dict[str, Any] | None = None
        self.chunk_info: list[Any] | None = None  # id, model, finish reasons, usage
        self.start_ns = time.time_ns()
        self.provider = _PROVIDERS.get(call.path, _PROVIDER)
        self.attrs = _metric_attrs(operation, self.model, None, self.provider)
        self.span = None
        self.recording = False  # a sampled span: worth its end attributes and events
        tracer = inst.tracer
        if tracer is None:
            return
        host, port = _server(call.base_url)
        attributes = {**self.attrs, "server.address": host, "server.port": port}
        if call.stream:
            attributes["llmclient.stream"] = True
        for param, name in _REQUEST_PARAMS:
            value = body.get(param)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                attributes[name] = value
        n = body.get("n")
        if isinstance(n, int) and n != 1:
            attributes["gen_ai.request.choice.count"] = n
        stop = body.get("stop") or body.get("stop_sequences")  # Anthropic's name
        if stop:
            attributes["gen_ai.request.stop_sequences"] = [stop] if isinstance(stop, str) else list(stop)
        prefetch = call.headers.get(_PREFETCH_HEADER)
        if prefetch is not None and kind == "call":
            self.kind = "prefetch"
            attributes["llmclient.prefetch"] = prefetch
        trace = inst.trace
        links: tuple[Any, ...] = ()
        if parent is not None:  # a hedge copy: the call's span is its parent and link
            context = trace.set_span_in_context(parent)
            links = (trace.Link(parent.get_span_context(), {"llmclient.link": "hedge_of"}),)
            attributes["llmclient.hedge.copy"] = True
        else:
            context = _parent_context(trace, call.trace)
            if self.kind == "prefetch" and context is not None:
                parent_ctx = trace.get_current_span(context).get_span_context()
                links = (trace.Link(parent_ctx, {"llmclient.link": "prefetch_of"}),)
        span = tracer.start_span(f"{operation} {self.model}", context=context,
                                 kind=trace.SpanKind.CLIENT, attributes=attributes, links=links,
                                 start_time=self.start_ns)
        self.span = span
        self.recording = span.is_recording()
        _adopt_span_context(call, span.get_span_context())

    # -- what the answer says ----------------------------------------------------------------

    def wrap(self, make: Any, stream_make: Any) -> tuple[Any, Any]:
        """``make`` / ``stream_make`` that also note what the answer says (id, model, finish
        reasons, usage) for the span and the token metrics."""

        def seen(value: dict[str, Any]) -> Any:
            self.value = value
            return make(value)

        def chunk(obj: dict[str, Any]) -> Any:
            info = self.chunk_info
            if info is None:
                info = self.chunk_info = [obj.get("id"), obj.get("model"), [], None]
            kind = obj.get("type")
            if kind == "message_start":  # Anthropic's stream: the message, its input usage
                message = obj.get("message") or {}
                info[0], info[1], info[3] = message.get("id"), message.get("model"), message.get("usage")
            elif kind == "message_delta":  # its stop reason and output usage
                reason = (obj.get("delta") or {}).get("stop_reason")
                if reason:
                    info[2].append(reason)
                if obj.get("usage"):
                    info[3] = {**(info[3] or {}), **obj["usage"]}
                return (stream_make or make)(obj)
            for choice in obj.get("choices") or ():
                reason = choice.get("finish_reason")
                if reason:
                    info[2].append(reason)
            usage = obj.get("usage")
            if usage:
                info[3] = usage
            return (stream_make or make)(obj)

        return seen, chunk

    # -- the end -----------------------------------------------------------------------------

    def end(self, call: Any, error: BaseException | None, closed_early: bool = False) -> None:
        """End the span and record the metrics, once; never raises."""
        if self.ended:
            return
        self.ended = True
        _live.pop(id(call), None)
        try:
            self._end(call, error, closed_early)
        except Exception:
            _log_once("span end")

    def _end(self, call: Any, error: BaseException | None, closed_early: bool) -> None:
        record = call.record
        inst = self.inst
        response_id = response_model = usage = None
        reasons: list[Any] = []
        value = self.value
        if value is not None:
            response_id, response_model, usage = value.get("id"), value.get("model"), value.get("usage")
            reasons = [c.get("finish_reason") for c in value.get("choices") or ()
                       if isinstance(c, dict) and c.get("finish_reason")]
            if value.get("stop_reason"):  # an Anthropic Message
                reasons = [value["stop_reason"]]
        elif self.chunk_info is not None:
            response_id, response_model, reasons, usage = self.chunk_info
        input_tokens = output_tokens = None
        if isinstance(usage, dict):
            input_tokens = usage.get("prompt_tokens", usage.get("input_tokens"))
            output_tokens = usage.get("completion_tokens", usage.get("output_tokens"))
        error_type = _error_type(error) if error is not None else None
        end_ns = time.time_ns()
        span = self.span
        if span is not None and not self.recording:
            span.end(end_time=end_ns)  # sampled out: its context was sent, nothing to record
        elif span is not None:
            attrs: dict[str, Any] = {"llmclient.wire": record.wire}
            if response_id:
                attrs["gen_ai.response.id"] = str(response_id)
            if response_model:
                attrs["gen_ai.response.model"] = str(response_model)
            if reasons:
                attrs["gen_ai.response.finish_reasons"] = [str(r) for r in reasons]
            if isinstance(input_tokens, int):
                attrs["gen_ai.usage.input_tokens"] = input_tokens
            if isinstance(output_tokens, int):
                attrs["gen_ai.usage.output_tokens"] = output_tokens
            if record.cache is not None:
                attrs["llmclient.cache"] = record.cache
            if record.prefetch_joined:
                attrs["llmclient.prefetch.joined"] = True
            if record.hedged:
                attrs["llmclient.hedge.sent"] = True
                attrs["llmclient.hedge.winner"] = "copy" if record.hedge_won else "primary"
            if record.request_encoding:
                attrs["llmclient.request.encoding"] = record.request_encoding
            if record.http_version:
                attrs["llmclient.http.version"] = record.http_version
            if record.connection_reused is not None:
                attrs["llmclient.connection.reused"] = record.connection_reused
            if record.pool_wait_ms:
                attrs["llmclient.pool_wait_ms"] = record.pool_wait_ms
            if record.remote_address is not None:  # OTel's network conventions
                attrs["network.peer.address"] = record.remote_address
                attrs["network.type"] = (record.address_family or "").lower()
            if record.retries:
                attrs["llmclient.retries"] = record.retries
            if closed_early:
                attrs["llmclient.stream.closed_early"] = True
            if error_type is not None:
                attrs["error.type"] = error_type
            span.set_attributes(attrs)
            start = self.start_ns
            if record.first_byte_ms is not None:
                span.add_event("llmclient.first_byte",
                               timestamp=start + int(record.first_byte_ms * 1e6))
            if record.first_token_ms is not None:
                span.add_event("llmclient.first_token",
                               timestamp=start + int(record.first_token_ms * 1e6))
            if error is not None:
                trace = inst.trace
                span.set_status(trace.Status(trace.StatusCode.ERROR, _describe(error)))
            span.end(end_time=end_ns)
        if inst.meter_provider is not None and self.kind != "hedge":
            self._metrics(record, end_ns, error_type, response_model, input_tokens, output_tokens)

    def _metrics(self, record: Any, end_ns: int, error_type: str | None, response_model: Any,
                 input_tokens: Any, output_tokens: Any) -> None:
        inst = self.inst
        attrs = self.attrs
        if error_type:
            attrs = {**attrs, "error.type": error_type}
        inst.duration.record((end_ns - self.start_ns) / 1e9, attrs)
        if isinstance(input_tokens, int):
            inst.tokens.record(input_tokens, _metric_attrs(self.operation, self.model, "input", self.provider))
        if isinstance(output_tokens, int):
            inst.tokens.record(output_tokens, _metric_attrs(self.operation, self.model, "output", self.provider))
        ttft = record.first_token_ms
        if ttft is not None:
            inst.ttft.record(ttft / 1000.0, attrs)
            if isinstance(output_tokens, int) and output_tokens > 1 and record.total_ms:
                per = (record.total_ms - ttft) / 1000.0 / (output_tokens - 1)
                inst.tpot.record(max(per, 0.0), attrs)
        if record.cache is not None:
            inst.cache.add(1, {"llmclient.cache.result": record.cache})
        if record.hedge_won:
            inst.hedge_wins.add(1)
        if record.retries:
            inst.retries.add(record.retries)
        if record.prefetch_joined:
            inst.prefetch.add(1, {"llmclient.prefetch.outcome": "used"})
        if self.kind == "prefetch":
            inst.prefetch.add(1, {"llmclient.prefetch.outcome": "sent"})


def stream_end(call: Any, error: BaseException | None, complete: bool) -> None:
    """A stream closed: its span ends (``error`` if it failed, closed early if the caller
    stopped before its end)."""
    entry = _live.get(id(call))
    if entry is None:
        return
    state = entry[1]
    if complete:
        state.end(call, None)
    elif error is not None and _is_call_error(error):
        state.end(call, error)
    else:
        state.end(call, None, closed_early=True)


def hedge_copy(call: Any, copy: Any) -> None:
    """A hedge copy of ``call`` is about to be sent: its own span, a child of the call's and
    linked to it; the copy's traceparent names it."""
    entry = _live.get(id(call))
    if entry is None:
        return
    parent = entry[1]
    inst = parent.inst
    try:
        if inst.meter_provider is not None:
            inst.hedges.add(1)
        if parent.span is None:
            return
        state = CallSpan(inst, copy, parent.operation, kind="hedge", parent=parent.span)
    except Exception:
        _log_once("hedge span")
        return
    _live[id(copy)] = (copy, state)


def hedge_copy_done(copy: Any, outcome: Any) -> None:
    """The copy's race is decided: ``outcome`` is ``won`` / ``taken`` (its answer is the
    call's), ``lost``, or the exception it ended with (HedgeLost: cancelled, not an error)."""
    entry = _live.get(id(copy)) if copy is not None else None
    if entry is None:
        return
    state = entry[1]
    won = outcome in ("won", "taken")
    error = outcome if isinstance(outcome, BaseException) else None
    if error is not None and type(error).__name__ in ("HedgeLost", "CancelledError"):
        error = None
    if state.span is not None:
        try:
            state.span.set_attribute("llmclient.hedge.won", won)
        except Exception:
            _log_once("hedge span")
    state.end(copy, error)


def resume_start(call: Any, step: str, attempt: int) -> Any:
    """A cut stream goes on (``pipeline.resume``: ``step`` is resume, resend or continue): a span
    of its own, a child of the call's and linked to it, until the stream is back (None when the
    call has no span). Hand it to :func:`resume_end`."""
    entry = _live.get(id(call))
    parent = entry[1] if entry is not None else None
    if parent is None or parent.span is None or parent.inst.tracer is None:
        return None
    try:
        trace = parent.inst.trace
        link = trace.Link(parent.span.get_span_context(), {"llmclient.link": "resume_of"})
        span = parent.inst.tracer.start_span(
            f"{step} {parent.model}", context=trace.set_span_in_context(parent.span),
            kind=trace.SpanKind.CLIENT, links=(link,),
            attributes={"llmclient.resume.step": step, "llmclient.resume.attempt": attempt})
    except Exception:
        _log_once("resume span")
        return None
    return span, trace


def resume_end(handle: Any, error: BaseException | None) -> None:
    """The resume's span ends: the stream is back, or ``error`` (then the stream's error is raised)."""
    if handle is None:
        return
    span, trace = handle
    try:
        if error is not None:
            span.set_attribute("error.type", _error_type(error))
            span.set_status(trace.Status(trace.StatusCode.ERROR, _describe(error)))
        span.end()
    except Exception:
        _log_once("resume span")


def prefetch_wasted(count: int) -> None:
    """``count`` prefetched answers were dropped unused."""
    if not count:
        return
    inst = _instruments()
    if inst is None or inst.meter_provider is None:
        return
    try:
        inst.prefetch.add(count, {"llmclient.prefetch.outcome": "wasted"})
    except Exception:
        _log_once("metrics")


# -- helpers --------------------------------------------------------------------------------

# Metric attributes: what the GenAI conventions require (operation, provider, request model;
# error.type on failures) and no more. The SDK cleans and hashes every attribute of every
# measurement, so each one costs CPU on every call; server.address/port and the response model
# ("recommended") are on the span. One dict per (operation, model, token type), reused.
_attr_sets: dict[tuple[str, str, str | None, str], dict[str, Any]] = {}


def _metric_attrs(operation: str, model: str, token_type: str | None = None,
                  provider: str = _PROVIDER) -> dict[str, Any]:
    key = (operation, model, token_type, provider)
    found = _attr_sets.get(key)
    if found is None:
        if len(_attr_sets) > 4096:
            _attr_sets.clear()
        found = {"gen_ai.operation.name": operation, "gen_ai.provider.name": provider,
                 "gen_ai.request.model": model}
        if token_type is not None:
            found["gen_ai.token.type"] = token_type
        _attr_sets[key] = found
    return found


_servers: dict[str, tuple[str, int]] = {}


def _server(base_url: str) -> tuple[str, int]:
    found = _servers.get(base_url)
    if found is None:
        parts = urlsplit(base_url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        found = _servers[base_url] = (parts.hostname or "", port)
    return found


def _parent_context(trace: Any, ctx: TraceContext) -> Any:
    """The span's parent: the active span when the call's trace context came from it, else
    the caller's traceparent as a remote parent; None (a root) when there is neither."""
    if ctx.parent_span_id is None:
        return None  # no valid active span either (new_trace_context looked): a root
    current = trace.get_current_span().get_span_context()
    if current.is_valid and f"{current.span_id:016x}" == ctx.parent_span_id:
        return None  # the active context: its span is the parent
    remote = trace.SpanContext(int(ctx.trace_id, 16), int(ctx.parent_span_id, 16), is_remote=True,
                               trace_flags=trace.TraceFlags(int(ctx.flags, 16)))
    return trace.set_span_in_context(trace.NonRecordingSpan(remote))


def _span_trace(old: TraceContext, sc: Any) -> TraceContext:
    """``old`` (a call's or a response's trace context) as the span ``sc`` names it."""
    return TraceContext(f"{sc.trace_id:032x}", f"{sc.span_id:016x}", old.parent_span_id,
                        f"{int(sc.trace_flags) & 0x01:02x}", old.tracestate)


def _adopt_span_context(call: Any, sc: Any) -> None:
    """The call's trace context becomes the span's (so traceparent names the span)."""
    if not sc.is_valid:
        return
    old = call.trace
    new = _span_trace(old, sc)
    call.trace = new
    headers = call.headers
    headers["traceparent"] = new.traceparent
    if headers.get("x-request-id") == old.request_id:  # ours, not the caller's own
        headers["x-request-id"] = new.request_id


def _error_type(error: BaseException) -> str:
    status = getattr(error, "status_code", None)
    if isinstance(status, int):
        return str(status)  # the conventions' choice for HTTP failures
    return type(error).__qualname__


def _describe(error: BaseException) -> str:
    return redact_text(str(error))[:200]


def _is_call_error(error: BaseException) -> bool:
    return isinstance(error, OpenAIError)


# -- the Responses WebSocket mode ----------------------------------------------------------------
# One span per connection the app holds (``websocket {host}``, from connect() to close; on a
# socket an earlier conversation of the client left, ``llmclient.websocket.reused``), and one
# CLIENT span per response on it (``chat {model}``, from its response.create to its last event
# or its loss), linked to the socket's span: the response's parent is the caller's
# ``traceparent`` (the connect() headers) or the active span, as for an HTTP call, since one
# socket carries responses of many traces. The response's trace context is its span's.


def ws_connection_span(url: str, reused: bool = False) -> Any:
    """The connection's span, or None (no tracer configured); never raises."""
    inst = _instruments()
    if inst is None or inst.tracer is None:
        return None
    try:
        host, port = _server(url)
        return inst.tracer.start_span(
            f"websocket {host}", kind=inst.trace.SpanKind.CLIENT,
            attributes={"server.address": host, "server.port": port, "gen_ai.provider.name": _PROVIDER,
                        "llmclient.websocket": True, "llmclient.websocket.reused": reused})
    except Exception:
        _log_once("websocket span start")
        return None


def ws_connection_end(span: Any, responses: int) -> None:
    """End the socket's span, with how many responses it carried."""
    if span is None:
        return
    try:
        span.set_attribute("llmclient.websocket.responses", responses)
        span.end()
    except Exception:
        _log_once("websocket span end")


class WsResponseSpan:
    """One response's span on a socket; :meth:`end` once, with its last event or its error."""

    __slots__ = ("attrs", "ended", "inst", "model", "span", "start_ns")

    def __init__(self, inst: _Instruments, span: Any, model: str, attrs: dict[str, Any], start_ns: int) -> None:
        self.inst, self.span, self.model, self.attrs, self.start_ns = inst, span, model, attrs, start_ns
        self.ended = False

    def end(self, last: dict[str, Any] | None, error: BaseException | None = None,
            closed_early: bool = False, first_token_ms: float | None = None) -> None:
        """End it with the response's terminal event ``last`` (``response.completed``, ``.failed``,
        ``.incomplete``, an ``error`` event), or ``error`` (the socket lost, a stall)."""
        if self.ended:
            return
        self.ended = True
        try:
            self._end(last, error, closed_early, first_token_ms)
        except Exception:
            _log_once("websocket response span end")

    def _end(self, last: dict[str, Any] | None, error: BaseException | None, closed_early: bool,
             first_token_ms: float | None) -> None:
        inst, span = self.inst, self.span
        end_ns = time.time_ns()
        found = last.get("response") if last is not None else None
        response: dict[str, Any] = found if isinstance(found, dict) else {}
        found = response.get("usage")
        usage: dict[str, Any] = found if isinstance(found, dict) else {}
        error_type = _error_type(error) if error is not None else None
        kind = last.get("type") if last is not None else None
        if kind == "error" or kind == "response.failed":
            detail = (last or {}).get("error") or response.get("error") or {}
            error_type = str(detail.get("code") or detail.get("type") or kind) if isinstance(detail, dict) else kind
        if span is not None and span.is_recording():
            attrs: dict[str, Any] = {}
            if response.get("id"):
                attrs["gen_ai.response.id"] = str(response["id"])
            if response.get("model"):
                attrs["gen_ai.response.model"] = str(response["model"])
            if response.get("status"):
                attrs["gen_ai.response.finish_reasons"] = [str(response["status"])]
            for key, name in (("input_tokens", "gen_ai.usage.input_tokens"),
                              ("output_tokens", "gen_ai.usage.output_tokens")):
                if isinstance(usage.get(key), int):
                    attrs[name] = usage[key]
            if closed_early:
                attrs["llmclient.stream.closed_early"] = True
            if error_type is not None:
                attrs["error.type"] = error_type
            span.set_attributes(attrs)
            if first_token_ms is not None:
                span.add_event("llmclient.first_token", timestamp=self.start_ns + int(first_token_ms * 1e6))
            if error_type is not None:
                trace = inst.trace
                span.set_status(trace.Status(trace.StatusCode.ERROR,
                                             _describe(error) if error is not None else error_type))
        if span is not None:
            span.end(end_time=end_ns)
        if inst.meter_provider is not None:
            attrs = self.attrs if error_type is None else {**self.attrs, "error.type": error_type}
            inst.duration.record((end_ns - self.start_ns) / 1e9, attrs)
            for key, token_type in (("input_tokens", "input"), ("output_tokens", "output")):
                if isinstance(usage.get(key), int):
                    inst.tokens.record(usage[key], _metric_attrs("chat", self.model, token_type, _PROVIDER))
            if first_token_ms is not None:
                inst.ttft.record(first_token_ms / 1000.0, attrs)


def ws_response_start(connection_span: Any, url: str, create: bytes,
                      trace_ctx: TraceContext) -> tuple[WsResponseSpan, TraceContext] | None:
    """A span for the response ``create`` (the ``response.create`` message as sent) asks for,
    and the trace context it gives the response; None when OpenTelemetry is not configured."""
    inst = _instruments()
    if inst is None:
        return None
    try:
        body = orjson.loads(create)
        model = str(body.get("model") or "") if isinstance(body, dict) else ""
        attrs = _metric_attrs("chat", model, None, _PROVIDER)
        start_ns = time.time_ns()
        span = None
        if inst.tracer is not None:
            trace = inst.trace
            host, port = _server(url)
            attributes: dict[str, Any] = {**attrs, "server.address": host, "server.port": port,
                                          "llmclient.websocket": True, "llmclient.stream": True}
            lane = body.get("stream_id") if isinstance(body, dict) else None
            if isinstance(lane, str):
                attributes["llmclient.websocket.stream_id"] = lane
            max_tokens = body.get("max_output_tokens") if isinstance(body, dict) else None
            if isinstance(max_tokens, int) and not isinstance(max_tokens, bool):
                attributes["gen_ai.request.max_tokens"] = max_tokens
            links: tuple[Any, ...] = ()
            if connection_span is not None:
                links = (trace.Link(connection_span.get_span_context(), {"llmclient.link": "websocket"}),)
            span = inst.tracer.start_span(f"chat {model}", context=_parent_context(trace, trace_ctx),
                                          kind=trace.SpanKind.CLIENT, attributes=attributes, links=links,
                                          start_time=start_ns)
            sc = span.get_span_context()
            if sc.is_valid:
                trace_ctx = _span_trace(trace_ctx, sc)
        return WsResponseSpan(inst, span, model, attrs, start_ns), trace_ctx
    except Exception:
        _log_once("websocket response span start")
        return None
