"""Percentiles, CDFs, knee detection, goodput and summaries on known data."""

from __future__ import annotations

import itertools

import pytest

from benchmarks.harness._scenario import RequestRecord
from benchmarks.harness.stats import (
    SLO,
    cdf,
    find_knee,
    goodput,
    percentile,
    percentiles,
    summarize,
    tpot_ms,
)


def _rec(latency: float, status: int | None = 200, kind: str | None = None, **kw: object) -> RequestRecord:
    return RequestRecord(variant="v", trace_id="t", start_s=kw.pop("start_s", 0.0),  # type: ignore[arg-type]
                         latency_ms=latency, status=status, error_kind=kind, **kw)  # type: ignore[arg-type]


def test_percentiles_interpolate_linearly_between_ranks() -> None:
    values = list(range(1, 101))            # 1..100
    assert percentile(values, 50) == pytest.approx(50.5)
    assert percentile(values, 99) == pytest.approx(99.01)
    assert percentile(values, 0) == 1 and percentile(values, 100) == 100
    assert percentile([7.0], 99.9) == 7.0
    assert percentile([3, 1, 2], 50) == 2   # order does not matter


def test_percentile_rejects_empty_samples_and_bad_quantiles() -> None:
    with pytest.raises(ValueError, match="empty"):
        percentile([], 50)
    with pytest.raises(ValueError, match=r"0\.\.100"):
        percentile([1.0], 101)


def test_percentiles_report_n_and_flag_small_samples_for_p999() -> None:
    small = percentiles([float(i) for i in range(100)])
    assert small["n"] == 100 and small["p999_reliable"] is False
    assert percentiles([float(i) for i in range(1000)])["p999_reliable"] is True
    assert percentiles([]) == {"n": 0}


def test_cdf_is_monotone_and_ends_at_one() -> None:
    points = cdf([float(i) for i in range(1000)], points=50)
    assert points[-1] == (999.0, 1.0)
    assert all(a[0] <= b[0] and a[1] < b[1] for a, b in itertools.pairwise(points))
    assert len(points) <= 52


def test_knee_is_found_where_latency_turns_up() -> None:
    rates = [1, 2, 4, 8, 12, 16, 20, 24]
    # Flat near 100 ms, then queueing: M/M/1-like blow-up past 16 req/s.
    latencies = [100, 101, 103, 108, 115, 140, 400, 1500]
    knee = find_knee(rates, latencies)
    assert knee is not None and rates[knee] in (16, 20)


def test_flat_curve_has_no_knee_and_order_of_input_is_respected() -> None:
    assert find_knee([1, 2, 4, 8], [100, 101, 102, 104]) is None
    assert find_knee([1, 2], [100, 500]) is None              # too few points
    rates = [24, 1, 16, 8, 2, 20, 4, 12]
    lat = {1: 100, 2: 101, 4: 103, 8: 108, 12: 115, 16: 140, 20: 400, 24: 1500}
    knee = find_knee(rates, [lat[r] for r in rates])
    assert knee is not None and rates[knee] in (16, 20)


def test_summary_counts_failures_apart_by_status_and_kind() -> None:
    records = [_rec(100.0), _rec(200.0), _rec(5.0, status=429, kind="http_error"),
               _rec(7.0, status=503, kind="http_error"), _rec(30_000.0, status=None, kind="timeout"),
               _rec(50.0, status=None, kind="truncated")]
    s = summarize(records)
    assert (s["n"], s["n_ok"], s["n_failed"]) == (6, 2, 4)
    assert s["failures_by_status"] == {"429": 1, "503": 1}
    assert s["failures_by_kind"] == {"http_error": 2, "timeout": 1, "truncated": 1}
    # Latency percentiles are over successes only: the timeout does not become the p99.
    assert s["latency_ms"]["max"] == 200.0 and s["latency_ms"]["n"] == 2


def test_tpot_and_goodput_follow_their_definitions() -> None:
    fast = _rec(1100.0, ttft_ms=100.0, output_tokens=11, start_s=0.0)
    slow = _rec(5100.0, ttft_ms=100.0, output_tokens=11, start_s=0.0)
    assert tpot_ms(fast) == pytest.approx(100.0)
    assert tpot_ms(_rec(10.0)) is None
    slo = SLO(ttft_ms=200.0, tpot_ms=150.0)
    assert slo.met_by(fast) and not slo.met_by(slow)
    # 1 of 2 requests met the SLO over a 5.1 s run.
    assert goodput([fast, slow], slo) == pytest.approx(1 / 5.1)


def test_slo_option_parses_milliseconds_and_names_bad_items() -> None:
    from benchmarks.harness.cli import parse_slo

    assert parse_slo("ttft=500, tpot=50") == SLO(ttft_ms=500.0, tpot_ms=50.0, e2e_ms=None)
    with pytest.raises(ValueError, match="latency=1"):
        parse_slo("latency=1")
    with pytest.raises(ValueError, match="'fast' is not a number"):
        parse_slo("ttft=fast")
