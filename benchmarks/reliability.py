"""Long-lived processes that never degrade, measured: ``python -m benchmarks.reliability``.

Three goals of issue 46, each run side by side with the official ``openai`` client:

* ``churn``: calls against servers that close connections under them: nginx sending GOAWAY
  (or, to HTTP/1.1 clients, ``Connection: close``) every 10 requests (``keepalive_requests
  10``), and a uvicorn origin that closes connections idle for a second (``--keep-alive-s 1``;
  callers pause now and then so connections do go idle). Goal: 0 errors and 0 requests that
  reached the upstream twice over 10,000 calls. Duplicates are counted in the upstream's
  access log by each call's ``x-request-id``.
* ``outage``: one origin answers every request 503 for 10 s (the reference server's windowed
  fault, ``status=503;start_ms=...;for_ms=10000``) under 32 concurrent callers (each pausing
  50 ms between calls). Goal: attempts at most 1.2x the calls while it lasts (the official
  client: about 3x, ``max_retries=2``), and calls after it succeed at once. Attempts are the
  upstream's access log; the outage's calls are those it answered 503 at least once.
* ``eyeballs``: a new connection to a dual-stack name whose IPv6 route blackholes (a network
  namespace, ``benchmarks.netem.DualStackLink``, as root with nftables). Goal: a new connection
  costs at most RTT + 300 ms (RFC 8305's 250 ms attempt delay, plus the IPv4 handshake), where
  a client that tries addresses in turn waits out its connect timeout.

Issue 45's overload goal (529 bursts, llmclient's Anthropic face against the official
``anthropic`` client) is a tool of its own, ``benchmarks/overload.py``:
``python -m benchmarks reliability overload`` (or ``python -m benchmarks.overload``).

``--base-url URL`` runs ``churn`` against your own server or gateway (errors only: the upstream's
log is not ours to read). Run under the bench lock on a shared machine:
``flock /tmp/llmclient-bench.lock python -m benchmarks.reliability all``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .fixtures.nginx import NginxGoaway
from .harness.serverproc import ServerProcess, start_server
from .harness.stats import percentile

MSG = [{"role": "user", "content": "hello"}]
_POST = re.compile(r"request_id=(\S+) .* POST /v1/chat/completions (\d+)")
CLIENTS = ("llmclient", "llmclient-async", "openai")


@dataclass
class Tally:
    """One client's run: calls, what failed (by kind), and what the upstream saw."""

    client: str
    target: str
    calls: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    ids: list[str] = field(default_factory=list)
    latencies_ms: list[float] = field(default_factory=list)
    upstream_attempts: int | None = None
    duplicated: int | None = None
    notes: dict[str, Any] = field(default_factory=dict)

    def row(self) -> dict[str, Any]:
        out = asdict(self)
        out.pop("ids")
        out["errors"] = dict(self.errors)
        out["error_total"] = sum(self.errors.values())
        lat = self.latencies_ms
        out["latencies_ms"] = {"p50": percentile(lat, 50), "p99": percentile(lat, 99), "n": len(lat)} if lat else {}
        return out


def upstream_counts(log_path: str | None) -> Counter[str]:
    """How many times each chat request id reached the upstream (its access log)."""
    return Counter({rid: len(statuses) for rid, statuses in upstream_statuses(log_path).items()})


def upstream_statuses(log_path: str | None) -> dict[str, list[int]]:
    """What the upstream answered each attempt of each chat request id (its access log)."""
    out: dict[str, list[int]] = {}
    if log_path:
        for m in _POST.finditer(Path(log_path).read_text(errors="replace")):
            out.setdefault(m.group(1), []).append(int(m.group(2)))
    return out


def _kind(exc: BaseException) -> str:
    name = type(exc).__name__
    status = getattr(exc, "status_code", None)
    return f"{name} {status}" if status else name


# -- the clients: one call each, the same for all ---------------------------------------------------


