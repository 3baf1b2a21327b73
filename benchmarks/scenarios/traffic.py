"""Load-shape scenarios: steady state, rate sweep, cold start, faults and long prompts.

- ``steady``: Poisson open loop at a fixed rate through llmclient, mixed (lognormal) prompt and
  output lengths, streamed; warm-up dropped; P50/P99/P99.9 with n >= 1000 outside quick mode.
- ``sweep``: open loop at rising rates against a server on the ``a100-175b`` profile; the knee
  (where latency turns up) is marked.
- ``coldstart``: server start to first success, and a fresh client's first call (openai vs
  llmclient), each trial with new clients.
- ``faults``: a server injecting 429/503/504/stragglers/resets; openai vs llmclient vs
  llmclient with hedged requests side by side, failures counted by status and kind.
- ``tail``: streamed chat against slow replicas (5% of requests 8x slower): TTFT and e2e P99
  of llmclient with and without hedged requests; the quick pass picks 5 of 20 calls to
  straggle and counts those that were still slow.
- ``longprompt``: prompts of tens of thousands of characters (upload and encoding cost).
"""

from __future__ import annotations

import dataclasses
import random
import secrets
import statistics
import time
from collections.abc import Callable
from typing import Any

from ..harness._scenario import (
    ChatRequest,
    Context,
    Driver,
    NotAvailable,
    Rate,
    RequestRecord,
    Row,
    ScenarioResult,
)
from ..harness.load import (
    LengthModel,
    long_prompt,
    mixed_requests,
    poisson_arrivals,
    run_open_loop,
    run_sweep,
)
from ..harness.serverproc import ServerError
from ..harness.stats import find_knee

ORDER = 80

SWEEP_PROFILE = "a100-175b"
# That profile's context is 2,048 tokens: keep prompt + answer inside it (~1.15 tokens a word).
SWEEP_LENGTHS = LengthModel(prompt_max_words=1400, output_max_tokens=256)
# Quick mode: shorter answers so each rate drains in seconds (the knee is in the queueing).
SWEEP_LENGTHS_QUICK = LengthModel(prompt_max_words=1400, output_median_tokens=24,
                                  output_max_tokens=64)
# Run-wide fault mix for the ``faults`` scenario: each rolled per request, including retries,
# the way real overload and gateway errors arrive (benchmarks/server/faults.py grammar).
FAULT_MIX = ",".join([
    "status=429;retry_after=0.2;prob=0.05",
    "status=503;prob=0.03",
    "status=504;prob=0.02",
    "straggler=8;prob=0.03",
    "reset;prob=0.02",
])


class Steady:
    name = "steady"
    apis = ("openai", "anthropic")
    description = "Poisson open loop at a fixed rate through llmclient (mixed lengths, streamed)"
    requires = ("llmclient",)
    # one variant, no comparison: nothing for a quick pass to decide
    quick = False
    full_adds = "steady-state P50/P99/P99.9 of 1,200 streamed requests at 20 req/s"

    def run(self, ctx: Context) -> ScenarioResult:
        rng = random.Random(ctx.seed + 20)
        rate = 8.0 if ctx.quick else 20.0
        n = 40 if ctx.quick else 1200
        warmup = 10 if ctx.quick else 100
        driver = ctx.driver("llmclient")
        ctx.progress(f"  steady: warm-up {warmup}, then {n} requests at {rate:g} req/s (Poisson)")
        run_open_loop(ctx, driver, mixed_requests(warmup, rng, stream=True),
                      poisson_arrivals(rate, warmup, rng))
        records = run_open_loop(ctx, driver, mixed_requests(n, rng, stream=True),
                                poisson_arrivals(rate, n, rng))
        for record in records:
            record.variant = "llmclient"
        notes = [f"{n} requests at {rate:g} req/s after {warmup} warm-up requests"]
        if n < 1000:
            notes.append("quick mode: fewer than 1000 requests, P99.9 is not reliable")
        return ScenarioResult.of(self, {"llmclient": records}, notes=notes,
                                 series={"rate": rate})


