"""A long-lived process, watched: ``python -m benchmarks soak --minutes N`` (issue 46).

One process runs llmclient the way a service does for hours: calls and streams mixed, through
a sync client (threads) and an async client (tasks on one event loop), against the embedded
reference server (h2c), straight to it and through nginx sending GOAWAY every
``--goaway-every`` requests per connection; the reference server is restarted (SIGINT, then a
new one on the same port) every ``--restart-every-s``. Every ``--sample-s`` it samples its own
RSS, open file descriptors and CPU time; per window (``--window-min``, 5 by default) it reports
calls, errors by kind, pool waits, CPU per call, RSS and fds; over the samples after the
warm-up, the fitted slope (least squares, with its standard error) of RSS, fds and CPU per
call. ``--tracemalloc`` traces allocations (slower: compare slopes only between runs with the
same setting) and writes the sites that grew most between the end of the warm-up and the end
of the run into the result.

It writes ``result.json`` and ``report.html`` (the benchmarks' report, with a soak section) in
``--out``/<UTC timestamp>/. On a shared machine run it under the bench lock:
``flock /tmp/llmclient-bench.lock python -m benchmarks soak --minutes 10``.

The harness keeps counters per window, never a record per call: its own memory must stay flat,
or it would be what the slope measures.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import datetime as dt
import itertools
import math
import os
import platform
import random
import shutil
import socket
import sys
import threading
import time
import tracemalloc
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .harness.serverproc import ServerProcess, start_server

__all__ = ["Slope", "Window", "fit_slope", "main", "summarize_samples", "top_growth", "windows_of"]

MSG_WORDS = ("alpha", "delta", "river", "stone", "cloud", "ember", "north", "quiet", "spark", "tide")
# One call in STREAM_SHARE is a stream; the rest are whole answers.
STREAM_SHARE = 0.25
# How many allocation sites ``--tracemalloc`` keeps in the result, and frames per traceback.
TOP_SITES = 25
TRACE_FRAMES = 10


# -- pure: slopes and windows ------------------------------------------------------------------


@dataclass(frozen=True)
class Slope:
    """A least-squares line through (minute, value) points: ``per_min`` its slope, ``stderr``
    the slope's standard error (None below 3 points), ``n`` points, ``start``/``end`` the
    fitted values at the first and last minute."""

    per_min: float
    stderr: float | None
    n: int
    start: float
    end: float

    def as_json(self) -> dict[str, Any]:
        return {"per_min": self.per_min, "stderr": self.stderr, "n": self.n, "start": self.start,
                "end": self.end,
                # the slope is "within noise" when its 95% interval (about 2 standard errors) holds 0
                "within_noise": None if self.stderr is None else abs(self.per_min) <= 2 * self.stderr}


def fit_slope(points: Sequence[tuple[float, float]]) -> Slope | None:
    """Ordinary least squares of value on minute. None for fewer than 2 points or when every
    point has the same minute. Pure."""
    pts = [(float(x), float(y)) for x, y in points if math.isfinite(x) and math.isfinite(y)]
    n = len(pts)
    if n < 2:
        return None
    mx = sum(x for x, _ in pts) / n
    my = sum(y for _, y in pts) / n
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    if sxx <= 0:
        return None
    slope = sum((x - mx) * (y - my) for x, y in pts) / sxx
    intercept = my - slope * mx
    stderr = None
    if n > 2:
        residual = sum((y - (intercept + slope * x)) ** 2 for x, y in pts)
        stderr = math.sqrt(residual / (n - 2) / sxx)
    xs = [x for x, _ in pts]
    return Slope(slope, stderr, n, intercept + slope * min(xs), intercept + slope * max(xs))


def fit_slope_given_load(points: Sequence[tuple[float, float, float]]) -> Slope | None:
    """Least squares of value on minute and the machine's load together (points: minute, load,
    value): the slope per minute with the load held fixed, so that a shared machine getting
    busier is not read as the process getting slower. ``start``/``end`` are the fitted values
    at the first and last minute at the mean load. None below 4 points, or when minute and load
    leave no spread to tell apart. Pure."""
    pts = [(float(t), float(x), float(y)) for t, x, y in points
           if math.isfinite(t) and math.isfinite(x) and math.isfinite(y)]
    n = len(pts)
    if n < 4:
        return None
    mt = sum(p[0] for p in pts) / n
    mx = sum(p[1] for p in pts) / n
    my = sum(p[2] for p in pts) / n
    stt = sum((t - mt) ** 2 for t, _, _ in pts)
    sxx = sum((x - mx) ** 2 for _, x, _ in pts)
    stx = sum((t - mt) * (x - mx) for t, x, _ in pts)
    sty = sum((t - mt) * (y - my) for t, _, y in pts)
    sxy = sum((x - mx) * (y - my) for _, x, y in pts)
    det = stt * sxx - stx * stx
    if stt <= 0 or det <= 1e-12 * max(stt * sxx, 1e-300):
        return None
    b_t = (sxx * sty - stx * sxy) / det
    b_x = (stt * sxy - stx * sty) / det
    a = my - b_t * mt - b_x * mx
    residual = sum((y - (a + b_t * t + b_x * x)) ** 2 for t, x, y in pts)
    stderr = math.sqrt(residual / (n - 3) * sxx / det)
    ts = [t for t, _, _ in pts]
    return Slope(b_t, stderr, n, a + b_x * mx + b_t * min(ts), a + b_x * mx + b_t * max(ts))


@dataclass
class Window:
    """One window's counters (the harness adds to the current one; no per-call records)."""

    index: int
    start_s: float
    calls: int = 0
    streams: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    outage_errors: int = 0  # of those, calls that overlapped a moment with no server listening
    pool_waits: int = 0  # calls whose last attempt waited for a connection
    pool_wait_ms_sum: float = 0.0
    pool_wait_ms_max: float = 0.0

    def add(self, stream: bool, error: str | None, pool_wait_ms: float, in_outage: bool = False) -> None:
        self.calls += 1
        self.streams += stream
        if error is not None:
            self.errors[error] += 1
            self.outage_errors += in_outage
        if pool_wait_ms > 0:
            self.pool_waits += 1
            self.pool_wait_ms_sum += pool_wait_ms
            self.pool_wait_ms_max = max(self.pool_wait_ms_max, pool_wait_ms)