def _make(client: str, base_url: str, **kw: Any) -> Any:
    if client == "openai":
        import openai

        timeout = kw.get("timeout")
        if timeout is not None and not isinstance(timeout, (int, float)):  # its own httpx's Timeout
            kw["timeout"] = openai.Timeout(timeout.read, connect=timeout.connect, write=timeout.write,
                                           pool=timeout.pool)
        return openai.OpenAI(base_url=base_url, api_key="bench-key", **kw)
    import llmclient

    cls = llmclient.AsyncOpenAI if client == "llmclient-async" else llmclient.OpenAI
    return cls(base_url=base_url, api_key="bench-key", **kw)


def _closed_loop(client: str, base_url: str, model: str, calls: int, concurrency: int, tally: Tally,
                 pause: Callable[[random.Random], float], stop_at: float | None = None, **kw: Any) -> None:
    """``calls`` calls (or until ``stop_at``) from ``concurrency`` callers, each pausing
    ``pause(rng)`` seconds after a call; every call's id, latency and error into ``tally``."""
    lock = threading.Lock()
    left = [calls]

    def take() -> bool:
        with lock:
            if left[0] <= 0 or (stop_at is not None and time.monotonic() >= stop_at):
                return False
            left[0] -= 1
            return True

    def record(rid: str, t0: float, exc: BaseException | None) -> None:
        with lock:
            tally.calls += 1
            tally.ids.append(rid)
            if exc is None:
                tally.latencies_ms.append((time.perf_counter() - t0) * 1000.0)
            else:
                tally.errors[_kind(exc)] += 1

    if client == "llmclient-async":
        async def run() -> None:
            c = _make(client, base_url, **kw)

            async def caller(n: int) -> None:
                rng = random.Random(n)
                while take():
                    rid = uuid.uuid4().hex
                    t0 = time.perf_counter()
                    try:
                        await c.chat.completions.create(model=model, messages=MSG, max_tokens=2,
                                                        extra_headers={"x-request-id": rid})
                        record(rid, t0, None)
                    except Exception as exc:
                        record(rid, t0, exc)
                    wait = pause(rng)
                    if wait:
                        await asyncio.sleep(wait)
            try:
                await asyncio.gather(*(caller(n) for n in range(concurrency)))
            finally:
                await c.close()
        asyncio.run(run())
        return
    c = _make(client, base_url, **kw)

    def caller(n: int) -> None:
        rng = random.Random(n)
        while take():
            rid = uuid.uuid4().hex
            t0 = time.perf_counter()
            try:
                c.chat.completions.create(model=model, messages=MSG, max_tokens=2, extra_headers={"x-request-id": rid})
                record(rid, t0, None)
            except Exception as exc:
                record(rid, t0, exc)
            wait = pause(rng)
            if wait:
                time.sleep(wait)

    try:
        with ThreadPoolExecutor(concurrency) as pool:
            list(pool.map(caller, range(concurrency)))
    finally:
        c.close()


def _settle(tally: Tally, server: ServerProcess | None) -> None:
    """What the upstream saw of this tally's calls (its access log is written just after each
    answer: wait a little for the last ones)."""
    if server is None or server.log_path is None:
        return
    deadline = time.monotonic() + 5.0
    while True:
        seen = upstream_counts(server.log_path)
        if all(seen[rid] for rid in tally.ids[-50:]) or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    tally.upstream_attempts = sum(seen[rid] for rid in tally.ids)
    tally.duplicated = sum(1 for rid in tally.ids if seen[rid] > 1)


# -- churn: nginx GOAWAY every 10 requests, uvicorn closing idle connections every second --------

def _sometimes_idle(rng: random.Random) -> float:
    """A caller pauses after one call in five, for up to 1.3 s: connections go idle past the
    uvicorn origin's 1 s keep-alive now and then."""
    return rng.uniform(0.0, 1.3) if rng.random() < 0.2 else 0.0


