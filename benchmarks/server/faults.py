"""Fault injection: parse a fault spec and decide, per request, which fault (if any) applies.

Pure: no sockets, no sleeps. The app (``benchmarks.server.app``) acts on the decision.

Spec grammar (one fault)::

    fault  := item (";" item)*
    item   := "status=" CODE | "retry_after=" SECONDS | "oom" | "stall_ms=" N | "cut_after=" N
            | "malformed_sse" | "slow_ms=" N | "straggler=" K | "reset" | "prob=" P
            | "times=" N | "stall_after=" N | "reset_after=" N | "once=" TOKEN | "resume_ms=" N
            | "burst=" N | "pings_after=" N | "ping_ms=" N | "error_after=" N
            | "start_ms=" N | "for_ms=" N

A run-wide spec (``--faults``) is a comma-separated list of faults, each rolled independently
in order with a seeded RNG (reproducible); the first that fires applies. A request's
``x-fault`` header holds one fault and takes precedence over the run-wide list; the app reads
that header only when the server was started with ``--allow-fault-headers``.

Meaning:
  status=403|429|500|502|503|504|529
                              answer with that status in the route's error shape (OpenAI's,
                              or Anthropic's on /v1/messages: 403 permission_error, 529
                              overloaded_error); 429 and 529 carry ``Retry-After: retry_after``,
                              default 1 s; ``retry_after=none``: no Retry-After at all (the API
                              answers some 529s without one)
  oom                         the engine's out-of-memory failure (503, type server_error)
  stall_ms=N                  wait N ms before the first byte (a stored response's GET too)
  cut_after=N                 streams: end the body after N chunks, without finish_reason or
                              ``[DONE]``; non-streamed: end the body after N bytes
  malformed_sse               streams: one chunk whose JSON is cut short; non-streamed: a JSON
                              body cut short
  stall_after=N               streams: go silent after N chunks, the connection held open
                              (no byte, no end) until the client leaves: a stalled stream
  resume_ms=N                 with stall_after: the stream goes on after N ms of silence instead
                              (a long pause mid-answer, as a model thinking; a NAT's idle timeout)
  pings_after=N               streams: after N chunks, no content: only a keep-alive every
                              ``ping_ms`` (default 500; Anthropic's ``event: ping``, an SSE
                              comment ``: ping`` elsewhere) until the client leaves, or for
                              ``resume_ms`` and then the stream goes on: a stream that looks
                              alive to a read timeout while its content has stopped
  error_after=N               streams: after N chunks, an error event and the end (Anthropic's
                              ``event: error`` with ``overloaded_error``, as the API sends when
                              it is overloaded mid-answer); a route without error events ends
                              the stream there, as ``cut_after``
  slow_ms=N                   wait N ms before every chunk (non-streamed: every engine step)
  straggler=K                 the request takes K times its engine time (K >= 1)
  reset                       abort the stream/connection after the response headers
  reset_after=N               streams: abort the stream/connection after N chunks (a reset
                              mid-answer; ``cut_after`` ends the body cleanly instead)
  prob=P                      the fault fires with probability P (default 1)
  times=N                     run-wide faults: fire at most N times in the run (e.g.
                              ``stall_ms=5000;times=1``: only the first request stalls, as on a
                              replica that was cold; a retry or a hedged copy then runs normally)
  start_ms=N, for_ms=N        run-wide faults: fire only in a window of time, from start_ms to
                              start_ms + for_ms after the first request the server saw (an
                              outage: ``status=503;start_ms=2000;for_ms=10000`` answers every
                              request 503 for 10 s, 2 s into the run); either alone: from
                              start_ms on, or for the first for_ms
  burst=N                     run-wide faults: once it fires, the next N-1 requests get it too
                              (overload comes in storms: ``status=529;prob=0.02;burst=10``)
  once=TOKEN                  header faults: fire only for the first request that carries this
                              token; a retry, a re-send or a resume carrying the same header runs
                              clean (a benchmark picks which streams fail, and where, up front)
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["FaultInjector", "FaultSpec", "FaultSpecError", "parse_fault", "parse_fault_list"]

FAULT_STATUSES = frozenset({403, 429, 500, 502, 503, 504, 529})
_INT_KEYS = ("stall_ms", "cut_after", "slow_ms", "times", "stall_after", "reset_after",
             "resume_ms", "burst", "pings_after", "ping_ms", "error_after", "start_ms", "for_ms")
DEFAULT_PING_MS = 500
# Tokens of ``once`` faults that fired, kept at most this many (oldest forgotten first).
MAX_ONCE_TOKENS = 100_000
_FLAGS = ("oom", "malformed_sse", "reset")


class FaultSpecError(ValueError):
    """A fault spec that cannot be parsed; the message names the bad item."""


@dataclass(frozen=True)
class FaultSpec:
    status: int | None = None
    retry_after_s: float | None = 1.0  # None: no Retry-After header
    oom: bool = False
    stall_ms: int = 0
    cut_after: int | None = None
    stall_after: int | None = None
    reset_after: int | None = None
    resume_ms: int | None = None
    malformed_sse: bool = False
    slow_ms: int = 0
    straggler: float = 1.0
    reset: bool = False
    prob: float = 1.0
    times: int | None = None
    once: str | None = None
    burst: int | None = None
    pings_after: int | None = None
    ping_ms: int = DEFAULT_PING_MS
    error_after: int | None = None
    start_ms: int | None = None
    for_ms: int | None = None

    @property
    def windowed(self) -> bool:
        return self.start_ms is not None or self.for_ms is not None

    def in_window(self, elapsed_ms: float) -> bool:
        """Whether a windowed fault is on ``elapsed_ms`` after the run's first request."""
        start = self.start_ms or 0
        return elapsed_ms >= start and (self.for_ms is None or elapsed_ms < start + self.for_ms)


