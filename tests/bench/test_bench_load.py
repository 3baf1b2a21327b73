"""Runners and request drivers: coordinated omission, interleaving, parsing of server facts."""

from __future__ import annotations

import time

import pytest

from benchmarks.harness._scenario import ChatRequest, Context, Driver, RequestRecord
from benchmarks.harness.drivers import classify_error, parse_server_timing
from benchmarks.harness.load import run_closed_loop, run_interleaved, run_open_loop
from benchmarks.harness.sampler import parse_prometheus


def _ctx() -> Context:
    return Context(base_url="http://127.0.0.1:9/v1", direct_url="http://127.0.0.1:9/v1",
                   network="loopback", quick=True, api_key="k", model="m", budget=1,
                   capabilities=frozenset())


def _request(i: int) -> ChatRequest:
    return ChatRequest(messages=[{"role": "user", "content": str(i)}])


def test_open_loop_charges_a_stall_to_the_requests_scheduled_behind_it() -> None:
    ctx = _ctx()
    order: list[str] = []

    async def driver(request: ChatRequest, scheduled: float | None) -> RequestRecord:
        assert scheduled is not None
        sent = time.perf_counter()
        content = request.messages[0]["content"]
        order.append(content)
        if content == "0":
            time.sleep(0.3)    # blocks the loop: the client stalls, like a GC pause
        return RequestRecord(variant="v", trace_id=content, start_s=scheduled - ctx.epoch,
                             latency_ms=(time.perf_counter() - scheduled) * 1000.0, status=200,
                             schedule_lag_ms=(sent - scheduled) * 1000.0)

    try:
        records = run_open_loop(ctx, driver, [_request(i) for i in range(3)], [0.0, 0.05, 0.1])
    finally:
        ctx.close()
    by_id = {r.trace_id: r for r in records}
    assert order == ["0", "1", "2"]
    # Request 1 was due 50 ms in but could only go after the 300 ms stall: its latency
    # counts from when it was due, so at least 250 ms of the stall shows up in it.
    assert by_id["1"].schedule_lag_ms >= 250.0
    assert by_id["1"].latency_ms >= 250.0


def test_interleave_alternates_variants_and_drops_warmup_rounds() -> None:
    ctx = _ctx()
    sent: list[str] = []

    def make(name: str) -> Driver:
        async def driver(request: ChatRequest, scheduled: float | None) -> RequestRecord:
            sent.append(name)
            return RequestRecord(variant="", trace_id="t", start_s=0.0, latency_ms=1.0,
                                 status=200)
        return driver

    try:
        out = run_interleaved(ctx, {"a": make("a"), "b": make("b")},
                              [_request(i) for i in range(3)], warmup=1)
    finally:
        ctx.close()
    assert sent == ["a", "b", "b", "a", "a", "b", "b", "a"]
    assert [len(out["a"]), len(out["b"])] == [3, 3]
    assert {r.variant for r in out["a"]} == {"a"}


def test_closed_loop_keeps_at_most_concurrency_requests_in_flight() -> None:
    ctx = _ctx()
    in_flight = peak = 0

    async def driver(request: ChatRequest, scheduled: float | None) -> RequestRecord:
        nonlocal in_flight, peak
        import asyncio

        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.001)
        in_flight -= 1
        return RequestRecord(variant="v", trace_id="t", start_s=0.0, latency_ms=1.0, status=200)

    try:
        records = run_closed_loop(ctx, driver, [_request(i) for i in range(20)], concurrency=3)
    finally:
        ctx.close()
    assert len(records) == 20 and peak == 3
    with pytest.raises(ValueError, match="concurrency"):
        run_closed_loop(_ctx(), driver, [], concurrency=0)


def test_server_timing_parsing_follows_the_w3c_grammar() -> None:
    value = 'queue;dur=60.5, prefill;desc="pre fill";dur=3.9, cache;desc=hit, total;dur=251'
    assert parse_server_timing(value) == {"queue": 60.5, "prefill": 3.9, "total": 251.0}
    assert parse_server_timing(None) == {}
    assert parse_server_timing("bad;dur=x") == {}


def test_errors_are_classified_by_kind_across_libraries() -> None:
    import httpx

    assert classify_error(httpx.ReadTimeout("t")) == "timeout"
    assert classify_error(httpx.ConnectError("c")) == "connect"
    assert classify_error(httpx.RemoteProtocolError("r")) == "reset"
    assert classify_error(ValueError("v")) == "other"
    llmclient = pytest.importorskip("llmclient")
    assert classify_error(llmclient.IncompleteStreamError("cut")) == "truncated"


def test_prometheus_samples_are_summed_over_labels() -> None:
    text = "\n".join([
        "# HELP gpu_memory_used_bytes GPU memory in use",
        'gpu_memory_used_bytes{gpu="0",name="NVIDIA H100 80GB"} 1000',
        'gpu_memory_used_bytes{gpu="1",name="NVIDIA H100 80GB"} 500',
        "gpu_utilization_percent NaN",
        "llm_requests_running 3",
        "http_requests_total 9",
    ])
    assert parse_prometheus(text) == {"gpu_memory_used_bytes": 1500.0,
                                      "llm_requests_running": 3.0}


def test_interleaved_copies_differ_across_variants_but_repeat_within_one() -> None:
    from benchmarks.harness.load import distinct_for

    request = ChatRequest(messages=[{"role": "system", "content": "be brief"},
                                    {"role": "user", "content": "hello"}])
    a1, a2, b = distinct_for(request, "a"), distinct_for(request, "a"), distinct_for(request, "b")
    assert a1 == a2 and a1 != b
    assert a1.messages[0]["content"].endswith("be brief")
    assert request.messages[0]["content"] == "be brief"      # the original is untouched
