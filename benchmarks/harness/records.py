"""The suite's records and shared types: what a request, a row and a scenario's result are.

This module imports nothing of the harness (drivers, load, stats, report import it; it imports
none of them), so the records can be read, written and summarised without starting anything.
Scenario authors import these names from ``benchmarks.harness._scenario``, which re-exports
them beside :class:`~benchmarks.harness._scenario.Context`.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from ._scenario import Context

__all__ = [
    "CAPABILITIES", "EFFORTS", "STATISTICS", "ChatRequest", "Driver", "NotAvailable",
    "RequestRecord", "Row", "Scenario", "ScenarioResult", "new_trace_id", "traceparent",
]

# Capabilities a scenario may require. The suite fills ``Context.capabilities`` by probing the
# installed packages and the server; names are plain strings so new ones cost nothing.
CAPABILITIES: Mapping[str, str] = {
    "llmclient": "the llmclient package imports (OpenAI, AsyncOpenAI)",
    "openai": "the official openai client is installed (pip install 'llmclient[bench]')",
    "llmclient.cache": "llmclient.cache (response cache) is built",
    "llmclient.protobuf": "llmclient's protobuf codec is built",
    "llmclient.images": "llmclient's image preprocessing glue is built",
    "llmclient.prefetch": "llmclient's speculative prefetch glue is built",
    "reference_server": "the embedded reference server (not --base-url)",
    "faults": "the server honours the x-fault header (reference server only)",
    "tls": "the server speaks TLS, so handshakes are part of the measurement",
    "vision": "the model accepts image inputs",
    "metrics": "the server exposes /metrics",
    "spawn_server": "the harness may start extra server processes (cold start)",
}


class NotAvailable(Exception):
    """Raised by a scenario that cannot run here; the message is the reason printed."""


@dataclass
class RequestRecord:
    """One request as the harness saw it. Times are milliseconds; ``start_s`` is seconds since
    the scenario's epoch (``time.perf_counter`` based). In open-loop runs ``latency_ms`` is taken
    from the request's *scheduled* send time, so queueing in the client is counted."""

    variant: str
    trace_id: str
    start_s: float
    latency_ms: float
    status: int | None = None              # HTTP status; None when no response came back
    error_kind: str | None = None          # None on success; "timeout", "reset", "truncated", ...
    ttft_ms: float | None = None           # first chunk with non-empty content (stream only)
    output_tokens: int | None = None
    prompt_tokens: int | None = None
    itl_ms: list[float] = field(default_factory=list)   # gaps between content chunks
    bytes_sent: int | None = None
    bytes_received: int | None = None
    schedule_lag_ms: float = 0.0           # actual send - scheduled send (harness/client queue)
    breakdown: dict[str, float] = field(default_factory=dict)  # connect, tls, queue, ...
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error_kind is None and self.status is not None and self.status < 400

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RequestRecord:
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in known})


# What a user has to do to get a technique: the savings chart groups its rows by this.
EFFORTS: Mapping[str, str] = {
    "default": "nothing (llmclient's defaults)",
    "option": "one option",
    "app": "an app change",
}
# The statistics a row may be judged on: the quantile of ``metric`` each side is reduced to.
STATISTICS: Mapping[str, float] = {"p50": 50.0, "p90": 90.0, "p95": 95.0, "p99": 99.0}


@dataclass(frozen=True)
class Row:
    """One line of the savings table: ``candidate`` measured against ``baseline``.

    ``statistic`` is what the technique targets: p50 for latency techniques, p95/p99 for the
    ones that work on the tail (hedging, retries under faults). The report judges the row on
    it, with a bootstrap interval, and says "needs --full" when the run has too few samples to
    estimate it. ``technique`` names the row on the savings chart, which shows each technique
    once (the first row that names it), grouped by ``effort`` (a key of :data:`EFFORTS`);
    rows without a technique are in the table only. ``context`` is what else the row needs
    to be read right (a cache's hit rate and repeat rate, prefetch's wasted tokens).
    """

    label: str
    baseline: str
    candidate: str
    metric: str = "latency_ms"       # or "ttft_ms"
    statistic: str = "p50"
    technique: str | None = None
    effort: str = "default"
    context: str = ""

    def __post_init__(self) -> None:
        if self.statistic not in STATISTICS:
            raise ValueError(f"row {self.label!r}: statistic {self.statistic!r} is not one of "
                             f"{sorted(STATISTICS)}")
        if self.effort not in EFFORTS:
            raise ValueError(f"row {self.label!r}: effort {self.effort!r} is not one of "
                             f"{sorted(EFFORTS)}")


@dataclass
class ScenarioResult:
    """What a scenario hands back: raw records per variant plus how to read them."""

    name: str
    description: str
    variants: dict[str, list[RequestRecord]] = field(default_factory=dict)
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)   # e.g. "quick mode: 200 requests, not 1000"
    series: dict[str, Any] = field(default_factory=dict)  # sweep points, knee, GPU samples...
    skipped: str | None = None       # set instead of records when the scenario could not run

    @classmethod
    def of(
        cls,
        scenario: Scenario,
        variants: Mapping[str, list[RequestRecord]],
        rows: Sequence[Row] = (),
        notes: Sequence[str] = (),
        series: Mapping[str, Any] | None = None,
    ) -> ScenarioResult:
        return cls(
            name=scenario.name,
            description=scenario.description,
            variants=dict(variants),
            rows=list(rows),
            notes=list(notes),
            series=dict(series or {}),
        )

    @classmethod
    def not_available(cls, scenario: Scenario, reason: str) -> ScenarioResult:
        return cls(name=scenario.name, description=scenario.description, skipped=reason)


@runtime_checkable
class Scenario(Protocol):
    """Plain class attributes satisfy these (read-only here, so ``requires = ("a", "b")``
    type-checks without annotating it ``tuple[str, ...]``)."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def requires(self) -> Sequence[str]: ...

    def run(self, ctx: Context) -> ScenarioResult: ...


@dataclass(frozen=True)
class ChatRequest:
    """A workload item: a chat completion body plus whether to stream it."""

    messages: list[dict[str, Any]]
    max_tokens: int = 64
    stream: bool = False
    extra_body: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)   # e.g. {"x-fault": "status=429"}


# A driver sends one request and returns its record; ``scheduled`` is the perf_counter time it
# should have been sent at (open loop) or None (closed loop: latency from the actual send).
Driver = Callable[[ChatRequest, "float | None"], Awaitable[RequestRecord]]


def new_trace_id() -> str:
    """A W3C trace-context trace id (32 lowercase hex digits, not all zero)."""
    return secrets.token_hex(16)


def traceparent(trace_id: str) -> str:
    # W3C Trace Context §3.2: version-traceid-parentid-flags; sampled so servers log it.
    return f"00-{trace_id}-{secrets.token_hex(8)}-01"
