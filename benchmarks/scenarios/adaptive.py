"""Adaptive concurrency on a self-hosted server: a batch job beside interactive streams.

The server is the reference server with the ``a100-175b`` profile and no rate limits (so no
rate-limit headers): 16 sequences decode at a time, and past that knee it accepts every call
and queues it. A batch job (``BATCH_WORKERS`` closed-loop, non-streamed, low-priority calls; its
own llmclient client) runs beside interactive streamed calls (open loop, Poisson arrivals; a
client of their own, as a second application would have). Variants, in that order:

* ``idle``: the interactive calls alone (the reference for their time to first token);
* ``unlimited``: the batch job sends all its calls at once;
* ``fixed-N``: the batch client capped at N calls in flight (a small sweep);
* ``adaptive``: the batch client with ``concurrency="adaptive"`` (AIMD on Server-Timing queue).

The server above runs vLLM's default scheduling policy (``fcfs``): no request overtakes another,
so no client-side cap can both keep the batch's throughput and leave an interactive call a free
slot (benchmarks/README.md has the arithmetic). The same variants prefixed ``prio-`` run against
a second server started with ``--scheduling-policy priority``, the batch client marking its calls
``priority="low"`` with ``priority_field=True`` (vLLM's body ``priority``): an interactive call
that finds every slot taken preempts a batch sequence (vLLM V0's priority preemption).
``v1-unlimited`` (full runs) is the same against ``--no-waiting-preemption``: vLLM V1's
scheduler, which orders the waiting queue by priority but never preempts for it. Each server's
idle reference is measured the same way (``prio-idle``, ``v1-idle``; quick runs use ``idle``).

``BENCH_ADAPTIVE_VARIANTS=idle,prio-idle,prio-unlimited`` and ``BENCH_ADAPTIVE_MEASURE_S=60`` run a
subset for longer (:func:`subset`).

Reported: the interactive calls' TTFT p99 against their server's idle (goal <= 1.5x) and the batch
job's throughput (completion tokens per second, medians over 1 s bins) against the best fixed cap
on the fcfs server (goal >= 90%), each with a bootstrap interval; preemptions the server counted
in each variant; the adaptive limits' end state.
"""

from __future__ import annotations

import asyncio
import os
import random
import time
from typing import Any

from ..harness._scenario import Arm, Context, NotAvailable, RequestRecord, Row, ScenarioResult
from ..harness.sampler import parse_prometheus
from ..harness.serverproc import ServerError
from ..harness.stats import bootstrap_ratio, percentile

ORDER = 61
PROFILE = "a100-175b"  # max_batch 16: the knee
BATCH_WORKERS = 48
BATCH_MAX_TOKENS = 48
INTERACTIVE_MAX_TOKENS = 8
INTERACTIVE_RATE = 4.0  # calls per second
FIXED_QUICK = (8, 16, 24)
FIXED_FULL = (8, 12, 16, 20, 24, 32)
# Variants against a server with vLLM's priority policy: "prio-" preempts for a waiting request
# (V0), "v1-" does not (V1). Quick runs compare them with the fcfs server's idle.
PRIORITY_QUICK = ("prio-unlimited", "prio-adaptive")
PRIORITY_FULL = ("prio-idle", "prio-unlimited", "prio-adaptive", "v1-idle", "v1-unlimited")
# The server flags behind each prefix (the fcfs server has none).
SERVERS: dict[str, tuple[str, ...]] = {
    "": (),
    "prio-": ("--scheduling-policy", "priority"),
    "v1-": ("--scheduling-policy", "priority", "--no-waiting-preemption"),
}
BIN_S = 1.0


def split_variant(variant: str) -> tuple[str, str]:
    """``"prio-fixed-16"`` -> (``"prio-"``, ``"fixed-16"``): the server it runs against and what
    the batch client does there."""
    for prefix in SERVERS:
        if prefix and variant.startswith(prefix):
            return prefix, variant[len(prefix):]
    return "", variant