def windows_of(windows: Sequence[Window], samples: Sequence[dict[str, float]], window_s: float) -> list[dict[str, Any]]:
    """Each window as the report shows it: its counters, and from the samples taken in it the
    CPU per call (CPU seconds over calls between its first and last sample, and the sample
    before it), RSS and fds at its end and their maxima. Pure."""
    out = []
    for w in windows:
        lo, hi = w.start_s, w.start_s + window_s
        inside = [s for s in samples if lo < s["t_s"] <= hi]
        before = [s for s in samples if s["t_s"] <= lo]
        first = before[-1] if before else (inside[0] if inside else None)
        last = inside[-1] if inside else None
        cpu_per_call_us = None
        if first is not None and last is not None and last["calls"] > first["calls"]:
            cpu_per_call_us = (last["cpu_s"] - first["cpu_s"]) / (last["calls"] - first["calls"]) * 1e6
        out.append({
            "index": w.index, "start_min": lo / 60.0, "end_min": min(hi, last["t_s"] if last else hi) / 60.0,
            "calls": w.calls, "streams": w.streams, "errors": dict(w.errors), "error_total": sum(w.errors.values()),
            "outage_errors": w.outage_errors,
            "pool_waits": w.pool_waits,
            "pool_wait_ms_mean": w.pool_wait_ms_sum / w.pool_waits if w.pool_waits else None,
            "pool_wait_ms_max": w.pool_wait_ms_max if w.pool_waits else None,
            "cpu_per_call_us": cpu_per_call_us,
            "rss_mb": last["rss_mb"] if last else None,
            "rss_mb_max": max(s["rss_mb"] for s in inside) if inside else None,
            "fds": last["fds"] if last else None,
            "fds_max": max(s["fds"] for s in inside) if inside else None,
            "load1_mean": (sum(s["load1"] for s in inside) / len(inside)
                           if inside and all("load1" in s for s in inside) else None),
        })
    return out