def churn(calls: int, concurrency: int, clients: tuple[str, ...], base_url: str | None = None) -> list[Tally]:
    out: list[Tally] = []
    if base_url is not None:
        model = _first_model(base_url)
        for client in clients:
            tally = Tally(client, "given", notes={"base_url": base_url})
            _closed_loop(client, base_url, model, calls, concurrency, tally, _sometimes_idle, timeout=30)
            out.append(tally)
        return out
    targets: list[tuple[str, Callable[[], tuple[ServerProcess, Any, str]]]] = [
        ("nginx GOAWAY every 10 requests", _nginx_target),
        ("uvicorn closing connections idle 1 s", _uvicorn_target),
    ]
    for name, start in targets:
        for client in clients:
            server, extra, url = start()
            if client == "openai" and isinstance(extra, NginxGoaway):
                url = extra.base_url_http1  # the official client speaks HTTP/1.1 only
            try:
                _warm(client, url)
                tally = Tally(client, name)
                _closed_loop(client, url, "sim-zero", calls, concurrency, tally, _sometimes_idle, timeout=30)
                _settle(tally, server)
                out.append(tally)
            finally:
                if extra is not None:
                    extra.close()
                server.stop()
    return out


def _nginx_target() -> tuple[ServerProcess, Any, str]:
    server = start_server("zero", extra_args=("--access-log",))
    try:
        server.wait_healthy()
        proxy = NginxGoaway(server.port, 10)
    except BaseException:
        server.stop()
        raise
    return server, proxy, proxy.base_url


def _uvicorn_target() -> tuple[ServerProcess, Any, str]:
    server = start_server("zero", extra_args=("--access-log", "--server", "uvicorn", "--keep-alive-s", "1"))
    try:
        server.wait_healthy()
    except BaseException:
        server.stop()
        raise
    return server, None, server.base_url


def _first_model(base_url: str) -> str:
    import httpx

    data = httpx.get(base_url.rstrip("/") + "/models", headers={"authorization": "Bearer bench-key"},
                     timeout=10).json().get("data") or []
    return str(data[0]["id"]) if data else "sim-zero"


# -- outage: every answer 503 for 10 s, 32 callers ------------------------------------------------


def outage(callers: int, outage_s: float, before_s: float, after_s: float, clients: tuple[str, ...]) -> list[Tally]:
    out: list[Tally] = []
    for client in clients:
        spec = f"status=503;start_ms={int(before_s * 1000)};for_ms={int(outage_s * 1000)}"
        server = start_server("zero", faults=spec, extra_args=("--access-log",))
        try:
            server.wait_healthy()  # (a GET: the fault's window starts at the first POST, the loop's)
            tally = Tally(client, f"every answer 503 for {outage_s:g} s")
            # The window counts from the server's first POST: this warm-up's, decided as it is
            # answered (the first call of a process costs its imports first: under load, seconds).
            _warm(client, server.base_url)
            t_first = time.monotonic()
            window_end = t_first + before_s + outage_s  # by our clock: the server's ends a moment earlier
            stamps: list[tuple[float, str, bool, float]] = []
            _outage_loop(client, server.base_url, callers, t_first + before_s + outage_s + after_s, tally, stamps)
            _settle(tally, server)
            statuses = upstream_statuses(server.log_path)
            seen = Counter({rid: len(answers) for rid, answers in statuses.items()})
            # The calls the outage met: an attempt of theirs answered 503 (the server's clock
            # decides, not ours: its window opened when it saw the warm-up's POST, a moment
            # before the answer reached us, so a window by our clock would be off by as much).
            during = [s for s in stamps if 503 in statuses.get(s[1], ())]
            after = [s for s in stamps if s[0] >= window_end + 0.5]  # a moment for calls in flight to end
            tally.notes = {
                "calls_during": len(during),
                "attempts_during": sum(seen[rid] for _, rid, _, _ in during),
                "calls_after": len(after),
                "after_ok": sum(1 for *_, ok, _ in after if ok),
                "after_first_try": sum(1 for _, rid, ok, _ in after if ok and seen[rid] == 1),
                "after_p50_ms": percentile([ms for *_, ok, ms in after if ok], 50) if after else None,
                "budget_refusals": tally.notes.get("budget_refusals", 0),
            }
            tally.notes["attempts_per_call_during"] = (tally.notes["attempts_during"] / len(during)) if during else None
            out.append(tally)
        finally:
            server.stop()
    return out


