"""The reference server's side of one trace: a SERVER span per request, continuing the caller's
``traceparent``, with ``image-decode``, ``queue``, ``prefill`` and ``decode`` child spans.

Needs the OpenTelemetry SDK (``opentelemetry-sdk``; the server's own TracerProvider, never the
process-global one) and is off unless asked for: ``--trace-spans PATH`` writes each finished
span as one JSON line (what tests and ``python -m benchmarks`` read), ``--otlp-endpoint URL``
exports over OTLP/HTTP (``opentelemetry-exporter-otlp-proto-http``). Without either the app
pays nothing.

The engine reports durations (the same figures as ``Server-Timing``), not instants, so the
child spans are laid out from them: ``image-decode`` from the start of the request, and
``queue``, ``prefill``, ``decode`` back to back ending when the engine's answer was complete
(for a stream: its last token).
"""

from __future__ import annotations

import json
import re
import threading
import time
from pathlib import Path
from typing import Any

__all__ = ["ServerTracing", "create", "parse_traceparent"]

_SERVICE = "llmclient-reference-server"
# W3C Trace Context section 3.2.2: version-traceid-parentid-flags (the server shares the wire
# schema with llmclient and nothing else, so it parses the header itself).
_TRACEPARENT = re.compile(r"^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")


def parse_traceparent(value: str) -> tuple[str, str, str] | None:
    """(trace_id, parent_id, flags) of a valid traceparent, else None (an all-zero id or
    version ff is invalid)."""
    m = _TRACEPARENT.match(value.strip().lower())
    if m is None or m.group(1) == "ff" or set(m.group(2)) == {"0"} or set(m.group(3)) == {"0"}:
        return None
    return m.group(2), m.group(3), m.group(4)


def create(spans_path: str | Path | None = None, otlp_endpoint: str | None = None) -> ServerTracing | None:
    """The server's tracing, or None when neither output is asked for. Raises SystemExit naming
    the package to install when the SDK (or the OTLP exporter) is missing."""
    if not spans_path and not otlp_endpoint:
        return None
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
    except ImportError:
        raise SystemExit("--trace-spans / --otlp-endpoint need the OpenTelemetry SDK: "
                         "pip install opentelemetry-sdk") from None
    provider = TracerProvider(resource=Resource.create({"service.name": _SERVICE}))
    if spans_path:
        exporter: Any = JsonLinesExporter(Path(spans_path))  # the SpanExporter protocol
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    if otlp_endpoint:
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError:
            raise SystemExit("--otlp-endpoint needs opentelemetry-exporter-otlp-proto-http") from None
        provider.add_span_processor(BatchSpanProcessor(
            OTLPSpanExporter(endpoint=otlp_endpoint.rstrip("/") + "/v1/traces")))
    return ServerTracing(provider)


class JsonLinesExporter:
    """A SpanExporter writing one JSON object per span (trace and span ids as W3C hex)."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)

    def export(self, spans: Any) -> Any:
        from opentelemetry.sdk.trace.export import SpanExportResult

        lines = [json.dumps(span_record(s)) + "\n" for s in spans]
        with self._lock, self._path.open("a", encoding="utf-8") as f:
            f.writelines(lines)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def span_record(span: Any) -> dict[str, Any]:
    """A finished SDK span as plain data."""
    parent = span.parent
    return {
        "name": span.name,
        "kind": span.kind.name,
        "trace_id": f"{span.context.trace_id:032x}",
        "span_id": f"{span.context.span_id:016x}",
        "parent_span_id": f"{parent.span_id:016x}" if parent is not None else None,
        "start_ns": span.start_time,
        "end_ns": span.end_time,
        "attributes": dict(span.attributes or {}),
        "status": span.status.status_code.name,
        "service": _SERVICE,
    }


class ServerTracing:
    """Starts and ends each request's spans (called by ``App._http``)."""

    def __init__(self, provider: Any) -> None:
        from opentelemetry import trace

        self._trace = trace
        self._provider = provider
        self._tracer = provider.get_tracer("benchmarks.server")
        # perf_counter stamps (what the app keeps) -> wall-clock ns (what spans carry).
        self._offset_ns = time.time_ns() - int(time.perf_counter() * 1e9)

    def ns(self, perf: float) -> int:
        return self._offset_ns + int(perf * 1e9)

    def start(self, method: str, path: str, traceparent: str | None, t0: float) -> Any:
        trace = self._trace
        context = None
        parsed = parse_traceparent(traceparent) if traceparent else None
        if parsed is not None:
            trace_id, span_id, flags = parsed
            remote = trace.SpanContext(int(trace_id, 16), int(span_id, 16), is_remote=True,
                                       trace_flags=trace.TraceFlags(int(flags, 16)))
            context = trace.set_span_in_context(trace.NonRecordingSpan(remote))
        return self._tracer.start_span(
            f"{method} {path}", context=context, kind=trace.SpanKind.SERVER, start_time=self.ns(t0),
            attributes={"http.request.method": method, "url.path": path})

    def finish(self, span: Any, status: int, timings: dict[str, float], t0: float,
               request_id: str) -> None:
        """End the request's span, with its child spans laid out from ``timings`` (ms)."""
        now = time.perf_counter()
        trace = self._trace
        context = trace.set_span_in_context(span)
        if "image" in timings:
            self._child("image-decode", context, t0, t0 + timings["image"] / 1000.0)
        engine_end = now
        # Back to back, ending where the engine finished: decode, then prefill, then queue.
        for name in ("decode", "prefill", "queue"):
            ms = timings.get(name)
            if ms is None:
                continue
            # never before the request's own start (the durations are rounded to the ms)
            start = max(t0, engine_end - ms / 1000.0)
            self._child(name, context, start, engine_end)
            engine_end = start
        span.set_attribute("http.response.status_code", status)
        span.set_attribute("llm.request_id", request_id)
        if status >= 500:
            span.set_status(trace.Status(trace.StatusCode.ERROR))
        span.end(end_time=self.ns(now))

    def _child(self, name: str, context: Any, start: float, end: float) -> None:
        self._tracer.start_span(name, context=context, start_time=self.ns(start)).end(
            end_time=self.ns(end))

    def shutdown(self) -> None:
        self._provider.shutdown()