class Sweep:
    name = "sweep"
    apis = ("openai", "anthropic")
    description = f"rate sweep (open loop, Poisson) on the {SWEEP_PROFILE} profile, knee marked"
    requires = ("llmclient", "spawn_server")
    # a knee from four short rates is a guess: the full pass sweeps ten
    quick = False
    full_adds = f"latency against request rate on {SWEEP_PROFILE}, the knee marked"

    def run(self, ctx: Context) -> ScenarioResult:
        assert ctx.spawn_server is not None
        rng = random.Random(ctx.seed + 30)
        rates = [2.0, 8.0, 16.0, 32.0] if ctx.quick else [1, 2, 4, 6, 8, 12, 16, 24, 32, 48]
        seconds, min_n = (1.5, 6) if ctx.quick else (20.0, 60)
        # The sweep measures steady load, not the model load (the coldstart scenario does):
        # skip the profile's 8.3 s load.
        server = _spawn(ctx, profile=SWEEP_PROFILE, extra_args=("--cold-start-s", "0"))
        try:
            with ctx.routed(server) as url:
                sub = _on(ctx, server, url)
                driver = sub.driver("llmclient")
                lengths = SWEEP_LENGTHS_QUICK if ctx.quick else SWEEP_LENGTHS
                make = lambda k: mixed_requests(k, rng, stream=True, lengths=lengths)  # noqa: E731
                points: list[dict[str, Any]] = []
                for rate in rates:
                    per_rate = max(min_n, int(rate * seconds))
                    point = run_sweep(sub, driver, [float(rate)], per_rate, make, rng)[0]
                    points.append(point)
                    summary = point["summary"]
                    if summary["n_failed"] > summary["n"] / 2:
                        break  # past saturation: more load only adds failures
        finally:
            server.stop()
        p50 = [p["summary"]["latency_ms"].get("p50", float("inf")) for p in points]
        knee = find_knee([p["rate"] for p in points], p50)
        variants: dict[str, list[RequestRecord]] = {}
        for point in points:
            name = f"llmclient@{point['rate']:g}rps"
            for record in point["records"]:
                record.variant = name
            variants[name] = point["records"]
        series = {
            "points": [{"rate": p["rate"], "n": p["summary"]["n"],
                        "n_failed": p["summary"]["n_failed"],
                        "latency_ms": p["summary"]["latency_ms"],
                        "ttft_ms": p["summary"]["ttft_ms"]} for p in points],
            "knee_rate": points[knee]["rate"] if knee is not None else None,
            "profile": SWEEP_PROFILE,
        }
        notes = ["knee: Kneedle on p50 latency vs offered rate"]
        if knee is None:
            notes.append("no knee found: latency did not turn up over the rates tried")
        return ScenarioResult.of(self, variants, notes=notes, series=series)


class ColdStart:
    name = "coldstart"
    apis = ("openai", "anthropic")
    description = "server start to first success; a fresh client's first call (openai vs llmclient)"
    requires = ("llmclient", "openai", "spawn_server")
    quick_s = 4

    def run(self, ctx: Context) -> ScenarioResult:
        assert ctx.spawn_server is not None
        trials = 5 if ctx.quick else 10
        server_trials: list[dict[str, float]] = []
        for _ in range(1 if ctx.quick else 3):
            t0 = time.perf_counter()
            server = _spawn(ctx, wait=False,
                            profile=ctx.server.profile if ctx.server else "zero")
            try:
                ready = time.perf_counter() - t0
                first = _first_success(ctx, server, t0)
                server_trials.append({"ready_s": ready, "first_success_s": first})
            finally:
                server.stop()
        variants: dict[str, list[RequestRecord]] = {"openai/first-call": [],
                                                    "llmclient/first-call": []}
        request = ctx.chat_request("Say hello in five words.", max_tokens=8)
        for i in range(trials):
            order = ["openai", "llmclient"] if i % 2 == 0 else ["llmclient", "openai"]
            for kind in order:
                # A new driver is a new client: its first call pays DNS, TCP, TLS and (for h2)
                # the connection preface, exactly what a freshly started app pays.
                driver = ctx.driver(kind, variant=f"{kind}/first-call")
                variants[f"{kind}/first-call"].append(ctx.run(driver(request, None)))
        rows = [Row("cold start: fresh client's first call", "openai/first-call",
                    "llmclient/first-call", technique="a fresh client's first call")]
        starts = "; ".join(f"READY after {t['ready_s']:.2f}s, first success after "
                           f"{t['first_success_s']:.2f}s" for t in server_trials)
        return ScenarioResult.of(
            self, variants, rows=rows,
            notes=[f"{trials} trials per client, new client each trial",
                   f"server start ({ctx.server.profile if ctx.server else 'zero'}): {starts}"],
            series={"server_start": server_trials})