def summarize_samples(samples: Sequence[dict[str, float]], warmup_s: float) -> dict[str, Any]:
    """The slopes over the samples after ``warmup_s``: RSS (MB/min), fds (/min), CPU per call
    (µs per call, per minute: each point is the CPU per call between two samples). Pure."""
    after = [s for s in samples if s["t_s"] >= warmup_s]
    rss = fit_slope([(s["t_s"] / 60.0, s["rss_mb"]) for s in after])
    fds = fit_slope([(s["t_s"] / 60.0, s["fds"]) for s in after])
    cpu_points = []
    cpu_load_points = []
    for a, b in itertools.pairwise(after):
        if b["calls"] > a["calls"]:
            per_call = (b["cpu_s"] - a["cpu_s"]) / (b["calls"] - a["calls"]) * 1e6
            cpu_points.append((b["t_s"] / 60.0, per_call))
            if "load1" in a and "load1" in b:
                cpu_load_points.append((b["t_s"] / 60.0, (a["load1"] + b["load1"]) / 2, per_call))
    cpu = fit_slope(cpu_points)
    cpu_given_load = fit_slope_given_load(cpu_load_points)
    traced = fit_slope([(s["t_s"] / 60.0, s["traced_mb"]) for s in after if "traced_mb" in s])
    malloc_used = fit_slope([(s["t_s"] / 60.0, s["malloc_used_mb"]) for s in after if "malloc_used_mb" in s])
    malloc_free = fit_slope([(s["t_s"] / 60.0, s["malloc_free_mb"]) for s in after if "malloc_free_mb" in s])
    out: dict[str, Any] = {
        "warmup_min": warmup_s / 60.0,
        "samples_after_warmup": len(after),
        "rss_mb_per_min": rss.as_json() if rss else None,
        "fds_per_min": fds.as_json() if fds else None,
        "cpu_per_call_us_per_min": cpu.as_json() if cpu else None,
    }
    if cpu_given_load is not None:
        out["cpu_per_call_us_per_min_given_load"] = cpu_given_load.as_json()
    if traced is not None:
        out["traced_mb_per_min"] = traced.as_json()
    if malloc_used is not None and malloc_free is not None:
        out["malloc_used_mb_per_min"] = malloc_used.as_json()
        out["malloc_free_mb_per_min"] = malloc_free.as_json()
    if cpu_points:
        values = sorted(v for _, v in cpu_points)
        out["cpu_per_call_us"] = {"min": values[0], "median": values[len(values) // 2], "max": values[-1]}
    return out


def top_growth(diffs: Sequence[Any], limit: int = TOP_SITES, minutes: float | None = None) -> list[dict[str, Any]]:
    """The allocation sites that grew most, from ``tracemalloc.Snapshot.compare_to(...,
    "traceback")`` (StatisticDiff-like objects: ``size_diff``, ``count_diff``, ``size``,
    ``count``, ``traceback`` of frames with ``filename``/``lineno``), largest growth first;
    ``minutes``: the time between the snapshots, for a rate. Pure."""
    grown = sorted((d for d in diffs if d.size_diff > 0), key=lambda d: d.size_diff, reverse=True)[:limit]
    out = []
    for d in grown:
        frames = [f"{_short(f.filename)}:{f.lineno}" for f in d.traceback]
        row = {"site": frames[-1] if frames else "?", "size_diff_kb": d.size_diff / 1024.0, "count_diff": d.count_diff,
               "size_kb": d.size / 1024.0, "count": d.count,
               # innermost frame first (tracemalloc's order is outermost first with most_recent_first=False)
               "traceback": list(reversed(frames))}
        ours = next((fr for fr in reversed(frames) if fr.startswith("llmclient/")), None)
        if ours is not None:
            row["llmclient_frame"] = ours
        if minutes:
            row["kb_per_min"] = d.size_diff / 1024.0 / minutes
        out.append(row)
    return out


def _short(filename: str) -> str:
    """A path from its package down (``llmclient/transport/x.py``), so results compare across
    checkouts."""
    parts = Path(filename).parts
    for anchor in ("llmclient", "benchmarks", "site-packages"):
        if anchor in parts:
            i = len(parts) - 1 - list(reversed(parts)).index(anchor)
            tail = parts[i + 1:] if anchor == "site-packages" else parts[i:]
            return "/".join(tail)
    return "/".join(parts[-2:])


# -- the process's own measurements ----------------------------------------------------------------


def rss_mb() -> float:
    """This process's resident set (``/proc/self/statm``; elsewhere the peak from getrusage)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak / 2**20 if sys.platform == "darwin" else peak / 1024.0


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]


def _mallinfo2() -> Any:
    """glibc's ``mallinfo2`` (2.33+), or None elsewhere."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None)
        fn = libc.mallinfo2
        fn.restype = _MallInfo2
        return fn
    return None


_MALLINFO = _mallinfo2()


def malloc_mb() -> dict[str, float]:
    """What glibc's malloc holds (MB): ``malloc_used_mb`` in blocks in use (mmapped ones too),
    ``malloc_free_mb`` free inside its heaps. RSS growing with the first flat and the second
    rising is fragmentation, not live objects. Empty where glibc's mallinfo2 is missing."""
    if _MALLINFO is None:
        return {}
    info = _MALLINFO()
    return {"malloc_used_mb": (info.uordblks + info.hblkhd) / 2**20, "malloc_free_mb": info.fordblks / 2**20}


def open_fds() -> int:
    for path in ("/proc/self/fd", "/dev/fd"):
        with contextlib.suppress(OSError):
            return len(os.listdir(path)) - 1  # less the listing's own descriptor
    return -1


# -- the run ------------------------------------------------------------------------------------


def overlaps(start: float, end: float, outages: Sequence[tuple[float, float | None]]) -> bool:
    """Whether a call from ``start`` to ``end`` overlapped one of ``outages`` (from, to; to None:
    still down). Pure."""
    return any(a <= end and (b is None or start <= b) for a, b in outages)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _Server:
    """The reference server on one fixed port, restarted in place."""

    def __init__(self, log_dir: str, clock: Any = time.monotonic) -> None:
        self.port = _free_port()
        self.log_dir = log_dir
        self.restarts = 0
        self.restart_gaps_s: list[float] = []
        self.clock = clock
        # (from, to) on ``clock`` while nothing listened (hard restarts); bounded by the restarts
        self.outages: list[tuple[float, float | None]] = []
        self.proc: ServerProcess = self._start()

    def _start(self) -> ServerProcess:
        server = start_server("zero", extra_args=("--port", str(self.port)), log_dir=self.log_dir)
        server.wait_healthy()
        return server

    def restart(self, rolling: bool) -> None:
        """``rolling``: the new server first, on the same port (granian binds with SO_REUSEPORT),
        then the old one stopped, as a deploy behind a shared socket does: no moment with
        nothing listening, so what the clients see is the old server's graceful close (GOAWAY,
        connections closed) alone. Otherwise the old one is stopped first: an outage of about
        the new process's start-up, whose refused connects fail (a refused loopback connect is
        not retried: nothing listens)."""
        t0 = time.monotonic()
        if rolling:
            old, self.proc = self.proc, self._start()
            old.stop()
            self.restarts += 1
            self.restart_gaps_s.append(0.0)
            return
        self.outages.append((self.clock(), None))
        self.proc.stop()
        for attempt in range(50):  # the port can take a moment to be free again
            try:
                self.proc = self._start()
                break
            except Exception:
                if attempt == 49:
                    raise
                time.sleep(0.1)
        self.outages[-1] = (self.outages[-1][0], self.clock())
        self.restarts += 1
        self.restart_gaps_s.append(time.monotonic() - t0)

    def stop(self) -> None:
        self.proc.stop()


class _Run:
    def __init__(self, window_s: float) -> None:
        self.outages: Sequence[tuple[float, float | None]] = ()  # the server's, on this run's clock
        self.t0 = time.monotonic()
        self.window_s = window_s
        self.windows: list[Window] = [Window(0, 0.0)]
        self.lock = threading.Lock()
        self.calls = 0
        self.stop = threading.Event()
        self.first_errors: dict[str, str] = {}  # each kind's first message (bounded by the kinds)

    def now(self) -> float:
        return time.monotonic() - self.t0

    def note(self, stream: bool, error: str | None, pool_wait_ms: float, message: str = "",
             started: float | None = None) -> None:
        t = self.now()
        with self.lock:
            if error is not None and error not in self.first_errors:
                self.first_errors[error] = message[:500]
            while t >= self.windows[-1].start_s + self.window_s:
                w = self.windows[-1]
                self.windows.append(Window(w.index + 1, w.start_s + self.window_s))
            in_outage = error is not None and overlaps(t if started is None else started, t, self.outages)
            self.windows[-1].add(stream, error, pool_wait_ms, in_outage)
            self.calls += 1


def _kind(exc: BaseException) -> str:
    status = getattr(exc, "status_code", None)
    return f"{type(exc).__name__} {status}" if status else type(exc).__name__


def _messages(rng: random.Random) -> list[dict[str, str]]:
    return [{"role": "user", "content": " ".join(rng.choice(MSG_WORDS) for _ in range(rng.randint(3, 40)))}]


def _pool_wait(obj: Any) -> float:
    record = getattr(obj, "timings", None)
    return float(getattr(record, "pool_wait_ms", 0.0) or 0.0)


def _sync_worker(run: _Run, clients: Sequence[Any], model: str, seed: int) -> None:
    rng = random.Random(seed)
    while not run.stop.is_set():
        client = rng.choice(clients)
        stream = rng.random() < STREAM_SHARE
        error, waited, message, started = None, 0.0, "", run.now()
        try:
            if stream:
                with client.chat.completions.create(model=model, messages=_messages(rng), max_tokens=8,
                                                    stream=True) as s:
                    for _chunk in s:
                        pass
                    waited = _pool_wait(s)
            else:
                waited = _pool_wait(client.chat.completions.create(model=model, messages=_messages(rng),
                                                                   max_tokens=rng.randint(1, 16)))
        except Exception as exc:
            error, message = _kind(exc), str(exc)
        run.note(stream, error, waited, message, started)


async def _async_worker(run: _Run, clients: Sequence[Any], model: str, seed: int) -> None:
    rng = random.Random(seed)
    while not run.stop.is_set():
        client = rng.choice(clients)
        stream = rng.random() < STREAM_SHARE
        error, waited, message, started = None, 0.0, "", run.now()
        try:
            if stream:
                s = await client.chat.completions.create(model=model, messages=_messages(rng), max_tokens=8,
                                                         stream=True)
                async with s:
                    async for _chunk in s:
                        pass
                waited = _pool_wait(s)
            else:
                waited = _pool_wait(await client.chat.completions.create(model=model, messages=_messages(rng),
                                                                         max_tokens=rng.randint(1, 16)))
        except Exception as exc:
            error, message = _kind(exc), str(exc)
        run.note(stream, error, waited, message, started)


def _async_side(run: _Run, urls: Sequence[str], model: str, n: int, max_retries: int) -> None:
    import llmclient

    async def main() -> None:
        clients = [llmclient.AsyncOpenAI(base_url=u, api_key="bench-key", max_retries=max_retries) for u in urls]
        try:
            await asyncio.gather(*(_async_worker(run, clients, model, 1000 + i) for i in range(n)))
        finally:
            for c in clients:
                await c.close()

    asyncio.run(main())


@contextlib.contextmanager
def _goaway_proxy(upstream_port: int, every: int) -> Iterator[Any]:
    if every <= 0 or shutil.which("nginx") is None:
        yield None
        return
    from .fixtures.nginx import NginxGoaway

    proxy = NginxGoaway(upstream_port, every)
    try:
        yield proxy
    finally:
        proxy.close()


def soak(minutes: float, window_min: float, warmup_min: float | None, sample_s: float, threads: int, tasks: int,
         restart_every_s: float, goaway_every: int, trace: bool, max_retries: int, log_dir: str,
         progress: Any = print, restart_mode: str = "rolling") -> dict[str, Any]:
    """Run the soak; the result document's ``soak`` part (see the module docstring)."""
    import llmclient

    duration_s = minutes * 60.0
    window_s = window_min * 60.0
    warmup_s = (min(window_s, duration_s / 3.0) if warmup_min is None else warmup_min * 60.0)
    server = _Server(log_dir)
    samples: list[dict[str, float]] = []
    snapshots: dict[str, Any] = {}
    with contextlib.ExitStack() as stack:
        stack.callback(server.stop)
        proxy = stack.enter_context(_goaway_proxy(server.port, goaway_every))
        urls = [f"http://127.0.0.1:{server.port}/v1"] + ([proxy.base_url] if proxy is not None else [])
        model = server.proc.model() or "sim-zero"
        if trace:
            tracemalloc.start(TRACE_FRAMES)
        run = _Run(window_s)
        server.clock, run.outages = run.now, server.outages
        sync_clients = [llmclient.OpenAI(base_url=u, api_key="bench-key", max_retries=max_retries) for u in urls]
        workers = [threading.Thread(target=_sync_worker, args=(run, sync_clients, model, i), daemon=True,
                                    name=f"soak-sync-{i}") for i in range(threads)]
        if tasks:
            workers.append(threading.Thread(target=_async_side, args=(run, urls, model, tasks, max_retries),
                                            daemon=True, name="soak-async"))
        cpu0 = time.process_time()

        def sample() -> dict[str, float]:
            row = {"t_s": time.monotonic() - run.t0, "rss_mb": rss_mb(), "fds": float(open_fds()),
                   "cpu_s": time.process_time() - cpu0, "calls": float(run.calls),
                   # the machine's 1-minute load: CPU per call rises with it on a shared machine
                   "load1": os.getloadavg()[0]}
            row.update(malloc_mb())
            if trace:
                row["traced_mb"] = tracemalloc.get_traced_memory()[0] / 2**20
            return row

        samples.append(sample())
        for w in workers:
            w.start()
        next_restart = restart_every_s if restart_every_s > 0 else math.inf
        next_report = window_s
        try:
            while True:
                now = time.monotonic() - run.t0
                if now >= duration_s:
                    break
                time.sleep(max(0.0, min(sample_s - (now % sample_s), duration_s - now)))
                now = time.monotonic() - run.t0
                samples.append(sample())
                # The first snapshot just before the first sample the slopes use: the snapshot's
                # own memory (RSS, traced) is then in every one of them, not a step among them.
                if trace and "warm" not in snapshots and now + sample_s >= warmup_s:
                    snapshots["warm"] = (now, tracemalloc.take_snapshot())
                if now >= next_restart and now < duration_s - 1.0:
                    server.restart(rolling=restart_mode == "rolling")
                    next_restart += restart_every_s
                if now >= next_report:
                    last = samples[-1]
                    progress(f"  soak {now / 60:.1f}/{minutes:g} min: {run.calls} calls, RSS {last['rss_mb']:.1f} MB, "
                             f"fds {last['fds']:.0f}, errors {sum(sum(w.errors.values()) for w in run.windows)}, "
                             f"restarts {server.restarts}")
                    next_report += window_s
        finally:
            run.stop.set()
            for w in workers:
                w.join(60)
        if trace:
            snapshots["end"] = (time.monotonic() - run.t0, tracemalloc.take_snapshot())
        for c in sync_clients:
            c.close()
    growth: list[dict[str, Any]] = []
    growth_tracebacks: list[dict[str, Any]] = []
    minutes_apart = None
    net_kb = None
    if trace and "warm" in snapshots:
        (t_a, a), (t_b, b) = snapshots["warm"], snapshots["end"]
        ignore = [tracemalloc.Filter(False, tracemalloc.__file__), tracemalloc.Filter(False, "<frozen *>"),
                  tracemalloc.Filter(False, "*/linecache.py")]
        a, b = a.filter_traces(ignore), b.filter_traces(ignore)
        minutes_apart = (t_b - t_a) / 60.0
        by_line = b.compare_to(a, "lineno")
        net_kb = sum(d.size_diff for d in by_line) / 1024.0
        growth = top_growth(by_line, minutes=minutes_apart)
        growth_tracebacks = top_growth(b.compare_to(a, "traceback"), minutes=minutes_apart)
        tracemalloc.stop()
    windows = windows_of(run.windows, samples, window_s)
    return {
        "minutes": minutes, "window_min": window_min, "sample_s": sample_s,
        "threads": threads, "tasks": tasks, "targets": urls, "model": model,
        "restart_every_s": restart_every_s, "restart_mode": restart_mode, "restarts": server.restarts,
        "restart_gap_s_max": max(server.restart_gaps_s) if server.restart_gaps_s else None,
        "goaway_every": goaway_every if proxy is not None else None,
        "goaway_note": None if proxy is not None or goaway_every <= 0 else "nginx not installed: no GOAWAY proxy",
        "max_retries": max_retries, "tracemalloc": trace,
        "calls": run.calls, "streams": sum(w.streams for w in run.windows),
        "errors": dict(sum((w.errors for w in run.windows), Counter())), "first_errors": run.first_errors,
        "outage_errors": sum(w.outage_errors for w in run.windows),
        "windows": windows, "samples": samples,
        "slopes": summarize_samples(samples, warmup_s),
        # by line (every traceback through a line summed), then the tracebacks themselves
        "growth": growth, "growth_tracebacks": growth_tracebacks, "snapshots_minutes_apart": minutes_apart,
        "traced_net_growth_kb": net_kb,
    }


def render_text(s: dict[str, Any]) -> str:
    lines = [f"{'window':>6} {'minutes':>11} {'calls':>8} {'errors':>6} {'pool waits':>10} {'cpu/call µs':>11} "
             f"{'RSS MB':>7} {'fds':>4} {'load':>5}"]
    for w in s["windows"]:
        cpu, rss, fds, load = w["cpu_per_call_us"], w["rss_mb"], w["fds"], w.get("load1_mean")
        lines.append(f"{w['index']:6d} {w['start_min']:5.1f}-{w['end_min']:<5.1f} {w['calls']:8d} {w['error_total']:6d} "
                     f"{w['pool_waits']:10d} {'-' if cpu is None else f'{cpu:.0f}':>11} "
                     f"{'-' if rss is None else f'{rss:.1f}':>7} "
                     f"{'-' if fds is None else f'{fds:.0f}':>4} "
                     f"{'-' if load is None else f'{load:.1f}':>5}"
                     + (f"  {w['errors']}" if w["errors"] else ""))
    sl = s["slopes"]
    lines.append(f"after {sl['warmup_min']:.1f} min of warm-up ({sl['samples_after_warmup']} samples): "
                 + "; ".join(f"{name} {_slope_text(sl.get(key))}" for name, key in
                             (("RSS MB/min", "rss_mb_per_min"), ("fds/min", "fds_per_min"),
                              ("CPU per call µs/min", "cpu_per_call_us_per_min"),
                              ("the same with the load held fixed", "cpu_per_call_us_per_min_given_load"),
                              ("traced MB/min", "traced_mb_per_min"),
                              ("malloc in use MB/min", "malloc_used_mb_per_min"),
                              ("malloc free MB/min", "malloc_free_mb_per_min"))
                             if key in sl))
    for kind, message in s["first_errors"].items():
        lines.append(f"  first {kind}: {message}")
    outage = s.get("outage_errors") or 0
    lines.append(f"{s['calls']} calls ({s['streams']} streams), errors {s['errors'] or 0}"
                 + (f" ({outage} of them in calls that overlapped an outage)" if outage else "")
                 + f", server restarts {s['restarts']} ({s.get('restart_mode', 'hard')}), GOAWAY every {s['goaway_every'] or '-'} requests via nginx")
    if s["growth"]:
        lines.append(f"traced heap {s['traced_net_growth_kb']:+.1f} KiB net in the {s['snapshots_minutes_apart']:.1f} min "
                     "after the warm-up; the sites that grew most:")
    for g in s["growth"][:10]:
        lines.append(f"  grew {g['size_diff_kb']:9.1f} KiB ({g['count_diff']:+d} blocks) at {g['site']}")
    for g in s["growth_tracebacks"][:5]:
        lines.append(f"  traceback {g['size_diff_kb']:9.1f} KiB: {' <- '.join(g['traceback'][:5])}")
    return "\n".join(lines)


def _slope_text(slope: dict[str, Any] | None) -> str:
    if not slope:
        return "n/a"
    err = slope.get("stderr")
    return f"{slope['per_min']:+.4f}" + ("" if err is None else f" ± {2 * err:.4f}")


def parser(prog: str = "python -m benchmarks soak") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    p.add_argument("--minutes", type=float, required=True, help="how long to run")
    p.add_argument("--window-min", type=float, default=5.0, help="minutes per reported window (5)")
    p.add_argument("--warmup-min", type=float, default=None,
                   help="minutes left out of the slopes (default: one window, at most a third of the run)")
    p.add_argument("--sample-s", type=float, default=10.0, help="seconds between samples of RSS, fds, CPU (10)")
    p.add_argument("--threads", type=int, default=8, help="sync callers, one thread each (8)")
    p.add_argument("--tasks", type=int, default=8, help="async callers, tasks on one event loop (8; 0: none)")
    p.add_argument("--restart-every-s", type=float, default=120.0,
                   help="restart the reference server this often (120; 0: never)")
    p.add_argument("--restart-mode", default="rolling", choices=("rolling", "hard"),
                   help="rolling: the new server starts on the same port before the old one stops (a "
                        "deploy: never nothing listening); hard: the old one stops first (an outage of "
                        "about a start-up; its errors are counted apart)")
    p.add_argument("--goaway-every", type=int, default=1000,
                   help="nginx in front sends GOAWAY after this many requests per connection (1000; 0: no nginx)")
    p.add_argument("--max-retries", type=int, default=4, help="the clients' max_retries (4)")
    p.add_argument("--tracemalloc", action="store_true",
                   help="trace allocations; the sites that grew most after the warm-up go into the result")
    p.add_argument("--out", default="results", help="results directory (a timestamped folder is created inside)")
    return p


def check_args(args: argparse.Namespace) -> str | None:
    """What is wrong with the arguments, or None. Pure."""
    if not args.minutes > 0:
        return f"--minutes must be positive, got {args.minutes:g}"
    if not args.window_min > 0:
        return f"--window-min must be positive, got {args.window_min:g}"
    if not args.sample_s > 0 or args.sample_s > args.window_min * 60:
        return f"--sample-s must be positive and at most one window, got {args.sample_s:g}"
    if args.warmup_min is not None and not 0 <= args.warmup_min < args.minutes:
        return f"--warmup-min must be at least 0 and shorter than the run, got {args.warmup_min:g}"
    if args.threads < 0 or args.tasks < 0 or args.threads + args.tasks == 0:
        return "--threads and --tasks: at least one caller"
    if args.restart_every_s < 0 or args.goaway_every < 0 or args.max_retries < 0:
        return "--restart-every-s, --goaway-every and --max-retries must not be negative"
    return None


def main(argv: list[str] | None = None, prog: str = "python -m benchmarks soak") -> int:
    from .harness.report import SCHEMA, write_result

    p = parser(prog)
    args = p.parse_args(argv)
    problem = check_args(args)
    if problem:
        p.error(problem)
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out_dir = Path(args.out) / stamp
    out_dir.mkdir(parents=True, exist_ok=True)
    print(f"soak: {args.minutes:g} min, windows of {args.window_min:g} min, {args.threads} threads + "
          f"{args.tasks} tasks, server restarted ({args.restart_mode}) every {args.restart_every_s:g} s"
          + (", tracemalloc on" if args.tracemalloc else ""), flush=True)
    load_before = os.getloadavg()
    result = soak(args.minutes, args.window_min, args.warmup_min, args.sample_s, args.threads, args.tasks,
                  args.restart_every_s, args.goaway_every, args.tracemalloc, args.max_retries, str(out_dir),
                  progress=lambda m: print(m, flush=True), restart_mode=args.restart_mode)
    doc = {"schema": SCHEMA, "kind": "soak",
           "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
           "command": " ".join(sys.argv), "network": {"profile": "loopback (no emulation)"},
           "host": {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count(),
                    "load_before": load_before, "load_after": os.getloadavg()},
           "scenarios": [], "advice": [], "soak": result}
    json_path, html_path = write_result(doc, out_dir)
    print(render_text(result))
    print(f"wrote {json_path} and {html_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
