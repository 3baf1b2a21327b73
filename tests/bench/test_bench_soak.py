"""``python -m benchmarks soak`` (benchmarks/soak.py): the slope fit and the windows as pure
functions, the growth sites from real tracemalloc snapshots, and a short run of the command
against the reference server (restarted under it, nginx's GOAWAYs where nginx is installed)."""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest

from benchmarks import soak

ROOT = Path(__file__).resolve().parents[2]


def test_fit_slope_recovers_a_line_and_says_when_a_trend_is_noise() -> None:
    line = soak.fit_slope([(m, 70.0 + 0.041 * m) for m in range(0, 45)])
    assert line is not None
    assert line.per_min == pytest.approx(0.041)
    assert line.stderr == pytest.approx(0.0, abs=1e-9)
    assert line.start == pytest.approx(70.0) and line.end == pytest.approx(70.0 + 0.041 * 44)
    assert line.as_json()["within_noise"] is False
    # alternating noise around a flat line: a slope near 0 whose interval holds 0
    flat = soak.fit_slope([(m, 11.0 + (0.5 if m % 2 else -0.5)) for m in range(40)])
    assert flat is not None and abs(flat.per_min) < 0.02
    assert flat.as_json()["within_noise"] is True
    assert soak.fit_slope([(1.0, 2.0)]) is None
    assert soak.fit_slope([(1.0, 2.0), (1.0, 3.0)]) is None  # no spread in time: no slope
    two = soak.fit_slope([(0.0, 1.0), (2.0, 2.0)])
    assert two is not None and two.per_min == pytest.approx(0.5) and two.stderr is None
    assert soak.fit_slope([(0.0, 1.0), (1.0, math.nan), (2.0, 3.0)]) == soak.fit_slope([(0.0, 1.0), (2.0, 3.0)])


def _sample(t: float, rss: float, fds: float, cpu: float, calls: float) -> dict[str, float]:
    return {"t_s": t, "rss_mb": rss, "fds": fds, "cpu_s": cpu, "calls": calls}


def test_windows_count_their_calls_and_take_cpu_per_call_from_the_samples() -> None:
    w0, w1 = soak.Window(0, 0.0), soak.Window(1, 60.0)
    for _ in range(100):
        w0.add(False, None, 0.0)
    w0.add(True, "APIConnectionError", 2.5)
    w1.add(True, None, 4.0)
    w1.add(False, None, 1.0)
    samples = [_sample(0, 50, 10, 0.0, 0), _sample(30, 51, 12, 0.01, 50), _sample(60, 52, 11, 0.03, 101),
               _sample(90, 52, 11, 0.032, 102), _sample(120, 53, 11, 0.034, 103)]
    rows = soak.windows_of([w0, w1], samples, 60.0)
    assert [r["calls"] for r in rows] == [101, 2]
    assert rows[0]["errors"] == {"APIConnectionError": 1} and rows[0]["error_total"] == 1
    assert rows[0]["pool_waits"] == 1 and rows[0]["pool_wait_ms_max"] == 2.5
    assert rows[1]["pool_waits"] == 2 and rows[1]["pool_wait_ms_mean"] == pytest.approx(2.5)
    assert rows[0]["cpu_per_call_us"] == pytest.approx(0.03 / 101 * 1e6)
    assert rows[1]["cpu_per_call_us"] == pytest.approx(0.004 / 2 * 1e6)  # from the sample at its start
    assert rows[0]["rss_mb"] == 52 and rows[0]["fds_max"] == 12 and rows[1]["rss_mb"] == 53


def test_errors_of_calls_that_overlapped_an_outage_are_counted_apart() -> None:
    outages = [(10.0, 14.0), (50.0, None)]  # the second: still down
    assert soak.overlaps(9.0, 10.0, outages) and soak.overlaps(12.0, 13.0, outages)
    assert soak.overlaps(13.0, 20.0, outages) and soak.overlaps(60.0, 61.0, outages)
    assert not soak.overlaps(14.5, 49.0, outages) and not soak.overlaps(1.0, 9.9, [])
    w = soak.Window(0, 0.0)
    w.add(False, "APIConnectionError", 0.0, in_outage=True)
    w.add(False, "InternalServerError 502", 0.0, in_outage=False)
    w.add(False, None, 0.0, in_outage=True)  # a success during an outage is no error
    [row] = soak.windows_of([w], [_sample(0, 50, 10, 0.0, 0), _sample(30, 50, 10, 0.01, 3)], 60.0)
    assert row["error_total"] == 2 and row["outage_errors"] == 1


def test_slopes_leave_the_warm_up_out() -> None:
    # RSS climbs 10 MB/min during a 2-minute warm-up, then 0.01 MB/min; CPU per call flat
    samples = []
    for i in range(0, 61):
        t = i * 10.0
        rss = 20 * min(t, 120) / 120 + 50 + 0.01 * max(0.0, t - 120) / 60
        samples.append(_sample(t, rss, 11, 0.0003 * i * 1000, i * 1000))
    out = soak.summarize_samples(samples, warmup_s=120.0)
    assert out["samples_after_warmup"] == 49
    assert out["rss_mb_per_min"]["per_min"] == pytest.approx(0.01, abs=1e-6)
    assert out["fds_per_min"]["per_min"] == pytest.approx(0.0)
    assert out["cpu_per_call_us_per_min"]["per_min"] == pytest.approx(0.0, abs=1e-6)
    assert out["cpu_per_call_us"]["median"] == pytest.approx(300.0)
    assert "traced_mb_per_min" not in out


_KEPT: list[bytes] = []