class Faults:
    name = "faults"
    apis = ("openai", "anthropic")
    description = ("429/503/504/stragglers/resets injected server-side: openai vs llmclient vs "
                   "llmclient with hedged requests, plus llmclient without retries to show the "
                   "raw failure mix")
    requires = ("llmclient", "openai", "faults", "spawn_server")
    # Judged at p95/p99 (retries and hedges work on the tail): 8 calls a side cannot estimate
    # either, and a count of failed calls does not separate clients that all retry. The tail
    # scenario judges hedging in the quick pass, on the stragglers it rescues.
    quick = False
    full_adds = "retries and hedging under injected 429/503/504, resets and stragglers (p95, p99)"

    def run(self, ctx: Context) -> ScenarioResult:
        rng = random.Random(ctx.seed + 40)
        n = 8 if ctx.quick else 300
        # Short answers: this row is about failure handling, not decode time.
        lengths = LengthModel(output_median_tokens=8, output_sigma=0.5, output_max_tokens=32)

        def drivers(sub: Context) -> dict[str, Any]:
            out = {kind: sub.driver(kind) for kind in ("openai", "llmclient")}
            out["llmclient/no-retry"] = sub.driver("llmclient", variant="llmclient/no-retry",
                                                   client_options={"max_retries": 0})
            # Hedged requests with the defaults (p95 of the last 200 calls, at most 10% extra):
            # what they do to the tail that stragglers and retry waits make.
            out["llmclient+hedge"] = _hedged_driver(sub)
            return out

        records = _on_faulty_server(ctx, FAULT_MIX, drivers,
                                    mixed_requests(n, rng, lengths=lengths))
        # Retries and hedging work on the tail: judged at p95/p99, which the quick pass's
        # few requests cannot estimate (the report says "needs --full" for them).
        rows = [Row("faults: openai -> llmclient (e2e of successes)", "openai", "llmclient",
                    statistic="p95", technique="retries under injected faults"),
                Row("faults: llmclient -> llmclient + hedge", "llmclient", "llmclient+hedge",
                    statistic="p99", technique="hedged requests under injected faults"),
                Row("faults: openai -> llmclient + hedge", "openai", "llmclient+hedge",
                    statistic="p99",
                    technique="hedged requests under injected faults vs the official client")]
        retries = sum(int(r.extra.get("retries") or 0) for r in records["llmclient"])
        hedged = records["llmclient+hedge"]
        hedges, wins = _hedge_counts(hedged)
        return ScenarioResult.of(
            self, records, rows=rows,
            notes=[f"{n} requests per client; server faults: {FAULT_MIX}",
                   f"llmclient retried {retries} times in all; the no-retry variant shows the "
                   "injected failures by status and kind",
                   f"llmclient+hedge sent {hedges} second copies for {len(hedged)} calls "
                   f"({hedges / max(len(hedged), 1):.0%} extra load), {wins} answered first "
                   "(it learns its delay from its first 20 calls: none before)"],
            series={"faults": FAULT_MIX, "llmclient_retries": retries, "hedges": hedges,
                    "hedge_wins": wins})


