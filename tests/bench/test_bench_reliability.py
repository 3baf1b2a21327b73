"""The reliability benchmark's plumbing (``benchmarks/reliability.py``), small: its counts come
from the upstream's access log and the callers' own tallies, and its outage really is one (every
answer 503 in the window, none outside it)."""

from __future__ import annotations

import shutil

import pytest

import llmclient
from benchmarks import reliability


def test_an_outage_run_counts_calls_and_attempts_in_and_after_the_window() -> None:
    [ours, official] = reliability.outage(callers=4, outage_s=1.0, before_s=1.0, after_s=1.5,
                                          clients=("llmclient", "openai"))
    for tally in (ours, official):
        n = tally.notes
        assert n["calls_during"] > 0 and n["calls_after"] > 0
        assert n["after_ok"] == n["calls_after"]  # every call after the outage answered
        assert all(k.startswith("InternalServerError 503") for k in tally.errors)
    assert ours.errors  # refused retries fail at once (the official client's outlast a 1 s outage)
    # a mechanism bound, not a rate: the budget lets through at most half its bucket (plus the
    # retries already started when it ran out), never two retries per call
    budget = llmclient.RetryBudget()
    assert ours.notes["attempts_during"] <= ours.notes["calls_during"] + budget.threshold + 4  # 4 callers
    assert ours.notes["budget_refusals"] > 0
    assert official.notes["attempts_during"] >= 2 * official.notes["calls_during"]


@pytest.mark.skipif(shutil.which("nginx") is None, reason="nginx is not installed (scripts/ensure-system-deps.sh)")
def test_a_small_churn_run_finds_every_call_in_the_upstream_log() -> None:
    rows = reliability.churn(calls=60, concurrency=4, clients=("llmclient",))
    assert [r.target for r in rows] == ["nginx GOAWAY every 10 requests", "uvicorn closing connections idle 1 s"]
    for tally in rows:
        assert tally.calls == 60 and not tally.errors
        assert tally.duplicated == 0 and tally.upstream_attempts == 60
