"""The suite's records and shared types: what a request, a row and a scenario's result are.

This module imports nothing of the harness (drivers, load, stats, report import it; it imports
none of them), so the records can be read, written and summarised without starting anything.
Scenario authors import these names from ``benchmarks.harness._scenario``, which re-exports
them beside :class:`~benchmarks.harness._scenario.Context`.
"""

from __future__ import annotations

import dataclasses
import re
import secrets
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from ._scenario import Context

__all__ = [
    "APP_CHANGES", "CAPABILITIES", "EFFORTS", "STATISTICS", "Arm", "ChatRequest", "Driver",
    "NotAvailable", "Rate", "RequestRecord", "Row", "Scenario", "ScenarioResult", "arm_of",
    "effort_of", "new_trace_id", "traceparent",
]

# Capabilities a scenario may require. The suite fills ``Context.capabilities`` by probing the
# installed packages and the server; names are plain strings so new ones cost nothing.
CAPABILITIES: Mapping[str, str] = {
    "llmclient": "the llmclient package imports (OpenAI, AsyncOpenAI)",
    "openai": "the official openai client is installed (pip install 'llmclient[bench]'); with "
              "--api anthropic, the official anthropic client",
    "anthropic": "the official anthropic client is installed (pip install anthropic)",
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


# What a user has to do to get a technique: the headline and the savings chart group their
# rows by this. It is derived from the options of the row's candidate arm (:func:`effort_of`).
EFFORTS: Mapping[str, str] = {
    "default": "nothing (llmclient's defaults)",
    "option": "one option",
    "app": "an app change",
}
# Options that are not a setting but work the app must do: name its likely follow-ups on each
# call (``prefetch=[...]``), call ``client.warm(messages=...)`` before the next turn.
# "responses.connect()": the app's loop moved from HTTP calls to the WebSocket mode
APP_CHANGES = frozenset({"prefetch", "warm()", "responses.connect()"})


@dataclass(frozen=True)
class Arm:
    """How one variant was made: which client, and the llmclient options a user writes to get
    it (constructor or per-call, only those that differ from llmclient's defaults; harness
    plumbing such as ``base_url``, ``verify`` or a timeout scaled down for the run is not an
    option a user sets, and is left out). ``client``: ``"llmclient"``, ``"openai"`` (the
    official client) or ``"httpx"`` (a fresh connection per call)."""

    client: str = "llmclient"
    options: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"client": self.client, "options": {k: repr(v) if not isinstance(
            v, str | int | float | bool | type(None)) else v for k, v in self.options.items()}}


def effort_of(arm: Arm | Mapping[str, Any]) -> str:
    """What a user does to get ``arm``: ``"default"`` (llmclient with no option set),
    ``"app"`` (an option of :data:`APP_CHANGES`), else ``"option"``. Reads an :class:`Arm` or
    its JSON. ValueError for an arm that is not llmclient (a baseline has no effort)."""
    client = arm.client if isinstance(arm, Arm) else arm.get("client")
    options = arm.options if isinstance(arm, Arm) else arm.get("options", {})
    if client != "llmclient":
        raise ValueError(f"a {client} arm is a baseline: llmclient's effort is not defined on it")
    if not options:
        return "default"
    return "app" if APP_CHANGES & set(options) else "option"


def arm_of(arms: Mapping[str, Any], variant: str) -> Any | None:
    """The arm of ``variant``: its own, else that of the variant it was cut from
    (``"llmclient+cache/hits"`` -> ``"llmclient+cache"``); None when none is declared."""
    name = variant
    while True:
        if name in arms:
            return arms[name]
        if "/" not in name:
            return None
        name = name.rsplit("/", 1)[0]
# The statistics a row may be judged on: the quantile of ``metric`` each side is reduced to, or
# its mean (None: not a quantile), for a mixture whose median would jump between its modes (an
# app session's calls, some served from a cache and some not).
STATISTICS: Mapping[str, float | None] = {"p50": 50.0, "p90": 90.0, "p95": 95.0, "p99": 99.0,
                                          "mean": None}


@dataclass(frozen=True)
class Row:
    """One line of the savings table: ``candidate`` measured against ``baseline``.

    ``statistic`` is what the technique targets: p50 for latency techniques, p95/p99 for the
    ones that work on the tail (hedging, retries under faults), the mean for a mixture whose
    median would jump between modes (app sessions). The report judges the row on it, with a
    bootstrap interval, and says "needs --full" when the run has too few samples to estimate
    it. ``technique`` is the name the headline, the chart and the advice give the row's claim
    (the label when None); rows that share one are one claim, judged by the first of them.
    The effort (what a user does to get it) comes from the candidate arm's options
    (:func:`effort_of`); ``effort`` is only read for a result that declares no arms. ``context``
    is what else the row needs to be read right (a cache's hit rate and repeat rate,
    prefetch's wasted tokens).
    """

    label: str
    baseline: str
    candidate: str
    metric: str = "latency_ms"       # or "ttft_ms"
    statistic: str = "p50"
    technique: str | None = None
    effort: str | None = None
    context: str = ""

    def __post_init__(self) -> None:
        if self.statistic not in STATISTICS:
            raise ValueError(f"row {self.label!r}: statistic {self.statistic!r} is not one of "
                             f"{sorted(STATISTICS)}")
        if self.effort is not None and self.effort not in EFFORTS:
            raise ValueError(f"row {self.label!r}: effort {self.effort!r} is not one of "
                             f"{sorted(EFFORTS)}")


