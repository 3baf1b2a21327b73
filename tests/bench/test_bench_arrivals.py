"""Arrival generators and workload shapes: seeded statistics within tolerance."""

from __future__ import annotations

import itertools
import random
import statistics

import pytest

from benchmarks.harness.load import (
    LengthModel,
    gamma_arrivals,
    long_prompt,
    mixed_requests,
    poisson_arrivals,
)


def _gaps(times: list[float]) -> list[float]:
    return [b - a for a, b in zip([0.0, *times], times, strict=False)]


def test_poisson_arrivals_have_the_requested_rate_and_cv_of_one() -> None:
    times = poisson_arrivals(50.0, 20_000, random.Random(7))
    gaps = _gaps(times)
    rate = len(times) / times[-1]
    cv = statistics.pstdev(gaps) / statistics.fmean(gaps)
    assert rate == pytest.approx(50.0, rel=0.03)
    assert cv == pytest.approx(1.0, abs=0.03)
    assert all(b > a for a, b in itertools.pairwise(times))


@pytest.mark.parametrize("cv", [0.5, 2.0])
def test_gamma_arrivals_keep_the_rate_and_take_the_given_burstiness(cv: float) -> None:
    times = gamma_arrivals(20.0, cv, 20_000, random.Random(3))
    gaps = _gaps(times)
    assert len(times) / times[-1] == pytest.approx(20.0, rel=0.05)
    assert statistics.pstdev(gaps) / statistics.fmean(gaps) == pytest.approx(cv, rel=0.06)


def test_arrivals_are_reproducible_from_the_seed() -> None:
    assert poisson_arrivals(5, 50, random.Random(1)) == poisson_arrivals(5, 50, random.Random(1))
    assert poisson_arrivals(5, 50, random.Random(1)) != poisson_arrivals(5, 50, random.Random(2))


@pytest.mark.parametrize(("rate", "cv", "n"), [(0, 1, 5), (-1, 1, 5), (1, 0, 5), (1, 1, -1)])
def test_bad_arrival_parameters_are_refused_by_name(rate: float, cv: float, n: int) -> None:
    with pytest.raises(ValueError, match=r"rate|variation|arrivals"):
        gamma_arrivals(rate, cv, n, random.Random(0))


def test_mixed_requests_spread_lengths_lognormally_with_readable_text() -> None:
    model = LengthModel()
    requests = mixed_requests(2000, random.Random(5), lengths=model)
    words = [len(r.messages[0]["content"].split()) for r in requests]
    outputs = [r.max_tokens for r in requests]
    # Lognormal: median near the configured median, mean well above it (a long tail).
    assert statistics.median(words) == pytest.approx(model.prompt_median_words, rel=0.12)
    assert statistics.fmean(words) > 1.3 * statistics.median(words)
    assert statistics.median(outputs) == pytest.approx(model.output_median_tokens, rel=0.12)
    assert len(set(words)) > 200          # not one template
    text = requests[0].messages[0]["content"]
    assert text[0].isupper() and text.endswith(".")


def test_long_prompt_has_the_requested_size() -> None:
    text = long_prompt(40_000, random.Random(0))
    assert 39_000 <= len(text) <= 40_000
    assert text.count(".") > 100
