"""GCRA over a learned budget (pure): how long a call waits, in what order, and what the
headers correct."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from llmclient.features.admit.budget import (
    HEADROOM,
    NEVER,
    Bucket,
    learn,
    release,
    reserve,
    wait_for,
)
from llmclient.features.admit.cost import estimate_tokens
from llmclient.features.admit.headers import Limits


def test_a_whole_budget_less_the_headroom_goes_at_once_then_calls_wait_for_the_refill() -> None:
    b = Bucket(limit=100, window_s=10.0)
    b, w = reserve(b, 95, now=0.0)
    assert w == 0.0 and HEADROOM == 0.05
    b, w = reserve(b, 10, now=0.0)
    assert w == pytest.approx(1.0)  # 10 units of a 100-per-10-s budget: 1 s
    assert wait_for(b, 10, now=0.0) == pytest.approx(2.0)


def test_a_cost_above_the_whole_budget_never_fits_and_takes_nothing() -> None:
    b = Bucket(limit=100, window_s=10.0)
    after, w = reserve(b, 101, now=0.0)
    assert w == NEVER and after == b


def test_release_gives_back_what_the_server_never_counted() -> None:
    b, _ = reserve(Bucket(100, 10.0), 95, now=0.0)
    b = release(b, 50, now=0.0)
    assert wait_for(b, 50, now=0.0) == 0.0


def test_headers_correct_the_model_both_ways_and_count_calls_in_flight() -> None:
    seen = Limits(limit=1000, remaining=400, reset_s=None, window_s=60.0)
    b = learn(None, seen, now=0.0)
    assert b.remaining(0.0) == pytest.approx(400)
    b = learn(b, seen, now=0.0, pending=100)  # 100 units of ours not yet counted by this answer
    assert b.remaining(0.0) == pytest.approx(300)
    b = learn(b, Limits(1000, 900, None, 60.0), now=0.0)  # the server says less was used: believed
    assert b.remaining(0.0) == pytest.approx(900)
    shared = learn(Bucket(1000, 60.0, tat=30.0), Limits(1000, 900, None, 60.0), now=0.0, only_raise=True)
    assert shared.tat == 30.0  # a shared budget never moves back


def test_an_openai_reset_header_is_the_debt() -> None:
    b = learn(None, Limits(5000, 4999, 0.012, 60.0), now=100.0)
    assert b.tat == pytest.approx(100.012)


costs = st.lists(st.integers(min_value=0, max_value=500), min_size=1, max_size=40)


@given(st.integers(1, 10_000), st.floats(0.01, 600.0), costs, st.floats(0.0, 1e6))
def test_reservations_get_slots_in_the_order_they_asked(limit: int, window: float, asks: list[int], start: float) -> None:
    b = Bucket(limit, window, tat=start)
    slots = []
    for cost in asks:
        b, w = reserve(b, cost, now=start)
        slots.append(w)
    fitting = [w for w in slots if w != NEVER]
    assert fitting == sorted(fitting)  # FIFO: a later caller never goes before an earlier one


@given(st.integers(1, 10_000), st.floats(0.01, 600.0), costs)
def test_paced_calls_stay_within_the_budgets_envelope(limit: int, window: float, asks: list[int]) -> None:
    # Every call sent at its slot: by any moment t the calls sent since 0 total at most a whole
    # budget plus what refilled meanwhile (limit / window per second), what the server allows.
    b = Bucket(limit, window)
    sent: list[tuple[float, int]] = []
    for cost in asks:
        b, w = reserve(b, cost, now=0.0)
        if w != NEVER:
            sent.append((w, cost))
    for at, _ in sent:
        spent = sum(c for t, c in sent if t <= at)
        assert spent <= limit * (1 - HEADROOM) + at * limit / window + 1e-6 * limit


@given(st.integers(1, 10_000), st.floats(0.01, 600.0), st.integers(0, 20_000), st.floats(0.0, 1e4), st.floats(0.0, 1e4))
def test_the_wait_is_finite_exactly_when_the_cost_fits_and_never_negative(limit: int, window: float, cost: int,
                                                                        tat: float, now: float) -> None:
    w = wait_for(Bucket(limit, window, tat), cost, now)
    assert (w == NEVER) == (cost > limit)
    assert w >= 0.0
    if w != NEVER:
        assert w <= max(0.0, tat - now) + window + 1e-6  # never past the budget's own horizon


@given(st.integers(1, 10_000), st.integers(0, 10_000), st.one_of(st.none(), st.floats(0.0, 86_400.0)),
       st.floats(0.001, 3600.0), st.floats(0.0, 1e6), st.integers(0, 10**6))
def test_learning_from_any_valid_answer_gives_a_bucket_with_a_bounded_debt(limit: int, remaining: int, reset: float | None,
                                                                       window: float, now: float, pending: int) -> None:
    remaining = min(remaining, limit)
    b = learn(None, Limits(limit, remaining, reset, window), now, pending)
    assert b.limit == limit and b.window_s == window
    assert now <= b.tat <= now + window + pending * window / limit + 1e-6
    assert math.isfinite(wait_for(b, min(limit, 1), now))


def test_token_cost_is_the_prompt_estimate_plus_the_cap_times_n() -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "x" * 40}], "max_tokens": 100, "n": 2}
    assert estimate_tokens(body) == 10 + 200
    assert estimate_tokens({"messages": [{"role": "user", "content": [
        {"type": "text", "text": "abcd"}, {"type": "image_url", "image_url": {"url": "data:"}}]}],
        "max_completion_tokens": 5}) == 1 + 85 + 5
    assert estimate_tokens({"input": ["abcdefgh", "abcd"]}) == 3  # embeddings: inputs only
    assert estimate_tokens(None) == 0
    assert estimate_tokens({"messages": [], "max_tokens": "lots"}) == 0  # bad cap: prompt only


@given(st.recursive(st.one_of(st.text(max_size=20), st.integers(), st.none(), st.booleans()),
                    lambda inner: st.one_of(st.lists(inner, max_size=4),
                                            st.dictionaries(st.sampled_from(["content", "text", "type", "max_tokens", "n", "x"]),
                                                            inner, max_size=4)), max_leaves=20))
def test_any_body_shape_estimates_without_raising(messages: object) -> None:
    assert estimate_tokens({"messages": messages, "max_tokens": 3}) >= 0


def test_interactive_calls_overtake_batch_calls_that_keep_the_budget_spent() -> None:
    b = Bucket(limit=100, window_s=10.0)
    for _ in range(10):  # batch calls queue up: they may spend only 70% of the budget at once
        b, _ = reserve(b, 10, now=0.0, low=True)
    batch_wait = wait_for(b, 10, now=0.0, low=True)
    interactive_wait = wait_for(b, 10, now=0.0)
    assert interactive_wait == pytest.approx(batch_wait - 2.5)  # a quarter of the 10 s window sooner


@given(st.integers(1, 10_000), st.floats(0.01, 600.0), st.integers(0, 10_000), st.floats(0.0, 1e4), st.floats(0.0, 1e4))
def test_a_low_priority_call_never_waits_less(limit: int, window: float, cost: int, tat: float, now: float) -> None:
    b = Bucket(limit, window, tat)
    assert wait_for(b, cost, now, low=True) >= wait_for(b, cost, now)
