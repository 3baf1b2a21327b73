"""The ``adaptive`` scenario's arithmetic (throughput bins, the summary against idle and the best
fixed cap) and its place in the suite; the scenario itself runs in ``make bench``."""

from __future__ import annotations

import pytest

from benchmarks.harness._scenario import RequestRecord
from benchmarks.scenarios import discover
from benchmarks.scenarios.adaptive import (
    AdaptiveConcurrency,
    _bins,
    reference_of,
    split_variant,
    subset,
    summarise,
)


def test_a_calls_tokens_are_spread_over_its_time_in_flight() -> None:
    # one call of 100 tokens from 0.5 s to 2.5 s: 25 tokens in [0,1), 50 in [1,2), 25 in [2,3)
    assert _bins([(0.5, 2.5, 100)], t_from=0.0, t_end=3.0) == pytest.approx([25.0, 50.0, 25.0])
    # a call entirely outside the span counts nowhere
    assert _bins([(5.0, 6.0, 100)], t_from=0.0, t_end=2.0) == [0.0, 0.0]


def _recs(variant: str, ttfts: list[float | None]) -> list[RequestRecord]:
    return [RequestRecord(variant=variant, trace_id="", start_s=0.0, latency_ms=(t or 0.0) + 10.0,
                          status=200 if t is not None else None, ttft_ms=t,
                          error_kind=None if t is not None else "APITimeoutError") for t in ttfts]


def test_the_summary_compares_ttft_with_idle_and_throughput_with_the_best_fixed_cap() -> None:
    records = {"idle": _recs("idle", [50.0] * 20), "fixed-8": _recs("fixed-8", [55.0] * 20),
               "fixed-16": _recs("fixed-16", [200.0] * 20), "adaptive": _recs("adaptive", [60.0] * 19 + [None])}
    bins = {"idle": [], "fixed-8": [100.0] * 5, "fixed-16": [200.0] * 5, "adaptive": [180.0] * 5}
    result = summarise(AdaptiveConcurrency(), records, bins, {"adaptive": {"limit": 12}}, 1.0, 5.0)
    series = result.series["adaptive"]
    assert series["best_fixed"] == "fixed-16"
    adaptive = series["variants"]["adaptive"]
    assert adaptive["interactive_failed"] == 1
    assert adaptive["ttft_p99_vs_idle"] == pytest.approx(60.0 / 50.0)
    assert adaptive["batch_vs_best_fixed"] == pytest.approx(0.9)
    assert {row.candidate for row in result.rows} == {"adaptive"}


def test_priority_variants_name_their_server_and_compare_with_its_idle() -> None:
    assert split_variant("prio-fixed-16") == ("prio-", "fixed-16")
    assert split_variant("v1-unlimited") == ("v1-", "unlimited")
    assert split_variant("adaptive") == ("", "adaptive")
    records = {"idle": _recs("idle", [50.0] * 20), "fixed-16": _recs("fixed-16", [200.0] * 20),
               "prio-idle": _recs("prio-idle", [40.0] * 20), "prio-unlimited": _recs("prio-unlimited", [60.0] * 20),
               "v1-unlimited": _recs("v1-unlimited", [300.0] * 20)}
    assert reference_of("prio-unlimited", records) == "prio-idle"
    assert reference_of("v1-unlimited", records) == "idle"      # no v1-idle measured: the fcfs one
    bins = {"idle": [], "fixed-16": [200.0] * 5, "prio-idle": [], "prio-unlimited": [190.0] * 5,
            "v1-unlimited": [200.0] * 5}
    result = summarise(AdaptiveConcurrency(), records, bins, {}, 1.0, 5.0,
                       {"prio-unlimited": {"all": 30.0, "for_waiting": 28.0}})
    variants = result.series["adaptive"]["variants"]
    assert variants["prio-unlimited"]["ttft_p99_vs_idle"] == pytest.approx(60.0 / 40.0)
    assert variants["prio-unlimited"]["batch_vs_best_fixed"] == pytest.approx(0.95)
    assert variants["prio-unlimited"]["server_preemptions"]["for_waiting"] == 28.0
    assert variants["v1-unlimited"]["ttft_p99_vs_idle"] == pytest.approx(300.0 / 50.0)
    assert "batch_tokens_per_s" not in variants["prio-idle"]
    assert any(row.candidate == "prio-unlimited" for row in result.rows)


def test_a_subset_of_variants_in_the_full_order_and_a_longer_measurement() -> None:
    order = ("idle", "unlimited", "adaptive")
    assert subset(order, 20.0, None, None) == (order, 20.0)
    assert subset(order, 20.0, "prio-unlimited, idle,fixed-24", "60") == (("idle", "fixed-24", "prio-unlimited"), 60.0)
    assert subset(order, 20.0, "v1-adaptive", None)[0] == ("v1-adaptive",)
    with pytest.raises(ValueError, match="unknown variant 'prio-fixed-9'"):
        subset(order, 20.0, "prio-fixed-9", None)
    with pytest.raises(ValueError, match="BENCH_ADAPTIVE_MEASURE_S"):
        subset(order, 20.0, None, "a minute")
    with pytest.raises(ValueError, match="between 1 and 3600"):
        subset(order, 20.0, None, "0")


def test_the_scenario_is_discovered() -> None:
    scenarios, errors = discover()
    assert not errors
    assert "adaptive" in {s.name for s in scenarios}