# Slow replicas for the ``tail`` scenario: 5% of requests take 8 times their engine time
# (prefill and decode), the way one overloaded or throttled GPU behind a balancer looks.
TAIL_FAULTS = "straggler=8;prob=0.05"
TAIL_FACTOR = 8
# llmclient's hedge learns its delay (a p95) from its first 20 calls and hedges none of them.
HEDGE_LEARNS_FROM = 20
# The quick pass picks its stragglers itself (an x-fault header, fired once per send: a hedge's
# copy of a straggling call then runs clean, as it would on another replica): 5 of 30 calls,
# spread out so the hedge budget covers each (0.1 of a hedge per call, 3 saved up: 5 in 20
# calls ran it dry at the fifth), and counts how many straggling calls still took over
# SLOW_FACTOR times a clean call: a count decides with 5 a side what a p99 needs 200 for.
QUICK_TAIL_CALLS = 30
QUICK_TAIL_STRAGGLERS = 5
SLOW_FACTOR = 3.0


def spread(n: int, k: int) -> list[int]:
    """Pure: ``k`` indices of ``range(n)`` spread evenly, none first (the middle of each of
    ``k`` equal stretches)."""
    return [int((i + 0.5) * n / k) for i in range(k)]


def with_fault(request: ChatRequest, spec: str) -> ChatRequest:
    return dataclasses.replace(request, headers={**request.headers, "x-fault": spec})


def once_per_send(driver: Driver) -> Driver:
    """Each send fills the ``{once}`` of its ``x-fault`` header with a token of its own, so the
    fault fires on that send's first request only (the hedge's copy carries the same header,
    and the server sees the token spent: it runs clean)."""
    async def send(request: ChatRequest, scheduled: float | None) -> RequestRecord:
        spec = request.headers.get("x-fault")
        if spec is not None and "{once}" in spec:
            request = with_fault(request, spec.format(once=secrets.token_hex(8)))
        return await driver(request, scheduled)

    return send


def mark_slow(records: dict[str, list[RequestRecord]], stragglers: set[int], baseline: str,
              factor: float = SLOW_FACTOR) -> float | None:
    """Pure but for marking ``extra``: each record's ``straggler`` (its request was one) and
    ``slow`` (failed, or over ``factor`` x the median latency of the baseline's clean calls);
    returns that threshold in ms (None: no clean call succeeded)."""
    clean = sorted(r.latency_ms for i, r in enumerate(records[baseline])
                   if r.ok and i not in stragglers)
    if not clean:
        return None
    threshold = factor * statistics.median(clean)
    for recs in records.values():
        for i, r in enumerate(recs):
            r.extra["straggler"] = i in stragglers
            r.extra["slow"] = (not r.ok) or r.latency_ms > threshold
    return threshold


def straggler_slow(record: RequestRecord) -> bool | None:
    """The tail rate's count: a straggling call that was slow (None: not a straggler)."""
    return bool(record.extra.get("slow")) if record.extra.get("straggler") else None


