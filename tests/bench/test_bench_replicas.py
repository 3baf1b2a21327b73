"""The ``replicas`` scenario's pure parts (its workload and ideal hit rate) and the harness's
replica helper (``start_replicas``): N real reference-server processes, each with its own
prefix cache, as its ``/metrics`` shows."""

from __future__ import annotations

import random
from pathlib import Path

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchmarks.harness.records import RequestRecord
from benchmarks.harness.serverproc import start_replicas
from benchmarks.scenarios import discover
from benchmarks.scenarios.replicas import (
    LOADS,
    MAX_TURNS,
    PLATEAU,
    TURN_GAP,
    WORKLOADS,
    _turns_note,
    engine_counters,
    first_turns,
    halved_after,
    ideal_hit_rate,
    prefix_counters,
    saturated,
    sessions_workload,
    share_windows,
    subset,
    turn_split,
    usage_summary,
    variant_suffix,
)

SYSTEMS = ["system one " * 50, "system two " * 50]


def test_the_scenario_is_discovered() -> None:
    scenarios, errors = discover()
    assert not errors
    assert "replicas" in [s.name for s in scenarios]


def test_sessions_grow_turn_by_turn_with_a_gap() -> None:
    prompts = sessions_workload(200, random.Random(1), SYSTEMS)
    assert len(prompts) == 200
    assert sessions_workload(200, random.Random(1), SYSTEMS) == prompts  # seeded: reproducible
    seen_at: dict[str, int] = {}
    for n, messages in enumerate(prompts):
        assert messages[0]["role"] == "system" and messages[0]["content"] in SYSTEMS
        assert messages[-1]["role"] == "user" and len(messages) % 2 == 0
        assert len(messages) <= 2 * MAX_TURNS
        session = messages[1]["content"]  # a session's own first message names it
        if len(messages) > 2:
            # the previous turn is this one's prefix, at least TURN_GAP requests earlier
            previous = prompts[seen_at[session]]
            assert messages[:len(previous)] == previous
            assert n - seen_at[session] >= TURN_GAP
        seen_at[session] = n


def test_a_workload_sets_the_length_of_each_session_document() -> None:
    short = sessions_workload(40, random.Random(3), SYSTEMS, doc_words=100)
    long = sessions_workload(40, random.Random(3), SYSTEMS, doc_words=400)
    first_turns = [(a[1]["content"], b[1]["content"]) for a, b in zip(short, long, strict=True) if len(a) == 2]
    assert first_turns
    for a, b in first_turns:
        assert len(b.split()) - len(a.split()) == 300


def test_the_ladder_stops_once_doubling_the_calls_in_flight_gains_little() -> None:
    assert not saturated([])
    assert not saturated([25.0])
    assert not saturated([25.0, 35.0])  # +40%: not yet
    assert saturated([25.0, 35.0, 35.0 * (1 + PLATEAU) - 0.01])
    assert not saturated([25.0, 35.0, 35.0 * (1 + PLATEAU) + 0.01])
    assert saturated([30.0, 20.0])  # worse: past it


def test_subset_defaults_and_bad_input() -> None:
    assert subset(None, None) == (LOADS, True, tuple(WORKLOADS))
    assert subset("", "", "", quick=True) == (LOADS, True, tuple(WORKLOADS)[:1])
    assert subset("0.8", "0", "long") == ((0.8,), False, ("long",))
    assert subset("0.8,0.5", "1", "long,chat", quick=True) == ((0.5, 0.8), True, ("chat", "long"))
    with pytest.raises(ValueError, match=r"BENCH_REPLICAS_LOADS: 0\.7 is not one of"):
        subset("0.7", None)
    with pytest.raises(ValueError, match="BENCH_REPLICAS_LOADS: 'half' is not a number"):
        subset("half", None)
    with pytest.raises(ValueError, match="BENCH_REPLICAS_FAULTS must be 0 or 1, got 'yes'"):
        subset(None, "yes")
    with pytest.raises(ValueError, match="unknown workload 'huge'"):
        subset(None, None, "chat,huge")


