"""Metrics, defined once. Every number in a report comes from these functions.

Per request (from a :class:`~benchmarks.harness._scenario.RequestRecord`):
  e2e latency   ``latency_ms``: from the send (closed loop) or the *scheduled* send (open loop,
                so client-side queueing is not hidden: no coordinated omission) to the last byte.
  TTFT          time to the first streamed chunk whose ``delta.content`` is non-empty (role-only
                and empty chunks do not count). Streams only.
  ITL           gaps between consecutive content chunks (each gap is one sample).
  TPOT          time per output token after the first: ``(e2e - ttft) / (output_tokens - 1)``;
                defined for streams with at least two output tokens.
  tokens/s      output tokens / e2e seconds, per request.

Per run:
  successes and failures counted apart; failures by HTTP status (429, 503, 504, ...) and by kind
  (timeout, reset, truncated, connect, protocol, other). Latency percentiles are over successes.
  Percentiles: P50/P90/P95/P99/P99.9 with linear interpolation between closest ranks (the "linear"
  method of Hyndman & Fan type 7, numpy's default), always reported with ``n``; a P99.9 from
  fewer than 1,000 samples is flagged (``p999_reliable``).
  goodput       successful requests per second that met every SLO given (TTFT, TPOT, e2e).
  throughput    all successes per second of wall time (first start to last finish).
  breakdown     median per component (connect, tls, queue, prefill, decode, network, ...)
                over successes that report it.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .records import RequestRecord

__all__ = [
    "BETTER",
    "FASTER",
    "LOSS",
    "NOT_MEASURED",
    "NO_DIFFERENCE",
    "OUTCOMES",
    "SLO",
    "SLOWER",
    "TIE",
    "TOO_FEW",
    "UNDECIDED",
    "WIN",
    "WORSE",
    "bootstrap_ratio",
    "cdf",
    "find_knee",
    "goodput",
    "min_samples",
    "newcombe_difference",
    "outcome",
    "percentile",
    "percentiles",
    "quantile_of",
    "rate_verdict",
    "ratio",
    "summarize",
    "tpot_ms",
    "verdict",
    "wilson",
]

QUANTILES: tuple[tuple[str, float], ...] = (("p50", 50.0), ("p90", 90.0), ("p95", 95.0),
                                            ("p99", 99.0),
                                            ("p999", 99.9))


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100), linear interpolation between closest ranks."""
    if not values:
        raise ValueError("percentile of an empty sample")
    if not 0.0 <= q <= 100.0:
        raise ValueError(f"percentile q must be within 0..100, got {q}")
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100.0
    low = math.floor(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def percentiles(values: Sequence[float]) -> dict[str, Any]:
    """P50/P90/P99/P99.9, min, max and mean with the sample size; empty -> ``{"n": 0}``."""
    if not values:
        return {"n": 0}
    out: dict[str, Any] = {"n": len(values)}
    for label, q in QUANTILES:
        out[label] = percentile(values, q)
    out["min"] = min(values)
    out["max"] = max(values)
    out["mean"] = math.fsum(values) / len(values)
    out["p999_reliable"] = len(values) >= 1000
    return out


def cdf(values: Sequence[float], points: int = 200) -> list[tuple[float, float]]:
    """Empirical CDF as (value, fraction <= value), thinned to at most ``points`` steps."""
    ordered = sorted(values)
    n = len(ordered)
    if n == 0:
        return []
    step = max(1, n // points)
    out = [(ordered[i], (i + 1) / n) for i in range(0, n, step)]
    if out[-1][1] != 1.0:
        out.append((ordered[-1], 1.0))
    return out


def tpot_ms(record: RequestRecord) -> float | None:
    if record.ttft_ms is None or not record.output_tokens or record.output_tokens < 2:
        return None
    return (record.latency_ms - record.ttft_ms) / (record.output_tokens - 1)


@dataclass(frozen=True)
class SLO:
    """Service-level objectives for goodput; None means "no limit on this metric"."""

    ttft_ms: float | None = None
    tpot_ms: float | None = None
    e2e_ms: float | None = None

    def met_by(self, record: RequestRecord) -> bool:
        if not record.ok:
            return False
        if self.e2e_ms is not None and record.latency_ms > self.e2e_ms:
            return False
        if self.ttft_ms is not None and (record.ttft_ms is None or record.ttft_ms > self.ttft_ms):
            return False
        tpot = tpot_ms(record)
        return self.tpot_ms is None or tpot is None or tpot <= self.tpot_ms


def _wall_s(records: Sequence[RequestRecord]) -> float:
    if not records:
        return 0.0
    start = min(r.start_s for r in records)
    end = max(r.start_s + r.latency_ms / 1000.0 for r in records)
    return max(end - start, 1e-9)


def goodput(records: Sequence[RequestRecord], slo: SLO) -> float:
    """Requests per second (over the run's wall time) that succeeded and met ``slo``."""
    return sum(1 for r in records if slo.met_by(r)) / _wall_s(records) if records else 0.0


def failure_key(record: RequestRecord) -> str:
    """How a failure is counted: by status when one came back, else by kind."""
    if record.status is not None and record.status >= 400:
        return str(record.status)
    return record.error_kind or "unknown"


# Phases a request only has when it paid them: a reused connection has no connect or TLS
# time, so a missing value is a zero, not an unknown (else the p50 of "connect" would be the
# p50 of the few requests that opened a connection).
ZERO_WHEN_ABSENT = frozenset({"connect", "tls"})


def _breakdown(records: Sequence[RequestRecord]) -> dict[str, dict[str, Any]]:
    parts: dict[str, list[float]] = {}
    for record in records:
        for name, value in record.breakdown.items():
            if value is not None and math.isfinite(value):
                parts.setdefault(name, []).append(float(value))
    for name in ZERO_WHEN_ABSENT.intersection(parts):
        parts[name] += [0.0] * (len(records) - len(parts[name]))
    return {name: {"n": len(v), "p50": percentile(v, 50)} for name, v in sorted(parts.items())}


def summarize(records: Sequence[RequestRecord], slo: SLO | None = None) -> dict[str, Any]:
    """Everything the report shows about one variant, from its records alone."""
    ok = [r for r in records if r.ok]
    failed = [r for r in records if not r.ok]
    ttft = [r.ttft_ms for r in ok if r.ttft_ms is not None]
    tpots = [t for t in (tpot_ms(r) for r in ok) if t is not None]
    itl = [gap for r in ok for gap in r.itl_ms]
    tps = [r.output_tokens / (r.latency_ms / 1000.0) for r in ok
           if r.output_tokens and r.latency_ms > 0]
    lag = [r.schedule_lag_ms for r in records]
    out: dict[str, Any] = {
        "n": len(records),
        "n_ok": len(ok),
        "n_failed": len(failed),
        "failures_by_status": dict(Counter(str(r.status) for r in failed if r.status)),
        "failures_by_kind": dict(Counter(r.error_kind or "http_error" for r in failed)),
        "latency_ms": percentiles([r.latency_ms for r in ok]),
        "ttft_ms": percentiles(ttft),
        "tpot_ms": percentiles(tpots),
        "itl_ms": percentiles(itl),
        "tokens_per_s": percentiles(tps),
        "schedule_lag_ms": percentiles(lag),
        "throughput_rps": len(ok) / _wall_s(records) if records else 0.0,
        "breakdown_p50_ms": _breakdown(ok),
    }
    if slo is not None:
        out["goodput_rps"] = goodput(records, slo)
        out["slo"] = {"ttft_ms": slo.ttft_ms, "tpot_ms": slo.tpot_ms, "e2e_ms": slo.e2e_ms}
    return out


def ratio(baseline: float | None, candidate: float | None) -> float | None:
    """baseline / candidate: 2.0 means the candidate takes half the time."""
    if baseline is None or candidate is None or candidate <= 0:
        return None
    return baseline / candidate


def find_knee(rates: Sequence[float], latencies: Sequence[float],
              min_rise: float = 1.5) -> int | None:
    """Index of the knee of a latency-vs-rate curve, or None when latency never turns up.

    Kneedle (Satopaa et al., ICDCS-W 2011) for a convex increasing curve: normalise both axes
    to 0..1 and take the point farthest below the chord from first to last point. A curve whose
    last latency is below ``min_rise`` x its first has no knee (it is still flat).
    """
    if len(rates) != len(latencies):
        raise ValueError("rates and latencies must have the same length")
    if len(rates) < 3:
        return None
    pairs = sorted(zip(rates, latencies, strict=True))
    xs = [p[0] for p in pairs]
    ys = [p[1] for p in pairs]
    if ys[0] <= 0 or max(ys) < min_rise * ys[0]:
        return None
    x_span = (xs[-1] - xs[0]) or 1.0
    y_min, y_span = min(ys), (max(ys) - min(ys)) or 1.0
    diffs = [(x - xs[0]) / x_span - (y - y_min) / y_span for x, y in zip(xs, ys, strict=True)]
    best = max(range(len(diffs)), key=lambda i: diffs[i])
    if diffs[best] <= 0:
        return None
    # Return the index in the caller's order, not the sorted one.
    knee_rate = xs[best]
    return list(rates).index(knee_rate)


def summary_of(variants: Mapping[str, Sequence[RequestRecord]],
               slo: SLO | None = None) -> dict[str, dict[str, Any]]:
    return {name: summarize(records, slo) for name, records in variants.items()}


# ---- intervals and verdicts ---------------------------------------------------------------------
# A quantile is estimable from a sample when at least this many values lie beyond it: p50 from
# 5 requests, p95 from 40, p99 from 200. Below that the sample's largest values *are* the
# "p99", and a bootstrap cannot show more spread than the sample has.
BEYOND_QUANTILE = 2
MIN_SAMPLES_ANY = 5
BOOTSTRAP_ITERATIONS = 2000
CONFIDENCE = 0.95

# Verdicts of a savings row (what the report writes for each): a ratio row is faster or slower,
# a rate row (a count of events, e.g. answers completed after a cut) better or worse.
FASTER, SLOWER, NO_DIFFERENCE = "faster", "slower", "no measurable difference"
BETTER, WORSE = "better", "worse"
TOO_FEW, NOT_MEASURED = "too few samples", "not measured"
# What a verdict means for a reader, whatever the row's kind: the one field the headline, the
# chart, the table and the advice all read, so that no two of them can disagree on a row.
WIN, LOSS, TIE, UNDECIDED = "win", "loss", "tie", "undecided"
OUTCOMES = (WIN, LOSS, TIE, UNDECIDED)
_OUTCOME_OF = {FASTER: WIN, BETTER: WIN, SLOWER: LOSS, WORSE: LOSS, NO_DIFFERENCE: TIE,
               TOO_FEW: UNDECIDED, NOT_MEASURED: UNDECIDED}


def outcome(verdict_word: str) -> str:
    """WIN / LOSS / TIE / UNDECIDED for a verdict word (ValueError for an unknown one)."""
    try:
        return _OUTCOME_OF[verdict_word]
    except KeyError:
        raise ValueError(f"unknown verdict {verdict_word!r}") from None


def quantile_of(statistic: str) -> float:
    """"p95" -> 95.0; anything else (``"mean"`` included: not a quantile) is a ValueError
    naming the statistic."""
    from .records import STATISTICS

    q = STATISTICS.get(statistic)
    if q is None:
        raise ValueError(f"unknown quantile {statistic!r}; known: "
                         f"{sorted(k for k, v in STATISTICS.items() if v is not None)}")
    return q


def min_samples(statistic: str) -> int:
    """Successful requests per side needed to estimate ``statistic`` (see BEYOND_QUANTILE); a
    mean needs MIN_SAMPLES_ANY."""
    if statistic == "mean":
        return MIN_SAMPLES_ANY
    q = quantile_of(statistic)
    return max(MIN_SAMPLES_ANY, math.ceil(BEYOND_QUANTILE / (1.0 - q / 100.0) - 1e-9))


def _reducer(statistic: str) -> Any:
    """``statistic`` as a function of a non-empty sample: its quantile, or its mean."""
    if statistic == "mean":
        return lambda values: math.fsum(values) / len(values)
    q = quantile_of(statistic)
    return lambda values: percentile(values, q)


def bootstrap_ratio(baseline: Sequence[float | None], candidate: Sequence[float | None],
                    statistic: str = "p50", *, iterations: int = BOOTSTRAP_ITERATIONS,
                    confidence: float = CONFIDENCE, seed: int | str = 0,
                    paired: bool = True) -> tuple[float, float] | None:
    """A percentile-bootstrap interval for ``stat(baseline) / stat(candidate)``, ``stat`` a
    quantile (``"p50"``, ``"p99"``...) or the ``"mean"``.

    The suite sends each request through both sides interleaved (A B A B), so entry i of
    ``baseline`` and of ``candidate`` is one request under the same machine conditions: when
    the two have the same length the bootstrap resamples those *pairs* (a moment of machine
    noise stays with both of its measurements, which narrows the interval honestly). Sides of
    different lengths (filtered variants), or ``paired=False`` (two separate runs), are
    resampled independently. ``None``
    entries are failed requests: they are drawn like the others (so the failure share varies
    across resamples) and left out of the statistic. Returns None when fewer than half the
    resamples have a value on both sides.
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be within (0, 1), got {confidence}")
    stat = _reducer(statistic)
    rng = random.Random(f"bootstrap:{seed}")
    n_b, n_c = len(baseline), len(candidate)
    if not n_b or not n_c:
        return None
    paired = paired and n_b == n_c
    ratios: list[float] = []
    for _ in range(iterations):
        if paired:
            idx = [rng.randrange(n_b) for _ in range(n_b)]
            b_idx, c_idx = idx, idx
        else:
            b_idx = [rng.randrange(n_b) for _ in range(n_b)]
            c_idx = [rng.randrange(n_c) for _ in range(n_c)]
        b_drawn = [v for i in b_idx if (v := baseline[i]) is not None]
        c_drawn = [v for i in c_idx if (v := candidate[i]) is not None]
        b = stat(b_drawn) if b_drawn else None
        c = stat(c_drawn) if c_drawn else None
        if b is not None and c is not None and c > 0:
            ratios.append(b / c)
    if len(ratios) < iterations / 2:
        return None
    tail = (1.0 - confidence) / 2.0 * 100.0
    return percentile(ratios, tail), percentile(ratios, 100.0 - tail)


def verdict(interval: tuple[float, float] | None, n_baseline: int, n_candidate: int,
            statistic: str) -> str:
    """What a row may claim: FASTER / SLOWER only when the whole interval is on one side of
    1.0, NO_DIFFERENCE when it includes 1.0, TOO_FEW when either side has fewer successes
    than ``min_samples(statistic)`` (no claim at all), NOT_MEASURED without an interval."""
    if min(n_baseline, n_candidate) < min_samples(statistic):
        return TOO_FEW
    if interval is None:
        return NOT_MEASURED
    low, high = interval
    if low > 1.0:
        return FASTER
    if high < 1.0:
        return SLOWER
    return NO_DIFFERENCE


# ---- counts: exact-enough intervals for rates -----------------------------------------------
# A tail technique (retries, hedging, resumed streams, pacing, routing around a slow replica)
# changes how often something happens: answers completed after a cut, calls failed, calls
# refused with a 429, calls rescued by a hedge, calls sent to a slow replica. A count decides
# with tens of trials where a p99 needs hundreds a side, so the quick pass judges these on
# rates, each side with a Wilson score interval and the difference with Newcombe's interval
# built from them (Newcombe 1998, "Interval estimation for the difference between independent
# proportions", method 10), which keeps its coverage at 0/n and n/n where the normal
# approximation collapses to a point.
MIN_TRIALS = 5


def _z(confidence: float) -> float:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be within (0, 1), got {confidence}")
    from statistics import NormalDist

    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


def wilson(events: int, trials: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The Wilson score interval of a proportion ``events / trials`` (Wilson 1927)."""
    if trials <= 0 or not 0 <= events <= trials:
        raise ValueError(f"need 0 <= events <= trials and trials > 0, got {events}/{trials}")
    z = _z(confidence)
    p = events / trials
    denom = 1.0 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denom
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denom
    # at 0/n and n/n the bound is exactly 0 or 1 (the formula gives it up to rounding)
    low = 0.0 if events == 0 else max(0.0, centre - half)
    high = 1.0 if events == trials else min(1.0, centre + half)
    return low, high


def newcombe_difference(base_events: int, base_trials: int, cand_events: int, cand_trials: int,
                        confidence: float = CONFIDENCE) -> tuple[float, float]:
    """An interval for ``p_candidate - p_baseline`` (two independent proportions), Newcombe's
    hybrid score method from the two Wilson intervals."""
    p1, p2 = base_events / base_trials, cand_events / cand_trials
    l1, u1 = wilson(base_events, base_trials, confidence)
    l2, u2 = wilson(cand_events, cand_trials, confidence)
    d = p2 - p1
    low = d - math.sqrt((p2 - l2) ** 2 + (u1 - p1) ** 2)
    high = d + math.sqrt((u2 - p2) ** 2 + (p1 - l1) ** 2)
    return max(-1.0, low), min(1.0, high)


def rate_verdict(interval: tuple[float, float] | None, n_baseline: int, n_candidate: int,
                 higher_is_better: bool) -> str:
    """BETTER / WORSE only when the difference's whole interval is on one side of 0,
    NO_DIFFERENCE when it includes 0, TOO_FEW below MIN_TRIALS trials a side."""
    if min(n_baseline, n_candidate) < MIN_TRIALS:
        return TOO_FEW
    if interval is None:
        return NOT_MEASURED
    low, high = interval
    if low > 0.0:
        return BETTER if higher_is_better else WORSE
    if high < 0.0:
        return WORSE if higher_is_better else BETTER
    return NO_DIFFERENCE