class Tail:
    name = "tail"
    apis = ("openai", "anthropic")
    description = ("streamed chat with slow replicas (5% of requests 8x slower): TTFT and e2e "
                   "P99, llmclient vs llmclient with hedge=True")
    requires = ("llmclient", "faults", "spawn_server")
    quick_s = 35  # measured: 20 learning calls, 30 pairs of which 5 straggle (8x)

    def run(self, ctx: Context) -> ScenarioResult:
        return self._quick(ctx) if ctx.quick else self._full(ctx)

    def _quick(self, ctx: Context) -> ScenarioResult:
        rng = random.Random(ctx.seed + 45)
        lengths = LengthModel(output_median_tokens=12, output_sigma=0.5, output_max_tokens=64)
        stragglers = set(spread(QUICK_TAIL_CALLS, QUICK_TAIL_STRAGGLERS))
        spec = f"straggler={TAIL_FACTOR};once={{once}}"
        requests = [with_fault(r, spec) if i in stragglers else r for i, r in
                    enumerate(mixed_requests(QUICK_TAIL_CALLS, rng, stream=True, lengths=lengths))]
        learn = mixed_requests(HEDGE_LEARNS_FROM, rng, stream=True, lengths=lengths)
        server = _spawn(ctx, profile=ctx.server.profile if ctx.server else "zero",
                        extra_args=("--allow-fault-headers",))
        try:
            with ctx.routed(server) as url:
                sub = _on(ctx, server, url)
                drivers = {"llmclient": once_per_send(sub.driver("llmclient")),
                           "llmclient+hedge": once_per_send(_hedged_driver(sub))}
                ctx.progress(f"  tail: the hedge learns its delay from {HEDGE_LEARNS_FROM} calls")
                sub.interleave({"llmclient+hedge": drivers["llmclient+hedge"]}, learn, warmup=0)
                ctx.progress(f"  tail: {QUICK_TAIL_CALLS} streams per client, "
                             f"{QUICK_TAIL_STRAGGLERS} of them {TAIL_FACTOR}x slower")
                records = sub.interleave(drivers, requests, warmup=1)
        finally:
            server.stop()
        threshold = mark_slow(records, stragglers, "llmclient")
        hedged = records["llmclient+hedge"]
        hedges, wins = _hedge_counts(hedged)
        context = (f"{hedges} hedges for {len(hedged)} calls ({hedges / max(len(hedged), 1):.0%} "
                   f"extra load), {wins} answered first")
        rows = [Rate("slow replicas: straggling streams slower than "
                     f"{SLOW_FACTOR:g}x a clean one: llmclient -> + hedge", "llmclient",
                     "llmclient+hedge", event=f"straggling calls over {SLOW_FACTOR:g}x a clean call",
                     count=straggler_slow, higher_is_better=False,
                     technique="hedged requests, straggling calls (slow replicas)",
                     context=context)]
        notes = [f"quick pass: {QUICK_TAIL_CALLS} streamed requests per client after "
                 f"{HEDGE_LEARNS_FROM} learning calls through the hedged client; calls "
                 f"{sorted(stragglers)} run {TAIL_FACTOR}x slower on their first send (x-fault, "
                 f"once: a hedge's copy runs clean); slow = over {SLOW_FACTOR:g}x the median of "
                 "the baseline's clean calls"
                 + (f" ({threshold:.0f} ms)" if threshold is not None else ""),
                 f"llmclient+hedge: {context}"]
        return ScenarioResult.of(self, records, rows=rows, notes=notes,
                                 series={"stragglers": sorted(stragglers), "slow_ms": threshold,
                                         "hedges": hedges, "hedge_wins": wins})

    def _full(self, ctx: Context) -> ScenarioResult:
        rng = random.Random(ctx.seed + 45)
        n = 200
        lengths = LengthModel(output_median_tokens=24, output_sigma=0.5, output_max_tokens=64)
        records = _on_faulty_server(
            ctx, TAIL_FAULTS,
            lambda sub: {"llmclient": sub.driver("llmclient"), "llmclient+hedge": _hedged_driver(sub)},
            mixed_requests(n, rng, stream=True, lengths=lengths),
            warmup=HEDGE_LEARNS_FROM)
        hedged = records["llmclient+hedge"]
        hedges, wins = _hedge_counts(hedged)
        rescued = f"{hedges} hedges sent, {wins} answered first (calls rescued from the tail)"
        rows = [Row("slow replicas, streamed (TTFT): llmclient -> + hedge", "llmclient",
                    "llmclient+hedge", metric="ttft_ms", statistic="p95",
                    technique="hedged requests, slow replicas (TTFT p95)", context=rescued),
                Row("slow replicas, streamed: llmclient -> + hedge", "llmclient",
                    "llmclient+hedge", statistic="p95",
                    technique="hedged requests, slow replicas (e2e p95)", context=rescued),
                Row("slow replicas, streamed: llmclient -> + hedge", "llmclient",
                    "llmclient+hedge", statistic="p99",
                    technique="hedged requests, slow replicas (e2e p99)", context=rescued)]
        return ScenarioResult.of(
            self, records, rows=rows,
            notes=[f"{n} streamed requests per client; server faults: {TAIL_FAULTS}",
                   f"llmclient+hedge sent {hedges} second copies for {len(hedged)} calls "
                   f"({hedges / max(len(hedged), 1):.0%} extra load), {wins} brought the first "
                   f"token first (after {HEDGE_LEARNS_FROM} warm-up rounds, in which the hedge "
                   "learned its delay)"],
            series={"faults": TAIL_FAULTS, "hedges": hedges, "hedge_wins": wins})