def test_variant_names_of_the_first_workload_are_unchanged() -> None:
    first, *others = WORKLOADS
    assert variant_suffix(first) == ""
    assert all(variant_suffix(w) == f"/{w}" for w in others)


def _engines(busy: float, steps: float, tokens: float, hits: float, queries: float) -> dict[str, float]:
    return {"busy_s": busy, "steps": steps, "tokens": tokens, "hits": hits, "queries": queries}


def test_usage_summary_is_per_second_of_the_stretch() -> None:
    before = [_engines(1.0, 100, 500, 1000, 2000), _engines(0.0, 0, 0, 0, 0)]
    after = [_engines(6.0, 300, 1500, 3000, 6048), _engines(0.0, 0, 0, 0, 0)]
    u = usage_summary(10.0, before, after, [2.0, None], [3.0, 1.0], 1.5, (10.0, 40.0), (15.0, 60.0), 2,
                      step_tokens=1024)
    assert u["gpu_busy"] == [0.5, 0.0] and u["gpu_busy_mean"] == 0.25
    assert u["tokens_per_step"] == [5.0, None]
    # (4048 - 2000 prompt tokens computed + 1000 generated) / (200 steps x 1024)
    assert u["budget_use"] == [round(3048 / 204800, 3), None]
    assert u["server_cpu"] == [0.1, None]
    assert u["client_cpu"] == 0.15 and u["machine_cpu"] == 0.25 and u["cores"] == 2
    assert usage_summary(1.0, before, before, [None, None], [None, None], 0.0, None, None, 1)["machine_cpu"] is None


@given(st.lists(st.floats(min_value=0.1, max_value=1e3), min_size=1, max_size=8))
def test_a_ladder_that_keeps_gaining_is_never_saturated(gains: list[float]) -> None:
    throughputs = [1.0]
    for gain in gains:
        throughputs.append(throughputs[-1] * (1 + PLATEAU + gain))
        assert not saturated(throughputs)


def _record(ttft: float | None) -> RequestRecord:
    if ttft is None:
        return RequestRecord(variant="v", trace_id="t", start_s=0.0, latency_ms=0.0, status=503,
                             error_kind="status")
    return RequestRecord(variant="v", trace_id="t", start_s=0.0, latency_ms=ttft * 2, status=200, ttft_ms=ttft)


def test_the_turns_that_open_a_session_are_the_two_message_prompts() -> None:
    prompts = sessions_workload(60, random.Random(3), SYSTEMS)
    first = first_turns(prompts)
    assert first == [len(p) == 2 for p in prompts]
    assert 0 < sum(first) < len(first)  # some sessions, each with one opening turn
    assert sum(first) == sum(1 for p in prompts if p[1]["role"] == "user" and len(p) == 2)


def test_turn_split_compares_first_turns_and_follow_ups_apart() -> None:
    opening = [{"role": "system", "content": "s"}, {"role": "user", "content": "doc"}]
    follow = [*opening, {"role": "assistant", "content": "a"}, {"role": "user", "content": "q"}]
    prompts = [opening] * 10 + [follow] * 30
    # round-robin: openings 100 ms, follow-ups 90 ms; prefix: openings 100 ms, follow-ups 30 ms
    base = [_record(100.0)] * 10 + [_record(90.0)] * 30
    cand = [_record(100.0)] * 10 + [_record(30.0)] * 29 + [_record(None)]
    split = turn_split(base, cand, prompts, seed="t")
    assert split is not None
    assert split["first"]["n"] == 10 and split["first"]["ratio"] == 1.0
    assert split["follow_up"]["n"] == 30
    assert split["follow_up"]["baseline_p50_ms"] == 90.0 and split["follow_up"]["candidate_p50_ms"] == 30.0
    assert split["follow_up"]["ratio"] == 3.0 and split["follow_up"]["ci"] == [3.0, 3.0]
    note = _turns_note("prefix@50%", split)
    assert note is not None and "follow-up turns (n=30) 90 -> 30 ms, 3.00x" in note
    assert "first turns (n=10) 100 -> 100 ms, 1.00x" in note


