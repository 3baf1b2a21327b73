"""The ``replicas`` scenario's pure parts (its workload and ideal hit rate) and the harness's
replica helper (``start_replicas``): N real reference-server processes, each with its own
prefix cache, as its ``/metrics`` shows."""

from __future__ import annotations

import random

import httpx

from benchmarks.harness.serverproc import start_replicas
from benchmarks.scenarios import discover
from benchmarks.scenarios.replicas import (
    MAX_TURNS,
    TURN_GAP,
    ideal_hit_rate,
    prefix_counters,
    sessions_workload,
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
    finally:
        for server in servers:
            server.stop()


def test_the_replicas_command_starts_and_stops_them() -> None:
    import signal
    import subprocess
    import sys
    from pathlib import Path

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
        assert proc.wait(30) == 0
    for origin in origins:  # both stopped with it
        try:
            httpx.get(origin + "/health", timeout=2)
            raise AssertionError(f"{origin} still answers")
        except httpx.ConnectError:
            pass
