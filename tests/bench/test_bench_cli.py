"""The suite's run as a person meets it: what the terminal shows (one status line rewritten on a
terminal, plain lines elsewhere), what the results folder holds (result.json, report.html,
logs/: no certificate, no key), that keys are removed however the run ends (Ctrl-C, SIGTERM),
which scenarios a quick pass leaves out, and what each scenario cost."""

from __future__ import annotations

import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmarks.harness.cli import for_api, quick_cost, quick_plan
from benchmarks.harness.progress import Progress, fit, status_text
from benchmarks.harness.usage import describe_usage, summarise_usage
from benchmarks.scenarios import discover

ROOT = Path(__file__).resolve().parents[2]


def test_on_a_terminal_one_status_line_is_rewritten_below_the_lines_that_stay() -> None:
    out = io.StringIO()
    p = Progress(["connection", "images"], [10.0, 30.0], out=out, tty=True)
    p.begin("[1/2] connection: ...")
    p.step("  connection/non-stream: 5 requests x 3 variants")
    p.step("  connection/stream: 5 requests x 3 variants")
    p.line("[connection] done in 9.8 s")
    p.begin("[2/2] images: ...")
    p.close()
    raw = out.getvalue()
    # what the terminal shows: each line's text after its last carriage return
    shown = [ln.rsplit("\r", 1)[-1].replace("\x1b[2K", "") for ln in raw.split("\n")]
    assert shown == ["[1/2] connection: ...", "[connection] done in 9.8 s", "[2/2] images: ...", ""]
    statuses = re.findall(r"\r\x1b\[2K([^\r\n]+)", raw)
    assert "[1/2 connection] connection/stream: 5 requests x 3 variants" in statuses[2]
    assert "~30 s left" in statuses[2]                       # the scenarios still to run


def test_elsewhere_every_message_is_a_plain_line() -> None:
    out = io.StringIO()
    p = Progress(["connection"], None, out=out, tty=False)
    p.begin("[1/1] connection: ...")
    p.step("  connection/stream: 5 requests x 3 variants")
    p.line("[connection] done")
    p.close()
    assert out.getvalue() == ("[1/1] connection: ...\n  connection/stream: 5 requests x 3 "
                              "variants\n[connection] done\n")


def test_a_status_line_never_wraps() -> None:
    assert fit("a\nb   c", 10) == "a b c"
    assert fit("x" * 30, 10) == "x" * 9 + "…" and len(fit("y" * 200, 80)) == 80
    assert status_text(3, 14, "http1", "step", 34.2, None) == "[3/14 http1] step · 34 s"


def test_the_quick_pass_leaves_out_what_it_cannot_decide_and_runs_what_is_named() -> None:
    scenarios, errors = discover()
    assert not errors
    run, left = quick_plan(scenarios, [], quick=True)
    assert {s.name for s in left} == {"adaptive", "agents", "faults", "steady", "sweep"}
    assert all(getattr(s, "full_adds", None) for s in left)       # the headline names them
    for api in ("openai", "anthropic"):  # each API's quick pass: five minutes on 2 cores
        fits = for_api(run, api, named=False)
        assert all(quick_cost(s, api) for s in fits), api         # each with its measured cost there
        assert sum(quick_cost(s, api) or 0 for s in fits) <= 300, api
    named = [s for s in scenarios if s.name == "adaptive"]
    assert quick_plan(named, ["adaptive"], quick=True) == (named, [])
    assert quick_plan(scenarios, [], quick=False) == (scenarios, [])


def test_a_scenarios_cost_is_its_wall_time_cpu_and_the_machine_s_load() -> None:
    u = summarise_usage(10.0, 100.0, 104.0, (50.0, 100.0), (65.0, 120.0), 2)
    assert u == {"wall_s": 10.0, "cpu_s": 4.0, "machine_busy": 0.75, "others_cores": 1.1, "cores": 2}
    assert describe_usage(u) == "10.0 s, CPU 4.0 s, machine 75% busy (others 1.1 of 2 cores)"
    assert summarise_usage(1.0, None, None, None, None, 2)["cpu_s"] is None


def _run_args(out: Path) -> list[str]:
    return [sys.executable, "-m", "benchmarks", "--quick", "--scenarios", "connection",
            "--network", "loopback", "--profile", "zero", "--out", str(out), "--seed", "1"]


def _secrets_folder(text: str) -> Path:
    found = re.search(r"certificates and keys in (\S+), removed at exit", text)
    assert found, text[-2000:]
    return Path(found.group(1))


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_the_results_folder_holds_results_and_logs_and_nothing_secret(tmp_path: Path) -> None:
    proc = subprocess.run(_run_args(tmp_path), cwd=ROOT, capture_output=True, text=True, timeout=110)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (run_dir,) = list(tmp_path.iterdir())
    assert sorted(os.listdir(run_dir)) == ["logs", "report.html", "result.json"]
    logs = os.listdir(run_dir / "logs")
    assert logs and all(name.startswith("refserver-") and name.endswith(".log") for name in logs)
    assert not [p for p in run_dir.rglob("*") if p.suffix in (".pem", ".key")]
    assert not _secrets_folder(proc.stdout).exists()             # removed at exit
    # not a terminal: plain lines, no carriage returns, no bar frames
    assert "\r" not in proc.stdout + proc.stderr and "%|" not in proc.stdout + proc.stderr
    doc = json.loads((run_dir / "result.json").read_text())
    assert doc["server"]["log"].startswith("logs/refserver-")   # travels with the folder
    cost = doc["scenario_costs"]["connection"]
    assert cost["wall_s"] > 0 and cost["cpu_s"] is not None and cost["machine_busy"] is not None
    assert "what each scenario cost: connection " in proc.stdout


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_keys_are_removed_and_servers_stopped_when_the_run_is_interrupted(
        tmp_path: Path, signum: int) -> None:
    proc = subprocess.Popen(_run_args(tmp_path), cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    seen: list[str] = []
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            seen.append(line)
            if "[1/1] connection" in line or not line:
                break
        secrets = _secrets_folder("".join(seen))
        assert secrets.is_dir() and any(secrets.rglob("*.key"))  # the server's key, mid-run
        origin = re.search(r"ready in \S+ at (https://127\.0\.0\.1:(\d+))", "".join(seen))
        assert origin
        if os.path.isdir("/proc"):  # the check below sees the server while it runs
            assert _processes_mentioning(str(secrets))
        proc.send_signal(signum)                                  # to the suite alone
        rest, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, "".join(seen) + rest
    assert "interrupted: servers stopped, certificates and keys removed" in rest
    assert not secrets.exists()
    assert not [p for p in tmp_path.rglob("*") if p.suffix in (".pem", ".key")]
    # Its server is gone too: no process runs with the secrets folder in its command line (the
    # server's --cert-dir is inside it). Not a probe of its port, which a parallel test's server
    # may have bound since.
    if os.path.isdir("/proc"):
        assert not _processes_mentioning(str(secrets)), "the suite's server outlived the interrupt"
    else:
        import socket

        with socket.socket() as probe:
            probe.settimeout(2)
            assert probe.connect_ex(("127.0.0.1", int(origin.group(2)))) != 0


def _processes_mentioning(text: str) -> list[int]:
    """Live processes whose command line contains ``text`` (a zombie's is empty)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    cmdline = f.read()
            except OSError:
                continue
            if text.encode() in cmdline:
                found.append(int(entry))
    return found