def test_turn_split_refuses_records_that_do_not_line_up() -> None:
    prompts = [[{"role": "system", "content": "s"}, {"role": "user", "content": "d"}]] * 3
    assert turn_split([_record(1.0)] * 2, [_record(1.0)] * 3, prompts) is None


def test_the_slow_replicas_share_per_window_and_when_it_halved() -> None:
    # calls at 0.5 s steps for 10 s; the slow replica takes every 4th until 3 s, then none
    starts = [10.0 + 0.5 * i for i in range(20)]
    slow = [i % 4 == 0 and 10.0 + 0.5 * i < 13.0 for i in range(20)]
    windows = share_windows(starts, slow)
    assert [w for w, _, _ in windows] == [0.0, 2.0, 4.0, 6.0, 8.0]
    assert [n for _, _, n in windows] == [4, 4, 4, 4, 4]
    assert [x for _, x, _ in windows] == [0.25, 0.25, 0.0, 0.0, 0.0]
    assert halved_after(windows, 0.25) == 4.0  # the last window above 12.5% ends at 4 s
    assert halved_after([(0.0, 0.1, 5)], 0.25) == 0.0
    assert halved_after([(0.0, 0.0, 5), (2.0, 0.3, 5)], 0.25) is None  # back above at the end
    assert share_windows([], []) == [] and halved_after([], 0.25) is None


def test_the_ideal_hit_rate_counts_shared_leading_blocks() -> None:
    a = [{"role": "system", "content": "x" * 640}]
    assert ideal_hit_rate([a]) == 0.0
    assert ideal_hit_rate([a, a]) == 0.5  # the second reuses every block of the first
    b = [{"role": "system", "content": "y" * 640}]
    assert ideal_hit_rate([a, b]) == 0.0


def test_start_replicas_gives_each_its_own_process_and_prefix_cache() -> None:
    servers = start_replicas(2, profile="h200-1b", extra_args=("--cold-start-s", "0"))
    try:
        assert len({s.port for s in servers}) == 2
        assert len({s.process.pid for s in servers}) == 2
        body = {"model": servers[0].model(), "messages": [{"role": "system", "content": "shared " * 300},
                                           {"role": "user", "content": "hi"}], "max_tokens": 2}
        for _ in range(2):  # twice to the first replica only
            httpx.post(servers[0].base_url + "/chat/completions", json=body, timeout=30).raise_for_status()
        hits0, queries0 = prefix_counters(servers[0])
        hits1, queries1 = prefix_counters(servers[1])
        assert hits0 > 0 and queries0 > hits0
        assert (hits1, queries1) == (0.0, 0.0)
        busy0, busy1 = engine_counters(servers[0])["busy_s"], engine_counters(servers[1])["busy_s"]
        assert busy0 > 0 and busy1 == 0.0  # the simulated GPU's time went to the first only
    finally:
        for server in servers:
            server.stop()


def test_kv_blocks_overrides_the_profile_cache_size() -> None:
    servers = start_replicas(1, profile="h200-1b", extra_args=("--cold-start-s", "0", "--kv-blocks", "300"))
    try:
        text = httpx.get(servers[0].origin + "/metrics", timeout=10).text
        assert "llm_kv_blocks_total 300.0" in text
    finally:
        servers[0].stop()


def test_kv_blocks_must_be_positive() -> None:
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "benchmarks.server", "--port", "0", "--kv-blocks", "0"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and "--kv-blocks must be at least 1, got 0" in out.stderr