def _warm(client: str, base_url: str) -> None:
    """One call through a throwaway client of this kind (and event loop)."""
    tally = Tally(client, "warm-up")
    _closed_loop(client, base_url, "sim-zero", 1, 1, tally, lambda _rng: 0.0, timeout=60)
    if tally.errors:
        raise RuntimeError(f"warm-up call failed: {dict(tally.errors)}")


def _outage_loop(client: str, base_url: str, callers: int, stop_at: float, tally: Tally,
                 stamps: list[tuple[float, str, bool, float]]) -> None:
    """Callers each make a call, pause 50 ms, and again, until ``stop_at``; each call's start,
    id, success and latency into ``stamps``."""
    lock = threading.Lock()
    refused = [0]

    def note(t_start: float, rid: str, exc: BaseException | None, t0: float) -> None:
        ms = (time.perf_counter() - t0) * 1000.0
        with lock:
            tally.calls += 1
            tally.ids.append(rid)
            stamps.append((t_start, rid, exc is None, ms))
            if exc is None:
                tally.latencies_ms.append(ms)
            else:
                tally.errors[_kind(exc)] += 1
                if getattr(exc, "retry_budget", None):
                    refused[0] += 1

    if client == "llmclient-async":
        async def run() -> None:
            c = _make(client, base_url, timeout=30)

            async def caller() -> None:
                while time.monotonic() < stop_at:
                    rid, t_start, t0 = uuid.uuid4().hex, time.monotonic(), time.perf_counter()
                    try:
                        await c.chat.completions.create(model="sim-zero", messages=MSG, max_tokens=2,
                                                        extra_headers={"x-request-id": rid})
                        note(t_start, rid, None, t0)
                    except Exception as exc:
                        note(t_start, rid, exc, t0)
                    await asyncio.sleep(0.05)
            try:
                await asyncio.gather(*(caller() for _ in range(callers)))
            finally:
                await c.close()
        asyncio.run(run())
    else:
        c = _make(client, base_url, timeout=30)

        def caller(_: int) -> None:
            while time.monotonic() < stop_at:
                rid, t_start, t0 = uuid.uuid4().hex, time.monotonic(), time.perf_counter()
                try:
                    c.chat.completions.create(model="sim-zero", messages=MSG, max_tokens=2,
                                              extra_headers={"x-request-id": rid})
                    note(t_start, rid, None, t0)
                except Exception as exc:
                    note(t_start, rid, exc, t0)
                time.sleep(0.05)

        try:
            with ThreadPoolExecutor(callers) as pool:
                list(pool.map(caller, range(callers)))
        finally:
            c.close()
    tally.notes["budget_refusals"] = refused[0]


# -- eyeballs: a dual-stack name whose IPv6 route blackholes --------------------------------------


def probe_eyeballs(url: str, client: str, n: int, connect_timeout: float) -> list[dict[str, Any]]:
    """Inside the namespace: ``n`` calls, each on a new connection; per call its wall time and,
    for llmclient, its connect time, address and family."""
    import httpx

    timeout = httpx.Timeout(30.0, connect=connect_timeout)
    out: list[dict[str, Any]] = []
    for _ in range(n):
        t0 = time.perf_counter()
        row: dict[str, Any] = {"client": client}
        try:
            if client == "llmclient-async":
                async def one() -> Any:
                    c = _make(client, url, timeout=timeout, max_retries=0)
                    try:
                        return await c.chat.completions.create(model="sim-zero", messages=MSG, max_tokens=2)
                    finally:
                        await c.close()
                        import llmclient

                        await llmclient.aclose_all()
                answer = asyncio.run(one())
            else:
                c = _make(client, url, timeout=timeout, max_retries=0)
                try:
                    answer = c.chat.completions.create(model="sim-zero", messages=MSG, max_tokens=2)
                finally:
                    c.close()
                if client == "llmclient":
                    import llmclient

                    llmclient.close_all()  # the next call opens a new connection
            record = getattr(answer, "timings", None)
            if record is not None:
                row.update(connect_ms=record.connect_ms, address=record.remote_address,
                           family=record.address_family, attempts=record.connect_attempts)
        except Exception as exc:
            row["error"] = _kind(exc)
        row["wall_ms"] = (time.perf_counter() - t0) * 1000.0
        out.append(row)
    return out


