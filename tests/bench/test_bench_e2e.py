"""End to end: ``python -m benchmarks --quick --scenarios connection --network loopback``.

Runs the real command: reference server subprocess, forwarder, official client and llmclient.
The ``zero`` profile keeps model time out of it so it stays well under a minute.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_quick_connection_run_prints_the_table_and_writes_the_report(tmp_path: Path) -> None:
    pytest.importorskip("openai")
    pytest.importorskip("llmclient")
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", "--scenarios", "connection",
         "--network", "loopback", "--profile", "zero", "--out", str(tmp_path), "--seed", "1"],
        cwd=ROOT, capture_output=True, text=True, timeout=85)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "connection: fresh conn/call -> llmclient" in proc.stdout
    assert "rtt" in proc.stdout and "harness overhead" in proc.stdout
    (run_dir,) = list(tmp_path.iterdir())
    doc = json.loads((run_dir / "result.json").read_text())
    (scenario,) = doc["scenarios"]
    assert scenario["name"] == "connection" and scenario["skipped"] is None
    assert set(scenario["records"]) == {"fresh-connection", "openai", "llmclient",
                                        "fresh-connection/stream", "openai/stream",
                                        "llmclient/stream"}
    for variant, records in scenario["records"].items():
        assert records, variant
        assert all(r["status"] == 200 and r["error_kind"] is None for r in records), variant
        assert all(len(r["trace_id"]) == 32 for r in records)
    # Streams measure TTFT; llmclient reports its timings (HTTP/2 over TLS, reused).
    assert all(r["ttft_ms"] is not None for r in scenario["records"]["llmclient/stream"])
    assert any(r["extra"].get("http_version") == "HTTP/2" for r in scenario["records"]["llmclient"])
    assert doc["network"]["profile"] == "loopback" and "rtt_ms" in doc["network"]
    assert 'id="cdfs"' in (run_dir / "report.html").read_text()


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_base_url_runs_what_it_can_and_says_why_it_skips_the_rest(
        ref_server: Any, tmp_path: Path) -> None:
    pytest.importorskip("openai")
    pytest.importorskip("llmclient")
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", "--scenarios", "connection,faults",
         "--base-url", ref_server.base_url, "--api-key", "any", "--out", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=85)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "[faults] not available: needs faults" in proc.stdout
    (run_dir,) = list(tmp_path.iterdir())
    doc = json.loads((run_dir / "result.json").read_text())
    by_name = {s["name"]: s for s in doc["scenarios"]}
    assert by_name["connection"]["skipped"] is None
    assert "reference_server" not in doc["capabilities"]
    assert "faults" in (by_name["faults"]["skipped"] or "")


@pytest.mark.timeout(90)
def test_base_url_with_an_ipv6_literal(tmp_path: Path) -> None:
    """``--base-url http://[::1]:PORT/v1`` with no emulated network: the harness rebuilt the
    origin from the parsed host without its brackets, and every request failed ('other')."""
    import socket

    from tests.conftest import start_ref_server, stop_ref_server

    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        pytest.skip("no IPv6 loopback on this machine")
    server = start_ref_server("--host", "::1")
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "benchmarks", "--quick", "--scenarios", "steady", "--network", "none",
             "--base-url", server.base_url, "--api-key", "any", "--out", str(tmp_path)],
            cwd=ROOT, capture_output=True, text=True, timeout=85)
    finally:
        stop_ref_server(server)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (run_dir,) = list(tmp_path.iterdir())
    doc = json.loads((run_dir / "result.json").read_text())
    (steady,) = [s for s in doc["scenarios"] if s["name"] == "steady"]
    records = steady["records"]["llmclient"]
    failed = [r for r in records if r["error_kind"] is not None or r["status"] != 200]
    assert records and not failed, failed[:3]