def test_the_replicas_command_starts_and_stops_them() -> None:
    import signal
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen([sys.executable, "-m", "benchmarks.harness.serverproc", "--replicas", "2",
                             "--profile", "zero"], cwd=root, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        origins = [proc.stdout.readline().split()[1] for _ in range(2)]
        assert len(set(origins)) == 2
        for origin in origins:
            assert httpx.get(origin + "/health", timeout=10).status_code == 200
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(60) == 0  # each replica drains (3 s at most) and is stopped together
    for origin in origins:  # both stopped with it
        try:
            httpx.get(origin + "/health", timeout=2)
            raise AssertionError(f"{origin} still answers")
        except httpx.ConnectError:
            pass


def test_base_url_takes_several_replicas_and_names_a_bad_one() -> None:
    from benchmarks.harness.cli import parse_base_urls

    assert parse_base_urls(None) == ()
    assert parse_base_urls("http://a:8000/v1/") == ("http://a:8000/v1",)
    assert parse_base_urls(" http://a/v1, https://b:8443/v1 ,") == ("http://a/v1", "https://b:8443/v1")
    for bad, says in (("", "empty"), ("http://a/v1,gpu2:8000", "'gpu2:8000' is not an http"),
                      ("http://a/v1,http://a/v1/", "listed twice")):
        with pytest.raises(ValueError, match=says):
            parse_base_urls(bad)


def test_prefix_counters_are_read_from_vllm_and_reference_metrics() -> None:
    from benchmarks.scenarios.replicas import counters_of

    vllm = ("# HELP vllm:prefix_cache_hits_total Prefix cache hits, in tokens.\n"
            "# TYPE vllm:prefix_cache_hits_total counter\n"
            'vllm:prefix_cache_hits_total{engine="0",model_name="llama"} 1500.0\n'
            'vllm:prefix_cache_hits_total{engine="1",model_name="llama"} 500.0\n'
            'vllm:prefix_cache_queries_total{engine="0",model_name="llama"} 4000.0\n'
            'vllm:num_requests_waiting{model_name="llama"} 3.0\n')
    c = counters_of(vllm)
    assert (c["hits"], c["queries"], c["known"]) == (2000.0, 4000.0, 1.0)
    ours = "llm_prefix_cache_hits_total 7\nllm_prefix_cache_queries_total 9\nllm_steps_total 3\n"
    c = counters_of(ours)
    assert (c["hits"], c["queries"], c["known"], c["steps"]) == (7.0, 9.0, 1.0, 3.0)
    assert counters_of("sglang:cache_hit_rate 0.5\n")["known"] == 0.0
    assert counters_of("")["known"] == 0.0


def test_the_scenario_runs_on_the_users_own_replicas(tmp_path: Path) -> None:
    # two servers started apart from the suite, given as --base-url URL1,URL2 (the user's fleet)
    import json
    import subprocess
    import sys

    from tests.conftest import start_ref_server, stop_ref_server

    fleet = [start_ref_server(profile="zero"), start_ref_server(profile="zero")]
    try:
        root = Path(__file__).resolve().parents[2]
        urls = ",".join(s.base_url for s in fleet)
        done = subprocess.run([sys.executable, "-m", "benchmarks", "--quick", "--scenarios", "replicas",
                               "--base-url", urls, "--out", str(tmp_path)],
                              cwd=root, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        (result,) = tmp_path.glob("*/result.json")
        doc = json.loads(result.read_text())
        (scenario,) = doc["scenarios"] if isinstance(doc["scenarios"], list) else doc["scenarios"].values()
        assert not scenario["skipped"]
        assert scenario["series"]["replicas"] == 2 and scenario["notes"][0].startswith("2 replicas (yours: ")
        runs = scenario["series"]["runs"]
        assert {"round_robin@50%", "least_loaded@50%", "prefix@50%"} <= set(runs)
        assert not any("+" in name for name in runs)  # no slow or killed replica: not ours to break
        served = {r["extra"]["replica"] for r in scenario["records"]["prefix@50%"] if r["status"] == 200}
        assert served <= {s.base_url.rstrip("/") for s in fleet} | {s.base_url for s in fleet}
        assert all(r["failed"] == 0 for r in runs.values())
        assert doc["server"]["replicas"] == [s.base_url.rstrip("/") for s in fleet]
    finally:
        for server in fleet:
            stop_ref_server(server)
