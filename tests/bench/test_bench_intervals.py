"""Intervals and verdicts: the paired bootstrap on a row's own statistic, how many samples a
statistic needs, and the seeded cache workload that gives the cache row its repeat rate."""

from __future__ import annotations

import random

import pytest

from benchmarks.harness._scenario import RequestRecord, Row
from benchmarks.harness.load import repeat_indices
from benchmarks.harness.stats import (
    FASTER,
    NO_DIFFERENCE,
    NOT_MEASURED,
    SLOWER,
    TOO_FEW,
    bootstrap_ratio,
    min_samples,
    verdict,
)
from benchmarks.scenarios.features import cache_figures


def _lognormal(median: float, n: int, seed: int, sigma: float = 0.2) -> list[float | None]:
    rng = random.Random(seed)
    return [median * rng.lognormvariate(0.0, sigma) for _ in range(n)]


def test_a_quantile_needs_two_samples_beyond_it() -> None:
    assert (min_samples("p50"), min_samples("p95"), min_samples("p99")) == (5, 40, 200)
    with pytest.raises(ValueError, match="p42"):
        min_samples("p42")


def test_a_clear_speedup_has_an_interval_above_one_around_the_ratio() -> None:
    low, high = bootstrap_ratio(_lognormal(300, 30, 1), _lognormal(100, 30, 2))  # type: ignore[misc]
    assert 1.0 < low < 3.0 < high


def test_two_samples_of_one_distribution_have_an_interval_around_one() -> None:
    interval = bootstrap_ratio(_lognormal(100, 30, 3), _lognormal(100, 30, 4))
    assert interval is not None and interval[0] < 1.0 < interval[1]


def test_pairs_keep_shared_noise_out_of_the_interval() -> None:
    # Each request's moment on the machine (a factor 0.5-4) hits both of its interleaved
    # measurements; the candidate is always half. Paired: the interval is the 2.0 it is.
    # Resampled independently, the same data gives a wide interval.
    rng = random.Random(5)
    noise = [rng.uniform(0.5, 4.0) for _ in range(30)]
    base: list[float | None] = [200.0 * k for k in noise]
    cand: list[float | None] = [100.0 * k for k in noise]
    paired = bootstrap_ratio(base, cand)
    independent = bootstrap_ratio(base, cand, paired=False)
    assert paired is not None and independent is not None
    assert paired == pytest.approx((2.0, 2.0))
    assert independent[1] - independent[0] > 0.5


def test_failures_are_drawn_but_left_out_of_the_statistic() -> None:
    base = _lognormal(300, 20, 6)
    cand = [None if i % 4 == 0 else v for i, v in enumerate(_lognormal(100, 20, 7))]
    interval = bootstrap_ratio(base, cand)
    assert interval is not None and interval[0] > 1.5
    assert bootstrap_ratio([None] * 10, [1.0] * 10) is None      # nothing to compare
    assert bootstrap_ratio([], [1.0]) is None


def test_the_same_seed_gives_the_same_interval() -> None:
    base, cand = _lognormal(120, 12, 8), _lognormal(100, 12, 9)
    assert bootstrap_ratio(base, cand, seed="row") == bootstrap_ratio(base, cand, seed="row")
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_ratio(base, cand, confidence=1.5)


def test_a_verdict_claims_only_what_its_interval_and_sample_allow() -> None:
    assert verdict((1.2, 1.5), 10, 10, "p50") == FASTER
    assert verdict((0.6, 0.9), 10, 10, "p50") == SLOWER
    assert verdict((0.9, 1.2), 10, 10, "p50") == NO_DIFFERENCE
    assert verdict((1.0, 1.2), 10, 10, "p50") == NO_DIFFERENCE     # touching 1.0 is no claim
    assert verdict((2.0, 3.0), 39, 100, "p95") == TOO_FEW          # p95 from 39: no claim
    assert verdict(None, 10, 10, "p50") == NOT_MEASURED


def test_rows_refuse_an_unknown_statistic_or_effort() -> None:
    with pytest.raises(ValueError, match="statistic 'p75'"):
        Row("x", "a", "b", statistic="p75")
    with pytest.raises(ValueError, match="effort 'some'"):
        Row("x", "a", "b", effort="some")


def test_repeat_workload_has_exactly_the_stated_repeats() -> None:
    picks = repeat_indices(24, 0.75, 1.1, random.Random(71))
    assert len(picks) == 24 and picks[0] == 0
    assert len(picks) - len(set(picks)) == 18
    # a repeat always names a prompt asked before; a new prompt is the next index
    for i, p in enumerate(picks):
        assert p <= max(picks[:i], default=-1) + 1
    assert picks == repeat_indices(24, 0.75, 1.1, random.Random(71))
    assert repeat_indices(0, 0.5, 1.1, random.Random(1)) == []
    with pytest.raises(ValueError):
        repeat_indices(10, 1.0, 1.1, random.Random(1))


def test_cache_figures_count_hits_and_joins_and_their_latency() -> None:
    def rec(ms: float, cache: str | None) -> RequestRecord:
        return RequestRecord("llmclient+cache", "t", 0.0, ms, status=200,
                             extra={"cache": cache} if cache else {})

    recs = [rec(300, None), rec(0.2, "hit"), rec(0.4, "join"), rec(280, "miss"), rec(0.3, "hit")]
    figures = cache_figures(recs, [0, 0, 0, 1, 1])
    assert figures["hits"] == 3 and figures["hit_rate"] == pytest.approx(0.6)
    assert figures["hits_of_repeats"] == 1.0
    assert figures["hit_ms"] == pytest.approx(0.3) and figures["miss_ms"] == pytest.approx(290)