class LongPrompt:
    name = "longprompt"
    apis = ("openai", "anthropic")
    description = "prompts of 20k-35k characters: openai vs llmclient (upload + encoding)"
    requires = ("llmclient", "openai")
    quick_s = 7

    def run(self, ctx: Context) -> ScenarioResult:
        rng = random.Random(ctx.seed + 50)
        n = 6 if ctx.quick else 40
        # 35k characters is ~6.7k tokens: inside an 8k context (h100-8b) with room to answer.
        requests = [ctx.chat_request(long_prompt(rng.randint(20_000, 35_000), rng), max_tokens=8)
                    for _ in range(n)]
        records = ctx.interleave({k: ctx.driver(k) for k in ("openai", "llmclient")}, requests,
                                 warmup=1)
        return ScenarioResult.of(self, records,
                                 rows=[Row("long prompts (20-35k chars)", "openai", "llmclient",
                                           technique="long prompt upload (20-35k characters)")],
                                 notes=[f"{n} requests per client"])


def _on_faulty_server(ctx: Context, faults: str, drivers: Callable[[Context], dict[str, Any]],
                      requests: list[Any], warmup: int = 2) -> dict[str, list[RequestRecord]]:
    """``requests`` through every driver, interleaved, against a new server injecting
    ``faults`` (behind the run's network), after ``warmup`` dropped rounds."""
    server = _spawn(ctx, profile=ctx.server.profile if ctx.server else "zero", faults=faults)
    try:
        with ctx.routed(server) as url:
            sub = _on(ctx, server, url)
            return sub.interleave(drivers(sub), requests, warmup=warmup)
    finally:
        server.stop()


def _hedged_driver(ctx: Context) -> Any:
    return ctx.driver("llmclient", variant="llmclient+hedge", client_options={"hedge": True})


def _hedge_counts(records: list[RequestRecord]) -> tuple[int, int]:
    """(second copies sent, copies that answered first)."""
    return (sum(bool(r.extra.get("hedged")) for r in records),
            sum(bool(r.extra.get("hedge_won")) for r in records))


def _spawn(ctx: Context, wait: bool = True, **kwargs: Any) -> Any:
    """A new reference server; with ``wait``, only once its model has loaded."""
    assert ctx.spawn_server is not None
    try:
        server = ctx.spawn_server(**kwargs)
    except (ServerError, OSError) as exc:
        raise NotAvailable(f"could not start a reference server ({kwargs}): {exc}") from exc
    if not wait:
        return server
    try:
        loaded = server.wait_healthy()
    except ServerError as exc:
        server.stop()
        raise NotAvailable(f"reference server ({kwargs}) never became healthy: {exc}") from exc
    if loaded > 1.0:
        ctx.progress(f"  server ({kwargs.get('profile')}) loaded its model in {loaded:.1f}s")
    return server


def _on(ctx: Context, server: Any, url: str) -> Context:
    """A context for a spawned server: its URL, its model and its own CA (each generates one)."""
    return ctx.derive(base_url=url, direct_url=server.base_url, verify=server.ca_path or ctx.verify,
                      model=server.model(ctx.api_key) or ctx.model)


def _first_success(ctx: Context, server: Any, t0: float, timeout_s: float = 60.0) -> float:
    """Seconds from spawn (t0) until a chat request succeeds (straight to the server)."""
    import httpx

    deadline = t0 + timeout_s
    with httpx.Client(verify=server.ca_path or ctx.verify, timeout=10.0) as client:
        while time.perf_counter() < deadline:
            try:
                response = client.post(
                    server.base_url + "/chat/completions",
                    headers={"authorization": f"Bearer {ctx.api_key}"},
                    json={"model": ctx.model, "max_tokens": 1,
                          "messages": [{"role": "user", "content": "hi"}]})
                if response.status_code == 200:
                    return time.perf_counter() - t0
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
    raise NotAvailable(f"no successful request within {timeout_s:.0f}s of server start")


SCENARIOS = (Steady(), Sweep(), ColdStart(), Faults(), Tail(), LongPrompt())