def _batch_client(llmclient: Any, url: str, key: str, variant: str, verify: Any) -> Any:
    from llmclient.features.admit.concurrency import AdaptiveConfig

    prefix, kind = split_variant(variant)
    # every batch call is marked low (x-llm-priority); on a priority server also in vLLM's field
    kw: dict[str, Any] = {"priority": "low", "priority_field": bool(prefix)}
    if kind == "adaptive":
        kw["concurrency"] = "adaptive"
    elif kind.startswith("fixed-"):
        n = int(kind.split("-", 1)[1])
        kw["concurrency"] = AdaptiveConfig(initial=n, minimum=n, maximum=n)
    return llmclient.AsyncOpenAI(base_url=url, api_key=key, max_retries=0, timeout=120.0, verify=verify, **kw)


async def _interactive(client: Any, model: str, variant: str, t_end: float, rng: random.Random,
                       epoch: float) -> list[RequestRecord]:
    records: list[RequestRecord] = []
    tasks = []

    async def one(i: int) -> None:
        t0 = time.perf_counter()
        ttft = None
        try:
            stream = await client.chat.completions.create(
                model=model, max_tokens=INTERACTIVE_MAX_TOKENS, stream=True,
                messages=[{"role": "user", "content": f"interactive {variant} {i}: say something short"}])
            async for chunk in stream:
                if ttft is None and chunk.choices and chunk.choices[0].delta.content:
                    ttft = (time.perf_counter() - t0) * 1000.0
            records.append(RequestRecord(variant=variant, trace_id="", start_s=t0 - epoch,
                                         latency_ms=(time.perf_counter() - t0) * 1000.0, status=200, ttft_ms=ttft))
        except Exception as exc:  # counted as a failure, kept in the records
            records.append(RequestRecord(variant=variant, trace_id="", start_s=t0 - epoch,
                                         latency_ms=(time.perf_counter() - t0) * 1000.0,
                                         status=getattr(exc, "status_code", None), error_kind=type(exc).__name__))

    i = 0
    next_at = time.perf_counter()
    while True:
        next_at += rng.expovariate(INTERACTIVE_RATE)
        if next_at >= t_end:
            break
        await asyncio.sleep(max(0.0, next_at - time.perf_counter()))
        tasks.append(asyncio.ensure_future(one(i)))
        i += 1
    await asyncio.gather(*tasks)
    return records


async def _batch(client: Any, model: str, t_from: float, t_end: float) -> list[tuple[float, float, int]]:
    done: list[tuple[float, float, int]] = []  # (sent, answered, completion tokens)

    async def worker(w: int) -> None:
        n = 0
        while time.perf_counter() < t_end:
            t0 = time.perf_counter()
            resp = await client.chat.completions.create(
                model=model, max_tokens=BATCH_MAX_TOKENS,
                messages=[{"role": "user", "content": f"batch item {w}-{n}: summarise this record"}])
            n += 1
            done.append((t0, time.perf_counter(), resp.usage.completion_tokens if resp.usage else 0))

    await asyncio.gather(*(worker(w) for w in range(BATCH_WORKERS)))
    return done