def _number(key: str, raw: str, *, integer: bool) -> float:
    try:
        value = int(raw) if integer else float(raw)
    except ValueError:
        kind = "an integer" if integer else "a number"
        raise FaultSpecError(f"fault item {key}={raw!r}: expected {kind}") from None
    if value < 0:
        raise FaultSpecError(f"fault item {key}={raw!r}: must not be negative")
    return value


def _parse_item(item: str, fields: dict[str, object]) -> None:
    key, sep, raw = (part.strip() for part in item.partition("="))
    if not sep:
        if key not in _FLAGS:
            raise FaultSpecError(f"unknown fault item {item!r}")
        fields[key] = True
    elif key == "status":
        status = int(_number(key, raw, integer=True))
        if status not in FAULT_STATUSES:
            raise FaultSpecError(f"fault status {status} not one of {sorted(FAULT_STATUSES)}")
        fields["status"] = status
    elif key == "retry_after":
        fields["retry_after_s"] = None if raw == "none" else _number(key, raw, integer=False)
    elif key == "once":
        if not raw:
            raise FaultSpecError("fault item once=: needs a token")
        fields[key] = raw
    elif key in _INT_KEYS:
        fields[key] = int(_number(key, raw, integer=True))
    elif key == "straggler":
        k = _number(key, raw, integer=False)
        if k < 1:
            raise FaultSpecError(f"fault item straggler={raw!r}: must be >= 1")
        fields[key] = k
    elif key == "prob":
        p = _number(key, raw, integer=False)
        if p > 1:
            raise FaultSpecError(f"fault item prob={raw!r}: must be in [0, 1]")
        fields[key] = p
    else:
        raise FaultSpecError(f"unknown fault item {item!r}")


def parse_fault(spec: str) -> FaultSpec:
    """Parse one fault (``;``-separated items)."""
    items = [item for item in spec.split(";") if item.strip()]
    if not items:
        raise FaultSpecError("empty fault spec")
    fields: dict[str, object] = {}
    for item in items:
        _parse_item(item, fields)
    if fields.get("ping_ms") == 0:
        raise FaultSpecError("fault item ping_ms=0: the keep-alive interval must be positive")
    if fields.get("burst") == 0:
        raise FaultSpecError("fault item burst=0: a burst is at least 1 request")
    return FaultSpec(**fields)  # type: ignore[arg-type]


def parse_fault_list(spec: str) -> tuple[FaultSpec, ...]:
    """Parse a run-wide list of faults (``,``-separated)."""
    return tuple(parse_fault(part) for part in spec.split(",") if part.strip())


class FaultInjector:
    """Decides the fault for each request; seeded so a run's faults are reproducible."""

    def __init__(self, run_faults: tuple[FaultSpec, ...] = (), seed: int = 0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.run_faults = run_faults
        self._clock = clock  # read only by windowed faults (start_ms, for_ms)
        self._first: float | None = None  # the clock at the first request asked about
        self._rng = random.Random(seed)
        self._fired = [0] * len(run_faults)  # times each run-wide fault has fired
        self._burst_left = [0] * len(run_faults)  # requests a burst still takes, per fault
        self._once: dict[str, None] = {}  # tokens of the ``once`` faults that fired, oldest first

    def _fires(self, fault: FaultSpec) -> bool:
        return fault.prob >= 1.0 or self._rng.random() < fault.prob

    def decide(self, header: str | None) -> FaultSpec | None:
        """The fault for one request. Raises FaultSpecError for a malformed header."""
        if header:
            fault = parse_fault(header)
            for key in ("times", "burst"):
                if getattr(fault, key) is not None:
                    raise FaultSpecError(f"fault item {key}= is for run-wide faults (--faults)")
            if fault.once is not None:
                if fault.once in self._once:
                    return None
                self._remember(fault.once)
            if fault.windowed:
                raise FaultSpecError("fault items start_ms=/for_ms= are for run-wide faults (--faults)")
            return fault if self._fires(fault) else None
        elapsed_ms: float | None = None
        for i, fault in enumerate(self.run_faults):
            if self._burst_left[i]:
                self._burst_left[i] -= 1
                return fault
            if fault.times is not None and self._fired[i] >= fault.times:
                continue
            if fault.windowed:
                if elapsed_ms is None:
                    now = self._clock()
                    if self._first is None:
                        self._first = now
                    elapsed_ms = (now - self._first) * 1000.0
                if not fault.in_window(elapsed_ms):
                    continue
            if self._fires(fault):
                self._fired[i] += 1
                self._burst_left[i] = (fault.burst or 1) - 1
                return fault
        return None

    def _remember(self, token: str) -> None:
        self._once[token] = None
        if len(self._once) > MAX_ONCE_TOKENS:
            del self._once[next(iter(self._once))]