def eyeballs(n: int, connect_timeout: float, clients: tuple[str, ...]) -> dict[str, Any]:
    from .netem import DualStackLink, dualstack_supported

    ok, why = dualstack_supported()
    if not ok:
        return {"skipped": why}
    with DualStackLink() as link:
        link.blackhole_ipv6()
        server = start_server("zero", extra_args=("--host", link.host_address))
        try:
            server.wait_healthy()
            url = f"http://{link.NAME}:{server.port}/v1"
            rtt = _tcp_rtt_ms(link, server.port)
            rows: dict[str, Any] = {"rtt_ms": rtt, "connect_timeout_s": connect_timeout, "clients": {}}
            for client in clients:
                rows["clients"][client] = run_probe(link, url, client, n, connect_timeout)
            return rows
        finally:
            server.stop()


def run_probe(link: Any, url: str, client: str, n: int, connect_timeout: float) -> list[dict[str, Any]]:
    """:func:`probe_eyeballs` run in ``link``'s namespace (its own process: the namespace's
    resolver and routes)."""
    root = Path(__file__).resolve().parent.parent
    package = __spec__.name.rsplit(".", 1)[0] if __spec__ is not None else "benchmarks"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH")) if p)}
    argv = link.command([sys.executable, "-m", f"{package}.reliability", "probe-eyeballs", url,
                         "--client", client, "--n", str(n), "--connect-timeout", str(connect_timeout)])
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=root,
                          timeout=n * (connect_timeout + 30) + 60, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"probe failed ({done.returncode}): {done.stderr[-2000:]}")
    rows: list[dict[str, Any]] = json.loads(done.stdout.strip().splitlines()[-1])
    return rows


def _tcp_rtt_ms(link: Any, port: int) -> float:
    """The namespace's TCP connect time to the server's IPv4 address (median of 5): the RTT the
    goal adds 300 ms to."""
    code = ("import socket,time,statistics;t=[]\n"
            f"for _ in range(5):\n t0=time.perf_counter();socket.create_connection(('{link.host_address}',{port}),5).close();"
            "t.append((time.perf_counter()-t0)*1000)\nprint(statistics.median(t))")
    done = subprocess.run(link.command([sys.executable, "-c", code]), capture_output=True, text=True,
                          timeout=60, check=True)
    return float(done.stdout.strip())


# -- the command line -----------------------------------------------------------------------------


def _print_churn(rows: list[Tally]) -> None:
    print(f"{'target':40} {'client':16} {'calls':>7} {'errors':>7} {'dup':>5} {'attempts':>9} {'p50 ms':>8}")
    for t in rows:
        r = t.row()
        print(f"{t.target:40} {t.client:16} {t.calls:7d} {r['error_total']:7d} "
              f"{'-' if t.duplicated is None else t.duplicated:>5} "
              f"{'-' if t.upstream_attempts is None else t.upstream_attempts:>9} "
              f"{(r['latencies_ms'] or {}).get('p50') or 0:8.1f}"
              + (f"  {dict(t.errors)}" if t.errors else ""))


