"""Per-call timings and facts (``response.timings``), fed by httpcore's trace extension.

httpcore reports ``<phase>.started`` / ``<phase>.complete`` events through the ``trace`` request
extension (https://www.encode.io/httpcore/extensions/#trace). We keep only timestamps: the
events arrive on the hot path, so :meth:`CallRecord.on_trace` does one dict lookup and one
``perf_counter()`` per event.
"""

from __future__ import annotations

import re
import time
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["CallRecord", "parse_server_timing"]

# Which trace event ends which phase; times are ms since the call started (the previous
# attempt's numbers are replaced when a call is retried: the record describes the last attempt).
_EVENT_FIELDS = {
    "connection.connect_tcp.started": "_t_connect_start",
    "connection.connect_tcp.complete": "_t_connect_end",
    "connection.start_tls.started": "_t_tls_start",
    "connection.start_tls.complete": "_t_tls_end",
    "http11.send_request_headers.started": "_t_send_start",
    "http2.send_request_headers.started": "_t_send_start",
    "http11.send_request_body.complete": "_t_sent",
    "http2.send_request_body.complete": "_t_sent",
    "http11.receive_response_headers.complete": "_t_first_byte",
    "http2.receive_response_headers.complete": "_t_first_byte",
}
# Our transport's own event (llmclient.transport.connect): a wait for a connection, with its
# length. The end of a TCP connect carries how many addresses Happy Eyeballs tried.
_POOL_WAIT = "llmclient.pool_wait"
_REPLACED = "llmclient.replaced"  # a request the transport sent again: the first never reached the server


