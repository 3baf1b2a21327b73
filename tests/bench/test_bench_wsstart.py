"""The ``wsstart`` scenario: a new Responses WebSocket conversation per arm, against real
reference-server processes (no timings asserted): which conversations took the socket the
previous one left, and the whole scenario through the suite's command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks import agents
from benchmarks.scenarios.wsstart import ARMS, FULL_ROUNDS, QUICK_ROUNDS, conversation, rounds_of
from tests.conftest import RefServer, start_ref_server, stop_ref_server

pytest.importorskip("websockets")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def server() -> Iterator[RefServer]:
    s = start_ref_server()
    yield s
    stop_ref_server(s)


def test_llmclients_next_conversation_takes_the_socket_and_the_controls_do_not(server) -> None:
    ours = agents.make_client("llmclient-ws", server.base_url)
    official = agents.make_client("official-ws", server.base_url)
    try:
        got = [conversation(ours, {}, "gpt-4o-mini")[2], conversation(ours, {}, "gpt-4o-mini")[2],
               conversation(ours, {"reuse": False}, "gpt-4o-mini")[2],
               conversation(official, {}, "gpt-4o-mini")[2], conversation(official, {}, "gpt-4o-mini")[2]]
        latency, ttft, _ = conversation(ours, {}, "gpt-4o-mini")
    finally:
        ours.close()
        official.close()
    assert got == [False, True, False, False, False]
    assert latency > 0 and ttft is not None and ttft <= latency


def test_the_run_is_sized_by_the_environment_and_a_bad_value_is_named() -> None:
    assert (rounds_of({}, True), rounds_of({}, False)) == (QUICK_ROUNDS, FULL_ROUNDS)
    assert rounds_of({"BENCH_WSSTART_ROUNDS": "3"}, True) == 3
    with pytest.raises(ValueError, match="BENCH_WSSTART_ROUNDS='0'"):
        rounds_of({"BENCH_WSSTART_ROUNDS": "0"}, True)


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_the_scenario_runs_in_the_suite_with_every_arm_answered(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "benchmarks", "--quick", "--scenarios", "wsstart",
                           "--network", "loopback", "--profile", "zero", "--out", str(tmp_path), "--seed", "1"],
                          cwd=ROOT, capture_output=True, text=True, timeout=170,
                          env={**os.environ, "BENCH_WSSTART_ROUNDS": "4"})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (run_dir,) = list(tmp_path.iterdir())
    doc = json.loads((run_dir / "result.json").read_text())
    (scenario,) = doc["scenarios"]
    assert scenario["name"] == "wsstart" and scenario["skipped"] is None, scenario["skipped"]
    records = scenario["records"]
    assert set(records) == set(ARMS)
    assert [len(recs) for recs in records.values()] == [4, 4, 4]
    for arm in ("llmclient", "llmclient/own-socket"):
        assert all(r["status"] == 200 and r["error_kind"] is None for r in records[arm]), (arm, records[arm][:1])
    # the official client's conversations: answered, or counted as its failures (its handshake
    # has been seen to hang, see the scenario's docstring), never lost
    assert all((r["status"] == 200) != bool(r["error_kind"]) for r in records["official"])
    # every llmclient conversation after the warm-up took the kept socket; the control none
    assert [r["extra"]["reused"] for r in records["llmclient"]] == [True] * 4
    assert not any(r["extra"].get("reused") for r in records["llmclient/own-socket"] + records["official"])
    assert scenario["series"]["reused"] == 4
    rows = {r["label"]: r for r in scenario["rows"]}
    row = rows["wsstart: a new WebSocket conversation, official -> llmclient"]
    assert (row["baseline"], row["candidate"], row["ratio"] > 0) == ("official", "llmclient", True)
    assert "wsstart" in proc.stdout  # the table (its labels are cut to the terminal's width)
