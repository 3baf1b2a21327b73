"""Adaptive concurrency (opt-in): the AIMD decision (pure, hypothesis) and the gate that holds
calls at the limit, on both clients against the reference server (which sends no rate-limit
headers unless asked)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import llmclient
from llmclient.features.admit.concurrency import (
    MIN_BASELINE_MS,
    MIN_ROUND,
    NO_SIGNAL,
    AdaptiveConfig,
    AdaptiveLimit,
    adaptive_config,
    observe,
    unsignalled,
)
from tests._both import Drive
from tests.conftest import RefServer, start_ref_server, stop_ref_server

CONFIG = AdaptiveConfig(initial=4, minimum=1, maximum=32)


def _after_a_cut(value: float) -> AdaptiveLimit:
    """A limit past slow start (one cut behind it), at the baseline of 10 ms."""
    return AdaptiveLimit(value, baseline_ms=10.0, cuts=1)


def test_latency_at_the_baseline_grows_the_limit_by_one_per_round_while_it_is_used() -> None:
    lim = _after_a_cut(4.0)
    for _ in range(5):  # 1/limit a call: about one a round of 4 to 5 calls
        lim = observe(CONFIG, lim, 10.0, in_flight=4)
    assert lim.allowed == 5 and lim.cuts == 1
    idle = observe(CONFIG, lim, 10.0, in_flight=1)
    assert idle.value == lim.value  # an unused limit is not evidence that a bigger one is safe


def test_answers_without_a_sample_lift_the_limit_only_before_any_sample() -> None:
    blind = unsignalled(CONFIG, AdaptiveLimit(4.0))
    assert blind.allowed == CONFIG.maximum and blind.reason == NO_SIGNAL and blind.samples == 0
    assert unsignalled(CONFIG, blind) == blind
    # once a sample came (a stream's TTFT, Server-Timing), answers without one change nothing
    learned = observe(CONFIG, AdaptiveLimit(4.0), 10.0, in_flight=1)
    assert unsignalled(CONFIG, learned) is learned
    # the first sample after the lift hands the limit back to observe(): a standing queue cuts it
    lim = blind
    for _ in range(3 * CONFIG.maximum):  # the first round holds the 30 ms sample, the second cuts
        lim = observe(CONFIG, lim, 30.0 if lim.samples == 0 else 500.0, in_flight=CONFIG.maximum)
    assert lim.cuts >= 1 and lim.allowed < CONFIG.maximum


def test_before_the_first_cut_the_limit_doubles_per_round() -> None:
    lim = AdaptiveLimit(4.0)
    for _ in range(4):  # one round of 4 calls, each at the baseline with the limit in use
        lim = observe(CONFIG, lim, 10.0, in_flight=lim.allowed)
    assert lim.allowed == 8 and "slow start" in lim.reason


def test_a_queue_standing_through_a_round_cuts_once() -> None:
    lim = _after_a_cut(8.0)
    for _ in range(7):
        lim = observe(CONFIG, lim, 500.0, in_flight=8)
    assert lim.cuts == 1  # the round (8 samples) is not over yet
    lim = observe(CONFIG, lim, 500.0, in_flight=8)
    assert lim.allowed == 6 and lim.cuts == 2 and "cut" in lim.reason
    # the 7 calls in flight at the cut queued under the old limit: their answers do not count
    for _ in range(7):
        lim = observe(CONFIG, lim, 500.0, in_flight=8)
    assert lim.cuts == 2
    for _ in range(max(lim.allowed, MIN_ROUND)):  # a whole new round, still queueing: cut again
        lim = observe(CONFIG, lim, 500.0, in_flight=6)
    assert lim.cuts == 3


def test_step_jitter_is_not_congestion() -> None:
    # An idle batching server still makes an arriving call wait up to one step: single slow
    # samples, and samples within MIN_BASELINE_MS x tolerance, never cut.
    lim = _after_a_cut(8.0)
    for i in range(10 * MIN_ROUND):
        lim = observe(CONFIG, lim, 500.0 if i % MIN_ROUND else 10.0, in_flight=8)
    assert lim.cuts == 1
    for _ in range(10 * MIN_ROUND):
        lim = observe(CONFIG, lim, CONFIG.tolerance * MIN_BASELINE_MS, in_flight=8)
    assert lim.cuts == 1 and lim.allowed > 8


def test_the_setting_is_checked_at_once() -> None:
    assert adaptive_config(None) is None and adaptive_config(False) is None
    assert adaptive_config("adaptive") == AdaptiveConfig()
    assert adaptive_config({"initial": 2, "maximum": 8}) == AdaptiveConfig(initial=2, maximum=8)
    with pytest.raises(ValueError, match="minimum <= initial <= maximum"):
        adaptive_config({"initial": 0})
    with pytest.raises(ValueError, match="concurrency must be"):
        adaptive_config("fast")


@given(st.lists(st.tuples(st.floats(0.0, 1e5), st.integers(0, 300)), max_size=200))
def test_any_samples_keep_the_limit_within_its_bounds(samples: list[tuple[float, int]]) -> None:
    lim = AdaptiveLimit(float(CONFIG.initial))
    for ms, in_flight in samples:
        lim = observe(CONFIG, lim, ms, in_flight)
        assert CONFIG.minimum <= lim.value <= CONFIG.maximum
        assert lim.baseline_ms is None or lim.baseline_ms >= 0.0


def _stream(drive: Drive, client: Any, **kw: Any) -> Any:
    return drive(client.chat.completions.create(model="gpt-4o-mini", max_tokens=4, stream=True,
                                                messages=[{"role": "user", "content": "hi"}], **kw))


def _close(drive: Drive, stream: Any) -> None:
    result = stream.close()
    if drive.is_async:
        drive(result)


def test_the_gate_holds_a_call_past_the_limit_until_a_slot_frees(drive: Drive, ref_server: RefServer) -> None:
    client = drive.client(base_url=ref_server.base_url, api_key="k",
                          concurrency={"initial": 2, "minimum": 1, "maximum": 2})
    first, second = _stream(drive, client), _stream(drive, client)  # two slots, held until closed
    (stats,) = client.concurrency_limits.values()
    assert stats["in_flight"] == 2 and stats["limit"] == 2
    with pytest.raises(llmclient.APITimeoutError, match="concurrency slot"):
        _stream(drive, client, timeout=0.2)
    _close(drive, first)
    third = _stream(drive, client)  # the freed slot
    assert drive.iterate(third)
    _close(drive, second)
    (stats,) = client.concurrency_limits.values()
    assert stats["in_flight"] == 0 and stats["calls_waited"] == 1 and stats["samples"] >= 1


def test_a_plain_call_gives_its_slot_back_when_its_body_is_read(drive: Drive, ref_server: RefServer) -> None:
    client = drive.client(base_url=ref_server.base_url, api_key="k", concurrency="adaptive")
    for _ in range(3):
        drive(client.chat.completions.create(model="gpt-4o-mini", max_tokens=2,
                                             messages=[{"role": "user", "content": "hi"}]))
    (stats,) = client.concurrency_limits.values()
    assert stats["in_flight"] == 0
    assert drive.client(base_url=ref_server.base_url, api_key="k").concurrency_limits == {}  # opt-in


@pytest.fixture(scope="module")
def silent_server() -> Iterator[RefServer]:
    # vLLM's shape: no Server-Timing on answers or at the end of streams
    server = start_ref_server("--no-server-timing")
    yield server
    stop_ref_server(server)


def test_plain_calls_without_server_timing_are_not_held_at_the_initial_limit(
        drive: Drive, silent_server: RefServer, caplog: pytest.LogCaptureFixture) -> None:
    client = drive.client(base_url=silent_server.base_url, api_key="k",
                          concurrency={"initial": 2, "minimum": 1, "maximum": 64})
    with caplog.at_level("WARNING", logger="llmclient.admit"):
        for _ in range(3):
            r = drive(client.chat.completions.create(model="gpt-4o-mini", max_tokens=2,
                                                     messages=[{"role": "user", "content": "hi"}]))
            assert r.timings.server_timing == {}  # the server really sent none
    (stats,) = client.concurrency_limits.values()
    assert stats["samples"] == 0 and stats["in_flight"] == 0
    assert stats["limit"] == 64 and stats["reason"] == NO_SIGNAL  # not a cap of 2 learned from nothing
    warned = [r.getMessage() for r in caplog.records if "no signal" in r.getMessage()]
    assert len(warned) == 1 and silent_server.base_url.rstrip("/") in warned[0]
    # a stream's time to first token is a signal even without Server-Timing: the limit learns
    stream = _stream(drive, client)
    assert drive.iterate(stream)
    _close(drive, stream)
    (stats,) = client.concurrency_limits.values()
    assert stats["samples"] == 1 and stats["reason"] != NO_SIGNAL


def test_with_server_timing_plain_calls_are_samples(drive: Drive, ref_server: RefServer) -> None:
    client = drive.client(base_url=ref_server.base_url, api_key="k",
                          concurrency={"initial": 2, "minimum": 1, "maximum": 64})
    drive(client.chat.completions.create(model="gpt-4o-mini", max_tokens=2,
                                         messages=[{"role": "user", "content": "hi"}]))
    (stats,) = client.concurrency_limits.values()
    assert stats["samples"] == 1 and stats["limit"] <= 3 and stats["reason"] != NO_SIGNAL


@pytest.fixture(scope="module")
def uvicorn_server() -> Iterator[RefServer]:
    # A self-hosted server's shape: uvicorn, HTTP/1.1, no rate-limit headers (vLLM, SGLang).
    server = start_ref_server("--server", "uvicorn")
    yield server
    stop_ref_server(server)


def test_under_uvicorn_nothing_is_learned_and_the_gate_still_holds(drive: Drive, uvicorn_server: RefServer) -> None:
    client = drive.client(base_url=uvicorn_server.base_url, api_key="k", pacing=True,
                          concurrency={"initial": 1, "minimum": 1, "maximum": 1})
    first = _stream(drive, client)
    with pytest.raises(llmclient.APITimeoutError, match="concurrency slot"):
        _stream(drive, client, timeout=0.2)
    assert drive.iterate(first)
    _close(drive, first)
    drive(client.chat.completions.create(model="gpt-4o-mini", max_tokens=2,
                                         messages=[{"role": "user", "content": "hi"}]))
    assert client.rate_limits == {}  # no headers: nothing to pace on
    (stats,) = client.concurrency_limits.values()
    assert stats["in_flight"] == 0 and stats["samples"] >= 1