@dataclass(frozen=True)
class Rate:
    """A savings row on a count: how often ``event`` happened among each side's trials.

    ``count(record)`` is True for a trial in which the event happened, False for one in which
    it did not, None for a record that is not a trial (e.g. a stream that was not cut, when the
    event is "completed after a cut"). ``higher_is_better``: completed answers, calls rescued
    (True); calls failed, calls refused, calls sent to a slow replica (False). The report puts
    a Wilson interval on each side's rate and Newcombe's interval on their difference; the
    verdict is "better"/"worse" only when that whole interval is on one side of 0. Tail and
    fault techniques are judged this way in the quick pass, where a p99 cannot be estimated.
    """

    label: str
    baseline: str
    candidate: str
    event: str
    count: Callable[[RequestRecord], bool | None] | None = None
    higher_is_better: bool = True
    technique: str | None = None
    effort: str | None = None
    context: str = ""
    # (baseline events, baseline trials, candidate events, candidate trials), for a count no
    # record carries (requests a batcher sent for its calls); else ``count`` over the records
    tallies: tuple[int, int, int, int] | None = None

    def __post_init__(self) -> None:
        if self.effort is not None and self.effort not in EFFORTS:
            raise ValueError(f"row {self.label!r}: effort {self.effort!r} is not one of "
                             f"{sorted(EFFORTS)}")
        if (self.count is None) == (self.tallies is None):
            raise ValueError(f"rate {self.label!r}: give count= (over the records) or "
                             "tallies=, one of the two")
        if self.tallies is not None:
            kb, nb, kc, nc = self.tallies
            if not (0 <= kb <= nb and 0 <= kc <= nc):
                raise ValueError(f"rate {self.label!r}: tallies {self.tallies} are not "
                                 "events <= trials on each side")

    def tally(self, records: Sequence[RequestRecord]) -> tuple[int, int]:
        """(events, trials) over ``records``."""
        assert self.count is not None
        marks = [m for m in (self.count(r) for r in records) if m is not None]
        return sum(bool(m) for m in marks), len(marks)


@dataclass
class ScenarioResult:
    """What a scenario hands back: raw records per variant plus how to read them."""

    name: str
    description: str
    variants: dict[str, list[RequestRecord]] = field(default_factory=dict)
    rows: list[Row | Rate] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)   # e.g. "quick mode: 200 requests, not 1000"
    series: dict[str, Any] = field(default_factory=dict)  # sweep points, knee, GPU samples...
    skipped: str | None = None       # set instead of records when the scenario could not run
    # variant -> how it was made (the drivers declare theirs; scenarios that build their own
    # clients pass them to :meth:`of`): what each row's effort is derived from
    arms: dict[str, Arm] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        scenario: Scenario,
        variants: Mapping[str, list[RequestRecord]],
        rows: Sequence[Row | Rate] = (),
        notes: Sequence[str] = (),
        series: Mapping[str, Any] | None = None,
        arms: Mapping[str, Arm] | None = None,
    ) -> ScenarioResult:
        return cls(
            name=scenario.name,
            description=scenario.description,
            variants=dict(variants),
            rows=list(rows),
            notes=list(notes),
            series=dict(series or {}),
            arms=dict(arms or {}),
        )

    @classmethod
    def not_available(cls, scenario: Scenario, reason: str) -> ScenarioResult:
        return cls(name=scenario.name, description=scenario.description, skipped=reason)

    def official_named(self, client: str) -> ScenarioResult:
        """The result with the official client called ``client`` wherever a scenario wrote
        ``openai`` (variant names, rows, notes, arms): a scenario written once with the harness's
        drivers reads right on the Messages API (``--api anthropic``), whose baseline is the
        official anthropic client. Pure: a new result."""
        if client == "openai":
            return self

        def name(text: str) -> str:
            return official_named(text, client)

        def row(r: Row | Rate) -> Row | Rate:
            return dataclasses.replace(r, label=name(r.label), baseline=name(r.baseline),
                                       candidate=name(r.candidate), context=name(r.context),
                                       technique=name(r.technique) if r.technique else r.technique)

        variants = {name(k): [dataclasses.replace(rec, variant=name(rec.variant)) for rec in v]
                    for k, v in self.variants.items()}
        return dataclasses.replace(
            self, description=name(self.description), variants=variants,
            rows=[row(r) for r in self.rows], notes=[name(n) for n in self.notes],
            arms={name(k): a for k, a in self.arms.items()})


def official_named(text: str, client: str) -> str:
    """``text`` with the official client called ``client`` where it says ``openai``. Pure."""
    return text if client == "openai" else _OPENAI_WORD.sub(client, text)


# "openai" as a word (a variant "openai/stream", "the official openai client"), not inside
# another name ("AsyncOpenAI", "openai-compatible" stays: a hyphenated API description)
_OPENAI_WORD = re.compile(r"(?<![\w.-])openai(?![\w-])")


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
