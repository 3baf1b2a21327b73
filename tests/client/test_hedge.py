"""Hedged requests: the decisions (pure), then races against the real reference server.

The server is told to stall only its first request (``--faults 'stall_ms=N;times=1'``), so the
first copy of the first call is the straggler and the hedged copy, which arrives second, is not:
which copy wins is decided by the fault, not by timing luck. The races run through ``OpenAI``
and ``AsyncOpenAI`` (``drive``: each test runs on both).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Any

import httpx
import pytest

import llmclient
from llmclient import AsyncOpenAI, HedgeConfig, OpenAI
from llmclient.features.hedge import HedgeTrack, delay_ms, eligible, hedge_config
from llmclient.layers._sync.hedge import twin as hedge_twin
from tests._both import Drive
from tests.conftest import start_ref_server, stop_ref_server

BODY = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}
STALL_MS = 20_000  # far longer than any test waits: a test that waited for it would time out


# --------------------------------------------------------------------------- decisions


def test_delay_is_a_nearest_rank_quantile_once_enough_is_known() -> None:
    cfg = HedgeConfig(min_samples=10, quantile=0.9, min_delay_ms=1)
    assert delay_ms([5.0] * 9, cfg) is None
    samples = [float(x) for x in range(1, 21)]  # 1..20: the 90th percentile is 18
    assert delay_ms(samples, cfg) == 18.0
    assert delay_ms([0.1] * 20, cfg) == 1  # never sooner than min_delay_ms
    assert delay_ms([], HedgeConfig(after_ms=75)) == 75  # a fixed delay needs no samples


def test_which_calls_may_be_hedged() -> None:
    assert eligible("POST", "/chat/completions", BODY)
    assert eligible("POST", "/embeddings", {"input": "x"})
    assert eligible("POST", "/chat/completions", {**BODY, "stream": True})  # raced on first token
    assert not eligible("POST", "/chat/completions", {**BODY, "store": True})
    assert not eligible("GET", "/models", None)
    assert not eligible("POST", "/files", {})


def test_the_budget_bounds_hedges_to_the_ratio_plus_burst() -> None:
    track = HedgeTrack(HedgeConfig(after_ms=1, max_ratio=0.1, burst=2))
    taken = 0
    for _ in range(100):
        track.plan()
        taken += track.take()
    assert taken == 10  # the first one (1 token to start), then one per 10 calls
    idle = HedgeTrack(HedgeConfig(after_ms=1, max_ratio=0.5, burst=2))
    for _ in range(100):
        idle.plan()  # credit piles up while nothing is slow ...
    assert [idle.take() for _ in range(3)] == [True, True, False]  # ... to the burst only


@pytest.mark.parametrize(("kwargs", "needle"), [
    ({"quantile": 1.0}, "quantile"), ({"max_ratio": 0}, "max_ratio"), ({"burst": 0.5}, "burst"),
    ({"after_ms": -1}, "after_ms"), ({"min_samples": 50, "window": 10}, "min_samples"),
])
def test_bad_configs_are_named(kwargs: dict[str, Any], needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        HedgeConfig(**kwargs)


def test_hedge_option_values() -> None:
    assert hedge_config(True) == HedgeConfig()
    assert hedge_config(False) is None and hedge_config(None) is None
    cfg = HedgeConfig(after_ms=5)
    assert hedge_config(cfg) is cfg
    with pytest.raises(TypeError, match="hedge must be"):
        hedge_config("fast")
    for cls in (OpenAI, AsyncOpenAI):
        with pytest.raises(TypeError, match="hedge must be"):
            cls(api_key="k", base_url="http://127.0.0.1:9", hedge=3)


# --------------------------------------------------------------------------- end to end


@pytest.fixture()
def stalling_server() -> Any:
    srv = start_ref_server("--faults", f"stall_ms={STALL_MS};times=1")
    yield srv
    llmclient.close_all()  # the stalled request's connection: the server need not wait for it
    stop_ref_server(srv)


def _in_flight(server: Any) -> int:
    text = httpx.get(server.base_url.rsplit("/v1", 1)[0] + "/metrics", timeout=5).text
    line = next(x for x in text.splitlines() if x.startswith("http_requests_in_flight"))
    return int(float(line.split()[-1]))


def _assert_only_the_probe_in_flight(drive: Drive, server: Any) -> None:
    """The stalled copy's stream was reset: the server stopped serving it (only the /metrics
    probe itself is in flight), long before its stall would have ended."""
    deadline = time.monotonic() + 10  # half the 20 s stall: room for a busy machine
    while _in_flight(server) > 1 and time.monotonic() < deadline:
        drive.sleep(0.05)
    assert _in_flight(server) == 1


def test_copy_answers_when_the_first_copy_stalls_and_the_stalled_copy_is_cancelled(
        drive: Drive, stalling_server: Any) -> None:
    client = drive.client(base_url=stalling_server.base_url, api_key="k", hedge=HedgeConfig(after_ms=100))
    t0 = time.perf_counter()
    r = drive(client.chat.completions.create(**BODY))
    elapsed = time.perf_counter() - t0
    assert r.choices[0].message.content
    assert r.timings.hedged and r.timings.hedge_won
    assert elapsed < STALL_MS / 1000 / 2  # not a timing claim: the stall never ended
    assert r.timings.total_ms is not None and r.timings.total_ms >= 100  # from the call's start
    stats = client.hedge_stats()["/chat/completions gpt-4o-mini"]
    assert stats["hedges"] == 1 and stats["wins"] == 1
    _assert_only_the_probe_in_flight(drive, stalling_server)  # the stalled copy was reset
    second = drive(client.chat.completions.create(**BODY))  # nothing stalls now: no copy needed
    assert not second.timings.hedged


def test_streams_race_on_their_first_token(drive: Drive) -> None:
    """A slow replica answers a stream's headers (and its role-only chunk) at once and its
    first token late: the copy that brings the first token wins, the slow stream is reset."""
    srv = start_ref_server("--faults", f"slow_ms={STALL_MS};times=1")
    body = {**BODY, "max_tokens": 12, "stream": True}
    try:
        client = drive.client(base_url=srv.base_url, api_key="k", hedge=HedgeConfig(after_ms=100))
        t0 = time.perf_counter()
        stream = drive(client.chat.completions.create(**body))
        text = "".join(c.choices[0].delta.content or "" for c in drive.iterate(stream) if c.choices)
        assert time.perf_counter() - t0 < STALL_MS / 1000 / 2
        timings = stream.timings
        assert text and timings.hedge_won and timings.first_token_ms is not None
        _assert_only_the_probe_in_flight(drive, srv)
    finally:
        llmclient.close_all()
        stop_ref_server(srv)


def test_when_the_first_copy_fails_the_other_answers(drive: Drive) -> None:
    # The first request stalls 300 ms and fails (no retries); the copy, sent at 100 ms, stalls
    # 1 s and answers: the caller gets the copy's answer, not the first copy's error.
    srv = start_ref_server("--faults", "stall_ms=300;status=503;times=1,stall_ms=1000;times=1")
    try:
        client = drive.client(base_url=srv.base_url, api_key="k", max_retries=0,
                              hedge=HedgeConfig(after_ms=100))
        r = drive(client.chat.completions.create(**BODY))
        assert r.timings.hedge_won and r.choices[0].message.content
    finally:
        llmclient.close_all()
        stop_ref_server(srv)


def test_a_copy_that_wins_ends_the_first_copys_retry_wait(drive: Drive) -> None:
    srv = start_ref_server("--faults", "status=429;retry_after=20;times=1")
    try:
        t0 = time.perf_counter()
        client = drive.client(base_url=srv.base_url, api_key="k",  # 429: wait 20 s, then retry
                              hedge=HedgeConfig(after_ms=100))
        r = drive(client.chat.completions.create(**BODY))
        assert r.timings.hedge_won and r.choices[0].message.content
        assert time.perf_counter() - t0 < 10  # the copy's answer did not wait for that retry
    finally:
        llmclient.close_all()
        stop_ref_server(srv)


def test_no_hedge_without_the_option_or_when_the_call_turns_it_off(drive: Drive, stalling_server: Any) -> None:
    client = drive.client(base_url=stalling_server.base_url, api_key="k", timeout=1.0, max_retries=0,
                          hedge=HedgeConfig(after_ms=50))
    with pytest.raises(llmclient.APITimeoutError):  # the stalled first call, sent once
        drive(client.chat.completions.create(**BODY, hedge=False))
    assert client.hedge_stats() == {}


def test_the_copy_is_marked_and_keeps_the_trace(drive: Drive, ref_server: Any) -> None:
    client = drive.client(base_url=ref_server.base_url, api_key="k")
    call = client._build_call("POST", "/chat/completions", BODY)
    twin = hedge_twin(call)
    assert twin.headers["x-llm-hedge"] == "1"
    assert twin.headers["idempotency-key"] == call.headers["idempotency-key"] + "-hedge"
    assert twin.headers["traceparent"] == call.headers["traceparent"]
    assert twin.record is not call.record and call.record.hedged


def test_the_delay_is_learned_across_calls(drive: Drive, ref_server: Any) -> None:
    client = drive.client(base_url=ref_server.base_url, api_key="k", hedge=HedgeConfig(min_samples=5))
    for _ in range(8):
        r = drive(client.chat.completions.create(**BODY))
    stats = client.hedge_stats()["/chat/completions gpt-4o-mini"]
    assert stats["samples"] == 8 and stats["delay_ms"] is not None
    assert r.choices[0].message.content
    client = drive.client(base_url=ref_server.base_url, api_key="k")
    for _ in range(3):  # per call: each hedge=True is a new config, equal to the last
        drive(client.chat.completions.create(**BODY, hedge=True))
    assert client.hedge_stats()["/chat/completions gpt-4o-mini"]["samples"] == 3


def test_no_copies_where_the_loser_could_not_be_cancelled(drive: Drive, ref_server_h1: Any) -> None:
    """HTTP/1.1 requests cannot be cancelled from outside: a copy would only add load."""
    client = drive.client(base_url=ref_server_h1.base_url, api_key="k",
                          hedge=HedgeConfig(after_ms=0, max_ratio=1, burst=10))
    drive(client.chat.completions.create(**BODY))  # learns that the origin speaks HTTP/1.1
    answers = [drive(client.chat.completions.create(**BODY)) for _ in range(5)]
    assert {r.timings.http_version for r in answers} == {"HTTP/1.1"}
    assert not any(r.timings.hedged for r in answers)


_FORK_SCRIPT = """
import os, sys
import llmclient
body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}
plain = llmclient.OpenAI(base_url=sys.argv[1], api_key="k",
                         hedge=llmclient.HedgeConfig(after_ms=60_000))
plain.chat.completions.create(**body)  # schedules a deadline: the timer thread now exists
llmclient.close_all()  # as documented before a fork
pid = os.fork()
if pid == 0:  # the child's call stalls: its own timer must start the copy
    stalling = llmclient.OpenAI(base_url=sys.argv[2], api_key="k",
                                hedge=llmclient.HedgeConfig(after_ms=50))
    os._exit(0 if stalling.chat.completions.create(**body).timings.hedge_won else 3)
sys.exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
"""


# Sync only: forking a process that runs an event loop is not supported by asyncio.
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_hedging_works_in_a_forked_child(ref_server: Any, stalling_server: Any) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", _FORK_SCRIPT, ref_server.base_url, stalling_server.base_url],
        capture_output=True, text=True, timeout=STALL_MS / 1000 / 2)
    assert proc.returncode == 0, proc.stderr[-2000:]