def _print_outage(rows: list[Tally]) -> None:
    print(f"{'client':16} {'calls in outage':>15} {'attempts':>9} {'per call':>9} {'refused':>8} "
          f"{'calls after':>11} {'ok 1st try':>10} {'p50 after ms':>12}")
    for t in rows:
        n = t.notes
        per = n.get("attempts_per_call_during")
        print(f"{t.client:16} {n['calls_during']:15d} {n['attempts_during']:9d} "
              f"{'-' if per is None else f'{per:.2f}x':>9} {n['budget_refusals']:8d} {n['calls_after']:11d} "
              f"{n['after_first_try']:10d} {n['after_p50_ms'] or 0:12.1f}")


def _print_eyeballs(found: dict[str, Any]) -> None:
    if "skipped" in found:
        print(f"eyeballs: skipped: {found['skipped']}")
        return
    print(f"eyeballs: TCP RTT to the IPv4 address {found['rtt_ms']:.2f} ms; IPv6 blackholed; connect timeout "
          f"{found['connect_timeout_s']:g} s; goal: a new connection <= RTT + 300 ms")
    for client, rows in found["clients"].items():
        walls = [r["wall_ms"] for r in rows]
        connects = [r["connect_ms"] for r in rows if r.get("connect_ms") is not None]
        errors = [r["error"] for r in rows if "error" in r]
        families = Counter(r.get("family") for r in rows if r.get("family"))
        line = f"  {client:16} call on a new connection p50 {percentile(walls, 50):8.1f} ms, max {max(walls):8.1f} ms"
        if connects:
            line += f"; connect p50 {percentile(connects, 50):6.1f} ms, max {max(connects):6.1f} ms, {dict(families)}"
        if errors:
            line += f"; errors {Counter(errors)}"
        print(line)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.reliability", description=__doc__.split("\n\n")[0])
    p.add_argument("what", choices=("churn", "outage", "eyeballs", "all", "probe-eyeballs"))
    p.add_argument("url", nargs="?", help=argparse.SUPPRESS)  # probe-eyeballs only
    p.add_argument("--calls", type=int, default=10_000, help="churn: calls per client and server (10,000)")
    p.add_argument("--concurrency", type=int, default=16, help="churn: callers (16)")
    p.add_argument("--callers", type=int, default=32, help="outage: callers (32)")
    p.add_argument("--outage-s", type=float, default=10.0, help="outage: how long every answer is 503 (10)")
    p.add_argument("--connections", type=int, default=5, help="eyeballs: new connections per client (5)")
    p.add_argument("--connect-timeout", type=float, default=5.0, help="eyeballs: the clients' connect timeout (5 s)")
    p.add_argument("--clients", default=",".join(CLIENTS), help=f"comma-separated, of {', '.join(CLIENTS)}")
    p.add_argument("--base-url", help="churn against your own server or gateway (errors only)")
    p.add_argument("--json", type=Path, help="write every figure here")
    p.add_argument("--client", help=argparse.SUPPRESS)
    p.add_argument("--n", type=int, default=1, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.what == "probe-eyeballs":
        print(json.dumps(probe_eyeballs(args.url, args.client, args.n, args.connect_timeout)))
        return
    clients = tuple(c.strip() for c in args.clients.split(",") if c.strip())
    unknown = sorted(set(clients) - set(CLIENTS))
    if unknown:
        p.error(f"unknown --clients {unknown}: choose from {', '.join(CLIENTS)}")
    report: dict[str, Any] = {"machine": {"cpus": os.cpu_count(), "load": os.getloadavg()}}
    if args.what in ("churn", "all"):
        rows = churn(args.calls, args.concurrency, clients, args.base_url)
        _print_churn(rows)
        report["churn"] = [t.row() for t in rows]
    if args.what in ("outage", "all"):
        rows = outage(args.callers, args.outage_s, 2.0, 3.0, clients)
        _print_outage(rows)
        report["outage"] = [t.row() for t in rows]
    if args.what in ("eyeballs", "all"):
        found = eyeballs(args.connections, args.connect_timeout, clients)
        _print_eyeballs(found)
        report["eyeballs"] = found
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2, default=str))


if __name__ == "__main__":
    main()