@dataclass(slots=True)
class CallRecord:
    """What happened during one call. All durations are milliseconds from the call's start."""

    queued_ms: float | None = None
    connect_ms: float | None = None
    tls_ms: float | None = None
    request_sent_ms: float | None = None
    first_byte_ms: float | None = None
    first_token_ms: float | None = None
    last_byte_ms: float | None = None
    total_ms: float | None = None
    bytes_sent: int = 0
    bytes_received: int = 0
    http_version: str | None = None
    connection_reused: bool | None = None
    pool_wait_ms: float = 0.0  # the last attempt's wait for a connection (our transport; 0: none)
    remote_address: str | None = None  # the address the last attempt's connection reached
    address_family: str | None = None  # "IPv4" | "IPv6" (Happy Eyeballs chose it: transport/eyeballs.py)
    connect_attempts: int | None = None  # addresses tried to open the last attempt's connection (None: reused)
    replaced: int = 0  # sends the transport made again on another connection: they never reached the server
    retries: int = 0
    resumes: int = 0  # a cut background stream went on from where it was (pipeline.resume)
    early_resumes: int = 0  # resume GETs opened beside a silent background stream (pipeline.resume)
    early_resumes_won: int = 0  # ... whose event came first (the silent connection closed)
    cache: str | None = None
    prefetch_joined: bool = False
    image_prep_ms: float | None = None
    image_bytes_saved: int = 0
    wire: str = "json"
    request_encoding: str | None = None  # Content-Encoding of the request body (zstd, gzip)
    hedged: bool = False  # a second copy of the call was sent (llmclient.HedgeConfig)
    hedge_won: bool = False  # ... and answered first: this record is the copy's
    replica: str | None = None  # the replica that served it (base_url=[...]: features/route)
    cache_key: str | None = None  # the prompt_cache_key llmclient derived and sent (features/route/cache_key)
    batched: int = 0  # embedding_batch=: how many calls' inputs went in the request that carried this one (1: alone)
    priority_field: int | None = None  # vLLM's body priority llmclient added (features/admit/priority)
    # This client's attempts to the call's origin awaiting their answer when this one was sent,
    # itself included (layers/_async/inflight.py): 1 is a call alone; more is queueing on our side.
    in_flight: int | None = None
    # The raw Server-Timing header; parsed on first read of ``server_timing`` (most callers
    # never look, and parsing costs more than the rest of the record).
    _server_timing_raw: str | None = None
    _server_timing: dict[str, float] | None = None
    # Raw perf_counter stamps of the current attempt (private; converted by finish_headers()).
    _t0: float = 0.0
    _t_attempt: float = 0.0
    _t_connect_start: float | None = None
    _t_connect_end: float | None = None
    _t_tls_start: float | None = None
    _t_tls_end: float | None = None
    _t_send_start: float | None = None
    _t_sent: float | None = None
    _t_first_byte: float | None = None
    _stream_id: int | None = None
    _peer: tuple[str, str] | None = None
    _pool_wait_s: float = 0.0
    _attempts: int | None = None

    def start(self) -> None:
        self._t0 = self._t_attempt = time.perf_counter()

    def begin(self) -> None:
        """The send loop starts: the call's clock starts, unless it already runs (a hedge
        copy's record counts from its call's start: twin()), and then only an attempt does."""
        if self._t0:
            self.new_attempt()
        else:
            self.start()

    def twin(self) -> CallRecord:
        """The record of a hedge copy: its durations count from this call's start."""
        rec = CallRecord(wire=self.wire, request_encoding=self.request_encoding, hedged=True, cache_key=self.cache_key,
                         priority_field=self.priority_field,
                         image_prep_ms=self.image_prep_ms, image_bytes_saved=self.image_bytes_saved)
        rec._t0 = self._t0
        return rec

    def new_attempt(self) -> None:
        self._t_attempt = time.perf_counter()
        self._t_connect_start = self._t_connect_end = self._t_tls_start = None
        self._t_tls_end = self._t_send_start = self._t_sent = self._t_first_byte = None
        self._stream_id = self._peer = self._attempts = None
        self._pool_wait_s = 0.0

    @property
    def attempt_reused_connection(self) -> bool:
        """The current attempt ran on a connection opened earlier (no connect event seen)."""
        return self._t_connect_start is None

    def on_trace(self, event_name: str, info: dict[str, Any]) -> None:
        attr = _EVENT_FIELDS.get(event_name)
        if attr is not None:
            setattr(self, attr, time.perf_counter())
            if attr == "_t_send_start":
                self._stream_id = info.get("stream_id")
                self._peer = info.get("peer")
            elif attr == "_t_connect_end":
                self._attempts = info.get("attempts")
        elif event_name == _POOL_WAIT:
            self._pool_wait_s += info.get("seconds", 0.0)
        elif event_name == _REPLACED:
            self.replaced += 1

    async def on_trace_async(self, event_name: str, info: dict[str, Any]) -> None:
        self.on_trace(event_name, info)

    def finish_headers(self, http_version: str, server_timing: str | None) -> None:
        """Turn the attempt's stamps into durations once the response headers are in."""
        t0 = self._t0
        ms = _ms
        self.http_version = http_version
        first_io = self._t_connect_start or self._t_send_start
        self.queued_ms = ms(self._t_attempt, first_io)
        self.connect_ms = ms(self._t_connect_start, self._t_connect_end)
        self.tls_ms = ms(self._t_tls_start, self._t_tls_end)
        self.connection_reused = self._t_connect_start is None
        self.pool_wait_ms = self._pool_wait_s * 1000.0
        peer = self._peer
        self.remote_address, self.address_family = peer if peer is not None else (None, None)
        self.connect_attempts = self._attempts
        self.request_sent_ms = ms(t0, self._t_sent)
        self.first_byte_ms = ms(t0, self._t_first_byte or time.perf_counter())
        self._server_timing_raw = server_timing
        self._server_timing = None

    def mark_first_token(self) -> None:
        if self.first_token_ms is None:
            self.first_token_ms = (time.perf_counter() - self._t0) * 1000.0

    def finish(self) -> None:
        now = time.perf_counter()
        self.last_byte_ms = self.total_ms = (now - self._t0) * 1000.0

    @property
    def server_timing(self) -> dict[str, float]:
        """The server's ``Server-Timing`` metrics, ``{name: duration_ms}``."""
        if self._server_timing is None:
            raw = self._server_timing_raw
            self._server_timing = parse_server_timing(raw) if raw else {}
        return self._server_timing

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in asdict(self).items() if not k.startswith("_")}
        out["server_timing"] = self.server_timing
        return out

    def __repr__(self) -> str:
        parts = ", ".join(f"{k}={v!r}" for k, v in self.to_dict().items() if v not in (None, {}))
        return f"CallRecord({parts})"


def _ms(start: float | None, end: float | None) -> float | None:
    if start is None or end is None:
        return None
    return (end - start) * 1000.0


_METRIC_RE = re.compile(r"^\s*([!#$%&'*+\-.^_`|~0-9A-Za-z]+)\s*(.*)$")
_DUR_RE = re.compile(r";\s*dur\s*=\s*\"?([0-9.eE+-]+)\"?", re.IGNORECASE)


def parse_server_timing(header: str) -> dict[str, float]:
    """Parse a ``Server-Timing`` header (W3C Server Timing, section 3) into ``{name: dur_ms}``.

    Metrics without a ``dur`` param are recorded as 0.0 so their presence is still visible;
    malformed entries are skipped rather than failing the call over a diagnostic header.
    """
    out: dict[str, float] = {}
    for entry in header.split(","):
        match = _METRIC_RE.match(entry)
        if not match:
            continue
        dur = _DUR_RE.search(match.group(2))
        try:
            out[match.group(1)] = float(dur.group(1)) if dur else 0.0
        except ValueError:
            continue
    return out