def _grow(n: int) -> None:
    for _ in range(n):
        _KEPT.append(os.urandom(64))  # the site the snapshots must find


def test_top_growth_finds_the_line_that_grew_between_two_real_snapshots() -> None:
    tracemalloc.start(5)
    try:
        before = tracemalloc.take_snapshot()
        _grow(5000)
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    rows = soak.top_growth(after.compare_to(before, "lineno"), limit=5, minutes=2.0)
    assert rows, "no growth found"
    top = rows[0]
    assert top["site"].endswith("test_bench_soak.py:" + str(_grow.__code__.co_firstlineno + 2))
    assert top["count_diff"] >= 5000 and top["size_diff_kb"] > 5000 * 64 / 1024
    assert top["kb_per_min"] == pytest.approx(top["size_diff_kb"] / 2.0)
    _KEPT.clear()


def _args(**kw: object) -> argparse.Namespace:
    return soak.parser().parse_args(["--minutes", "2", "--window-min", "1"]
                                    + [f"--{k.replace('_', '-')}={v}" for k, v in kw.items()])


def test_bad_arguments_are_named() -> None:
    assert soak.check_args(_args()) is None
    assert "--minutes" in (soak.check_args(_args(minutes=0)) or "")
    assert "--sample-s" in (soak.check_args(_args(sample_s=120)) or "")
    assert "--warmup-min" in (soak.check_args(_args(warmup_min=3)) or "")
    assert "at least one caller" in (soak.check_args(_args(threads=0, tasks=0)) or "")
    done = subprocess.run([sys.executable, "-m", "benchmarks", "soak", "--minutes", "-1"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "--minutes must be positive" in done.stderr


@pytest.mark.slow
@pytest.mark.timeout(300)  # a hang guard: on a loaded machine a restart's start-up takes seconds
@pytest.mark.parametrize("mode", ["rolling", "hard"])
def test_a_short_soak_through_the_command_line(tmp_path: Path, mode: str) -> None:
    trace = mode == "hard"  # tracemalloc slows every allocation: one of the two runs traces
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", "soak", "--minutes", "0.3", "--window-min", "0.1", "--sample-s", "1",
         "--restart-every-s", "7", "--goaway-every", "20", "--threads", "2", "--tasks", "2",
         *(["--tracemalloc"] if trace else []), "--restart-mode", mode, "--out", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=280)
    assert done.returncode == 0, done.stderr[-3000:]
    [run_dir] = list(tmp_path.iterdir())
    doc = json.loads((run_dir / "result.json").read_text())
    s = doc["soak"]
    assert doc["kind"] == "soak" and s["calls"] > 0 and 0 <= s["streams"] <= s["calls"]
    if s["calls"] >= 50:  # one call in four is a stream: none in 50 is a 1-in-a-million draw
        assert s["streams"] > 0
    assert s["restarts"] >= 1  # the server was restarted under the callers
    assert s["restart_mode"] == mode
    if mode == "rolling":  # the new server listened before the old one stopped: no outage
        assert s["restart_gap_s_max"] == 0.0 and s["outage_errors"] == 0
    else:  # nothing listened for a while; what failed then is counted apart, never more than failed
        assert s["restart_gap_s_max"] > 0 and 0 <= s["outage_errors"] <= sum(s["errors"].values())
    assert len(s["windows"]) >= 2 and sum(w["calls"] for w in s["windows"]) == s["calls"]
    last = [w for w in s["windows"] if w["calls"]][-1]
    assert last["calls"] > last["error_total"]  # calls are still answered after the restarts
    assert len(s["samples"]) >= 10 and all(x["fds"] > 0 and x["rss_mb"] > 0 for x in s["samples"])
    assert s["slopes"]["rss_mb_per_min"] is not None and ("traced_mb_per_min" in s["slopes"]) == trace
    assert isinstance(s["growth"], list) and s["tracemalloc"] == trace
    html = (run_dir / "report.html").read_text()
    assert 'id="soak"' in html and "resident memory" in html
    assert "server restarts" in done.stdout


@pytest.mark.skipif(not soak.malloc_mb(), reason="glibc's mallinfo2 is not available here")
def test_malloc_figures_see_a_large_allocation() -> None:
    before = soak.malloc_mb()
    block = bytearray(64 * 2**20)
    during = soak.malloc_mb()
    assert during["malloc_used_mb"] - before["malloc_used_mb"] >= 60
    assert during["malloc_free_mb"] >= 0
    del block


def test_cpu_per_call_slope_with_the_load_held_fixed_tells_a_busier_machine_from_a_trend() -> None:
    # CPU per call = 300 µs + 20 µs per unit of load, no trend in time; the load rises over the run
    pts = [(m, 1.0 + m / 10 + (0.7 if m % 3 == 0 else 0.0), 300.0 + 20.0 * (1.0 + m / 10 + (0.7 if m % 3 == 0 else 0.0)))
           for m in range(40)]
    plain = soak.fit_slope([(t, y) for t, _, y in pts])
    held = soak.fit_slope_given_load(pts)
    assert plain is not None and plain.per_min == pytest.approx(2.0, rel=0.05)  # the load's, read as a trend
    assert held is not None and held.per_min == pytest.approx(0.0, abs=1e-6)
    # a real trend (+1 µs/min) is kept when the load is held fixed
    trend = soak.fit_slope_given_load([(t, x, y + 1.0 * t) for t, x, y in pts])
    assert trend is not None and trend.per_min == pytest.approx(1.0, abs=1e-6)
    assert soak.fit_slope_given_load(pts[:3]) is None
    assert soak.fit_slope_given_load([(t, 2.0 * t, y) for t, _, y in pts]) is None  # load and time alike