def _bins(done: list[tuple[float, float, int]], t_from: float, t_end: float) -> list[float]:
    """Tokens per second in each bin of the measured span, each call's tokens spread evenly over
    its time in flight (a 2 s call counted only where it ends makes bins lumpy)."""
    n = max(1, int((t_end - t_from) // BIN_S))
    bins = [0.0] * n
    for sent, answered, tokens in done:
        span = max(answered - sent, 1e-6)
        for i in range(n):
            lo, hi = t_from + i * BIN_S, t_from + (i + 1) * BIN_S
            overlap = min(hi, answered) - max(lo, sent)
            if overlap > 0:
                bins[i] += tokens * overlap / span / BIN_S
    return bins


async def _variant(llmclient: Any, url: str, verify: Any, model: str, variant: str, warm_s: float,
                   measure_s: float, seed: int, epoch: float) -> tuple[list[RequestRecord], list[float], dict[str, Any] | None]:
    interactive = llmclient.AsyncOpenAI(base_url=url, api_key="adaptive-interactive", max_retries=0, timeout=120.0,
                                         verify=verify)
    idle = split_variant(variant)[1] == "idle"
    batch = None if idle else _batch_client(llmclient, url, f"adaptive-batch-{variant}", variant, verify)
    try:
        start = time.perf_counter()
        t_from, t_end = start + warm_s, start + warm_s + measure_s
        batch_task = asyncio.ensure_future(_batch(batch, model, t_from, t_end)) if batch is not None else None
        await asyncio.sleep(warm_s)
        records = await _interactive(interactive, model, variant, t_end, random.Random(seed), epoch)
        done = await batch_task if batch_task is not None else []
        gates = None
        if split_variant(variant)[1] == "adaptive" and batch is not None:
            gates = next(iter(batch.concurrency_limits.values()), None)
        return records, _bins(done, t_from, t_end), gates
    finally:
        await interactive.close()
        if batch is not None:
            await batch.close()


def _interval(interval: tuple[float, float] | None) -> str:
    return "n/a" if interval is None else f"[{interval[0]:.2f}-{interval[1]:.2f}]"


class AdaptiveConcurrency:
    name = "adaptive"
    description = ("self-hosted server past its knee (no rate-limit headers): a batch job beside "
                   "interactive streams, no limit vs fixed caps vs concurrency='adaptive'")
    requires = ("llmclient", "spawn_server")
    # Judged on the interactive calls' TTFT p99 (goal <= 1.5x idle): 6 s of calls at 4/s per
    # variant is 24 calls, and eight variants cost the quick pass over 100 s for no verdict.
    quick = False
    full_adds = "adaptive concurrency and priority='low' beside interactive streams (TTFT p99)"

    def run(self, ctx: Context) -> ScenarioResult:
        assert ctx.spawn_server is not None
        import llmclient

        warm_s, measure_s = (2.0, 6.0) if ctx.quick else (4.0, 20.0)
        fixed = FIXED_QUICK if ctx.quick else FIXED_FULL
        variants_order = ("idle", "unlimited", *(f"fixed-{n}" for n in fixed), "adaptive",
                          *(PRIORITY_QUICK if ctx.quick else PRIORITY_FULL))
        variants_order, measure_s = subset(variants_order, measure_s, os.environ.get("BENCH_ADAPTIVE_VARIANTS"),
                                           os.environ.get("BENCH_ADAPTIVE_MEASURE_S"))
        records: dict[str, list[RequestRecord]] = {}
        bins: dict[str, list[float]] = {}
        states: dict[str, Any] = {}
        preemptions: dict[str, dict[str, float]] = {}
        for prefix, flags in SERVERS.items():
            mine = [v for v in variants_order if split_variant(v)[0] == prefix]
            if not mine:
                continue
            try:
                server = ctx.spawn_server(profile=PROFILE, extra_args=("--cold-start-s", "0", *flags))
                server.wait_healthy()
            except (ServerError, OSError) as exc:
                raise NotAvailable(f"could not start the reference server ({PROFILE} {' '.join(flags)}): {exc}") from exc
            try:
                with ctx.routed(server) as url:
                    verify: Any = server.ca_path or ctx.verify
                    model = _model(url, verify)
                    for variant in mine:
                        ctx.progress(f"  adaptive {variant}: {warm_s + measure_s:g} s")
                        before = _preemptions(server.origin, verify)
                        recs, b, gates = ctx.run(_variant(llmclient, url, verify, model, variant, warm_s, measure_s,
                                                          ctx.seed * 100 + variants_order.index(variant), ctx.epoch))
                        after = _preemptions(server.origin, verify)
                        preemptions[variant] = {k: after[k] - before.get(k, 0.0) for k in after}
                        records[variant], bins[variant] = recs, b
                        if gates is not None:
                            states[variant] = gates
            finally:
                server.stop()
        return summarise(self, records, bins, states, warm_s, measure_s, preemptions)


def subset(order: tuple[str, ...], measure_s: float, names: str | None,
           seconds: str | None) -> tuple[tuple[str, ...], float]:
    """Pure: the variants a run covers and how long each is measured. ``BENCH_ADAPTIVE_VARIANTS``
    (comma-separated, of every full run's variants) and ``BENCH_ADAPTIVE_MEASURE_S`` (seconds):
    a p99 of 80 calls is one call's luck; 60 s gives ~240 (a few variants: a few minutes)."""
    known = ("idle", "unlimited", *(f"fixed-{n}" for n in FIXED_FULL), "adaptive", *PRIORITY_FULL,
             *(p + k for p in SERVERS if p for k in ("fixed-16", "adaptive")))
    if names:
        wanted = [n.strip() for n in names.split(",") if n.strip()]
        for name in wanted:
            if name not in known:
                raise ValueError(f"BENCH_ADAPTIVE_VARIANTS: unknown variant {name!r} (one of {', '.join(known)})")
        order = tuple(v for v in known if v in wanted)
    if seconds:
        try:
            measure_s = float(seconds)
        except ValueError:
            raise ValueError(f"BENCH_ADAPTIVE_MEASURE_S must be a number of seconds, got {seconds!r}") from None
        if not 1.0 <= measure_s <= 3600.0:
            raise ValueError(f"BENCH_ADAPTIVE_MEASURE_S must be between 1 and 3600 seconds, got {seconds!r}")
    return order, measure_s


def _preemptions(origin: str, verify: Any) -> dict[str, float]:
    """The server's preemption counters (``/metrics``): all, and those for a waiting request."""
    import httpx

    names = {"llm_preemptions_total": "all", "llm_priority_preemptions_total": "for_waiting"}
    try:
        text = httpx.get(origin + "/metrics", verify=verify, timeout=10.0).text
    except httpx.HTTPError:
        return {}
    values = parse_prometheus(text, tuple(names))
    return {key: values[name] for name, key in names.items() if name in values}


def _model(url: str, verify: Any) -> str:
    import httpx

    try:
        data = httpx.get(url.rstrip("/") + "/models", verify=verify, timeout=10.0,
                         headers={"authorization": "Bearer x"}).json().get("data") or []
    except Exception as exc:  # the server answered nothing usable
        raise NotAvailable(f"could not list the reference server's models: {exc}") from exc
    if not data:
        raise NotAvailable("the reference server lists no model")
    return str(data[0]["id"])


def reference_of(variant: str, ttft: dict[str, Any]) -> str:
    """The idle variant ``variant`` is compared with: its own server's when measured, else the
    fcfs server's (an idle server schedules the same under either policy)."""
    prefix = split_variant(variant)[0]
    return f"{prefix}idle" if f"{prefix}idle" in ttft else "idle"


def summarise(scenario: Any, records: dict[str, list[RequestRecord]], bins: dict[str, list[float]],
              states: dict[str, Any], warm_s: float, measure_s: float,
              preemptions: dict[str, dict[str, float]] | None = None) -> ScenarioResult:
    preemptions = preemptions or {}
    ttft = {v: [r.ttft_ms if r.ok else None for r in recs] for v, recs in records.items()}
    throughput = {v: (percentile(b, 50) if b else 0.0) for v, b in bins.items() if split_variant(v)[1] != "idle"}
    fixed = {v: t for v, t in throughput.items() if v.startswith("fixed-")}
    best = max(fixed, key=lambda v: fixed[v]) if fixed else None
    series: dict[str, Any] = {"variants": {}, "best_fixed": best, "adaptive_state": states.get("adaptive", {}),
                              "adaptive_states": states}
    notes = [f"reference server, profile {PROFILE} (16 sequences at a time, then it queues), no rate-limit "
             f"headers; batch: {BATCH_WORKERS} closed-loop calls of {BATCH_MAX_TOKENS} tokens, priority='low'; "
             f"interactive: streams of {INTERACTIVE_MAX_TOKENS} tokens, Poisson {INTERACTIVE_RATE:g}/s, their own "
             f"client; {measure_s:g} s measured per variant after {warm_s:g} s of warm-up; variants without a "
             "prefix: --scheduling-policy fcfs (vLLM's default); prio-: priority with preemption for a waiting "
             "request (vLLM V0; the batch also sends priority_field=True); v1-: priority without it (vLLM V1)"]
    for v, values in ttft.items():
        ok = [t for t in values if t is not None]
        entry: dict[str, Any] = {"interactive_calls": len(values), "interactive_failed": len(values) - len(ok),
                                 "ttft_p50_ms": percentile(ok, 50) if ok else None,
                                 "ttft_p99_ms": percentile(ok, 99) if ok else None}
        line = (f"{v}: interactive TTFT p50 {_ms(entry['ttft_p50_ms'])}, p99 {_ms(entry['ttft_p99_ms'])} "
                f"({len(ok)} of {len(values)} answered)")
        ref = reference_of(v, ttft)
        idle = [t for t in ttft.get(ref, []) if t is not None]
        if split_variant(v)[1] != "idle" and idle and ok:
            ratio = percentile(ok, 99) / percentile(idle, 99)
            interval = bootstrap_ratio(values, ttft[ref], "p99", paired=False, seed=f"adaptive-ttft-{v}")
            entry.update(ttft_p99_vs_idle=ratio, ttft_p99_vs_idle_interval=interval, idle_reference=ref)
            line += f", p99 {ratio:.2f}x {ref} {_interval(interval)}"
        if v in throughput:
            entry["batch_tokens_per_s"] = throughput[v]
            line += f"; batch {throughput[v]:.0f} tokens/s (median of {BIN_S:g} s bins)"
            if best is not None and fixed[best] > 0:
                share = throughput[v] / fixed[best]
                interval = bootstrap_ratio(bins[v], bins[best], "p50", paired=False, seed=f"adaptive-tput-{v}")
                entry.update(batch_vs_best_fixed=share, batch_vs_best_fixed_interval=interval)
                line += f", {share:.0%} of {best} {_interval(interval)}"
        if preemptions.get(v):
            entry["server_preemptions"] = preemptions[v]
            line += (f"; server preemptions {preemptions[v].get('all', 0):.0f} "
                     f"({preemptions[v].get('for_waiting', 0):.0f} for a waiting request)")
        series["variants"][v] = entry
        notes.append(line)
    for v, state in states.items():
        notes.append(f"{v} limit at the end: {state.get('limit')} (cuts {state.get('cuts')}, "
                     f"samples {state.get('samples')}, calls that waited {state.get('calls_waited')}; "
                     f"{state.get('reason')})")
    rows = [Row("adaptive concurrency (interactive TTFT p99): batch unlimited -> adaptive", "unlimited", "adaptive",
                metric="ttft_ms", statistic="p99", technique="adaptive concurrency"),
            Row("adaptive concurrency (interactive TTFT p99): idle server -> adaptive", "idle", "adaptive",
                metric="ttft_ms", statistic="p99", technique="adaptive concurrency against an idle server")]
    if best is not None:
        rows.append(Row(f"adaptive concurrency (interactive TTFT p99): best fixed ({best}) -> adaptive", best,
                        "adaptive", metric="ttft_ms", statistic="p99",
                        technique="adaptive concurrency against the best fixed cap"))
    if "prio-unlimited" in records:
        rows.append(Row("server priority scheduling + priority='low' (interactive TTFT p99): fcfs unlimited -> "
                        "priority unlimited", "unlimited", "prio-unlimited", metric="ttft_ms", statistic="p99",
                        technique="priority='low' on a priority-scheduling server"))
    if "prio-adaptive" in records:
        ref = reference_of("prio-adaptive", ttft)
        rows.append(Row(f"server priority scheduling + adaptive (interactive TTFT p99): {ref} -> prio-adaptive",
                        ref, "prio-adaptive", metric="ttft_ms", statistic="p99",
                        technique="priority='low' and adaptive concurrency against an idle server"))
    arms = {v: batch_arm(v) for v in records}
    return ScenarioResult.of(scenario, records, rows=rows, notes=notes, series={"adaptive": series}, arms=arms)


def batch_arm(variant: str) -> Arm:
    """The options of a variant's batch client (what a user sets to get it; the interactive
    calls' client is llmclient's defaults): the arm its rows' effort is derived from."""
    prefix, kind = split_variant(variant)
    options: dict[str, Any] = {} if kind == "idle" else {"priority": "low"}
    if prefix and kind != "idle":
        options["priority_field"] = True
    if kind == "adaptive":
        options["concurrency"] = "adaptive"
    elif kind.startswith("fixed-"):
        options["concurrency"] = f"AdaptiveConfig(initial={kind[6:]}, minimum={kind[6:]}, maximum={kind[6:]})"
    return Arm("llmclient", options)


def _ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0f} ms"


SCENARIOS = (AdaptiveConcurrency(),)
