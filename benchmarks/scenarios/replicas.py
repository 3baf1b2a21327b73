"""Several replicas of one model behind one client: how the choice of replica changes TTFT.

Four reference-server replicas (each its own process, engine and prefix cache; the suite's
profile) serve multi-turn chat sessions: a few long system prompts shared by many sessions
(Zipf), then each session's own context (a long first message: a document) and its history
growing turn by turn, the turns of a session spread over the run. Open-loop Poisson arrivals at ~50% and ~80% of the fleet's knee, measured first as the
throughput of a closed loop at 8 calls per replica under round-robin (no affinity). At each rate
the same workload goes through llmclient's three policies (``Replicas(urls, policy=...)``):

* ``round_robin``: what a plain load balancer in front of the replicas does;
* ``least_loaded``: the fewest calls in flight;
* ``prefix``: prefix affinity (consistent hashing with bounded loads over the prompt's leading
  blocks, then the replica holding the longest part of the prompt).

Each policy's run tags its system prompts (a marker at their very start) so that no run finds
the caches warmed by another. Reported per run: TTFT and e2e p50/p99 (rows, with bootstrap
intervals), the prefix-cache hit rate read from each replica's ``/metrics`` (tokens served from
cache / prompt tokens, the counters' change over the run) against the ideal rate of one replica
with an unbounded cache (computed from the workload: the longest prefix each prompt shares with
an earlier one, in 64-character blocks), and the load spread (calls per replica).

Then, at 50% of the knee: one replica 5x slower (round-robin and prefix: the slow replica's
share of the calls early in the run and later), and one replica killed with SIGKILL halfway
through a prefix run (failed calls: those in flight on it, those that started after).
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import random
import re
import threading
import time
from collections import Counter
from typing import Any

from ..harness._scenario import Context, NotAvailable, RequestRecord, Row, ScenarioResult
from ..harness.load import (
    poisson_arrivals,
    readable_text,
    run_closed_loop,
    run_open_loop,
    zipf_indices,
)
from ..harness.records import ChatRequest
from ..harness.serverproc import ServerError, ServerProcess, start_replicas

ORDER = 85

REPLICAS = 4
POLICIES = ("round_robin", "least_loaded", "prefix")
SYSTEM_PROMPTS = 4           # distinct long system prompts, drawn Zipf (s = 1.1)
SYSTEM_WORDS = 1200          # ~1.4k tokens each, shared by many sessions
DOC_WORDS = 1500             # a session's own context (a document, a codebase excerpt): ~1.7k tokens
USER_WORDS, ASSISTANT_WORDS = 40, 80
MAX_TURNS = 6
TURN_GAP = 12                # requests between two turns of a session (~0.5-1 s at these rates)
NEW_SESSION = 0.3            # chance that a new session starts while others are ready
MAX_TOKENS = 24
LOADS = (0.5, 0.8)           # fractions of the fleet's knee
SLOW = 5                     # the slow replica's engine time, x
IDEAL_BLOCK = 64             # characters per block for the ideal hit rate


def sessions_workload(n: int, rng: random.Random, systems: list[str]) -> list[list[dict[str, str]]]:
    """``n`` requests (message lists) from multi-turn sessions. A session's next turn comes at
    least ``TURN_GAP`` requests after its previous one (a person reads the answer first), from a
    random session that is ready; when none is, a new session starts. Pure given ``rng``."""
    sessions: list[dict[str, Any]] = []
    out: list[list[dict[str, str]]] = []
    system_of = zipf_indices(n, len(systems), 1.1, rng)
    while len(out) < n:
        ready = [s for s in sessions if s["ready_at"] <= len(out)]
        if not ready or rng.random() < NEW_SESSION:
            session: dict[str, Any] = {"left": rng.randint(1, MAX_TURNS), "ready_at": 0,
                                       "history": [{"role": "system", "content": systems[system_of[len(out)]]}]}
            sessions.append(session)
            session["history"].append({"role": "user", "content": readable_text(DOC_WORDS + USER_WORDS, rng)})
        else:
            session = rng.choice(ready)
            session["history"].append({"role": "assistant", "content": readable_text(ASSISTANT_WORDS, rng)})
            session["history"].append({"role": "user", "content": readable_text(USER_WORDS, rng)})
        out.append([dict(m) for m in session["history"]])
        session["left"] -= 1
        session["ready_at"] = len(out) + TURN_GAP
        if session["left"] == 0:
            sessions.remove(session)
    return out


def ideal_hit_rate(prompts: list[list[dict[str, str]]]) -> float:
    """The prefix-cache hit rate of one replica with an unbounded cache: per prompt, the
    longest prefix (whole ``IDEAL_BLOCK``-character blocks) it shares with an earlier prompt."""
    seen: set[bytes] = set()
    hit = total = 0
    for messages in prompts:
        text = "".join(f"\x1e{m['role']}\x1f{m['content']}" for m in messages).encode()
        digest = b""
        matching = True
        for start in range(0, len(text) - IDEAL_BLOCK + 1, IDEAL_BLOCK):
            digest = hashlib.blake2b(digest + text[start:start + IDEAL_BLOCK], digest_size=8).digest()
            total += 1
            if matching and digest in seen:
                hit += 1
            else:
                matching = False
            seen.add(digest)
    return hit / total if total else 0.0


_COUNTER = re.compile(r"^(llm_prefix_cache_(?:hits|queries)_total)(?:\{[^}]*\})? ([0-9.eE+]+)$", re.M)


def prefix_counters(server: ServerProcess) -> tuple[float, float]:
    """(hits, queries) of a replica's prefix cache, in prompt tokens (its ``/metrics``)."""
    import httpx

    text = httpx.get(server.origin + "/metrics", verify=server.ca_path or True, timeout=10).text
    values = {name: float(value) for name, value in _COUNTER.findall(text)}
    return values.get("llm_prefix_cache_hits_total", 0.0), values.get("llm_prefix_cache_queries_total", 0.0)


class ReplicaRouting:
    name = "replicas"
    description = (f"{REPLICAS} replicas, multi-turn sessions over shared system prompts (Zipf), "
                   "open loop at 50% and 80% of the fleet's knee: round-robin vs least-loaded "
                   "vs llmclient's prefix affinity")
    requires = ("llmclient", "spawn_server", "reference_server")

    def run(self, ctx: Context) -> ScenarioResult:
        assert ctx.spawn_server is not None
        rng = random.Random(ctx.seed + 85)
        profile = ctx.server.profile if ctx.server else "h100-8b"
        n = 32 if ctx.quick else 400
        calib_c = 8 * REPLICAS
        calib_n = calib_c * (2 if ctx.quick else 6)
        try:
            servers = start_replicas(REPLICAS, profile, spawn=ctx.spawn_server,
                                     extra_args=("--cold-start-s", "0"))
        except (ServerError, OSError) as exc:
            raise NotAvailable(f"could not start {REPLICAS} reference-server replicas: {exc}") from exc
        records: dict[str, list[RequestRecord]] = {}
        series: dict[str, Any] = {"replicas": REPLICAS, "profile": profile, "runs": {}}
        notes: list[str] = []
        try:
            with contextlib.ExitStack() as stack:
                urls = [stack.enter_context(ctx.routed(server)) for server in servers]
                sub = ctx.derive(verify=servers[0].ca_path or ctx.verify)
                systems = [readable_text(SYSTEM_WORDS, random.Random(ctx.seed * 1000 + k))
                           for k in range(SYSTEM_PROMPTS)]

                def driver(policy: str, variant: str, fleet: list[str] = urls) -> Any:
                    llmclient = __import__("llmclient")
                    return sub.driver("llmclient", variant=variant, client_options={
                        "base_url": llmclient.Replicas(fleet, policy=policy), "max_retries": 2})

                def requests(tag: str, prompts: list[list[dict[str, str]]]) -> list[ChatRequest]:
                    out = []
                    for messages in prompts:
                        tagged = [dict(m) for m in messages]
                        tagged[0]["content"] = f"[{tag}] " + tagged[0]["content"]
                        out.append(ChatRequest(messages=tagged, max_tokens=MAX_TOKENS, stream=True))
                    return out

                # The knee: what the fleet completes under round-robin at 8 calls per replica.
                ctx.progress(f"  replicas: knee, {calib_n} calls at concurrency {calib_c} (round-robin)")
                calib = requests("calibrate", sessions_workload(calib_n, rng, systems))
                t0 = time.perf_counter()
                done = run_closed_loop(sub, driver("round_robin", "calibrate"), calib, calib_c)
                knee = sum(r.ok for r in done) / (time.perf_counter() - t0)
                if knee <= 0:
                    raise NotAvailable("the calibration run completed no call")
                series["knee_rps"] = round(knee, 2)
                prompts = sessions_workload(n, rng, systems)
                ideal = ideal_hit_rate(prompts)
                series["ideal_hit_rate"] = round(ideal, 4)
                for load in LOADS:
                    rate = knee * load
                    arrivals = poisson_arrivals(rate, n, random.Random(ctx.seed + int(load * 100)))
                    order = POLICIES if load == LOADS[0] else tuple(reversed(POLICIES))
                    for policy in order:
                        variant = f"{policy}@{round(load * 100)}%"
                        ctx.progress(f"  replicas: {variant}, {n} calls at {rate:.1f} req/s")
                        before = [prefix_counters(s) for s in servers]
                        out = run_open_loop(sub, driver(policy, variant), requests(variant, prompts), arrivals)
                        after = [prefix_counters(s) for s in servers]
                        for record in out:
                            record.variant = variant
                        records[variant] = out
                        series["runs"][variant] = _run_summary(out, before, after, urls, ideal, rate)

                # One replica 5x slower (every request takes 5x its engine time), then one killed
                # with SIGKILL halfway through: at 50% of the knee.
                rate = knee * LOADS[0]
                arrivals = poisson_arrivals(rate, n, random.Random(ctx.seed + 7))
                slow = start_replicas(1, profile, spawn=ctx.spawn_server, cert_from=servers[0],
                                      extra_args=("--cold-start-s", "0", "--faults", f"straggler={SLOW}"))[0]
                servers.append(slow)
                fleet = [*urls[:REPLICAS - 1], stack.enter_context(ctx.routed(slow))]
                for policy in ("round_robin", "prefix"):
                    variant = f"{policy}+slow"
                    ctx.progress(f"  replicas: {variant}, {n} calls at {rate:.1f} req/s, one replica {SLOW}x slower")
                    out = run_open_loop(sub, driver(policy, variant, fleet), requests(variant, prompts), arrivals)
                    records[variant] = out
                    series["runs"][variant] = _slow_summary(out, fleet[-1], rate)
                variant = "prefix+kill"
                victim = servers[REPLICAS - 1]
                kill_at = arrivals[len(arrivals) // 2]
                ctx.progress(f"  replicas: {variant}, {n} calls at {rate:.1f} req/s, one replica "
                             f"killed (SIGKILL) at {kill_at:.1f} s")
                timer = threading.Timer(kill_at, victim.process.kill)
                timer.start()
                try:
                    out = run_open_loop(sub, driver("prefix", variant), requests(variant, prompts), arrivals)
                finally:
                    timer.cancel()
                records[variant] = out
                series["runs"][variant] = _kill_summary(out, urls[REPLICAS - 1], kill_at)
        finally:
            for server in servers:
                server.stop()
        rows = []
        for load in LOADS:
            pct = f"{round(load * 100)}%"
            rows += [
                Row(f"replicas {pct} of knee (TTFT): round-robin -> prefix affinity", f"round_robin@{pct}",
                    f"prefix@{pct}", metric="ttft_ms",
                    technique="prefix-affinity routing" if load == LOADS[0] else None),
                Row(f"replicas {pct} of knee (TTFT p99): least-loaded -> prefix affinity",
                    f"least_loaded@{pct}", f"prefix@{pct}", metric="ttft_ms", statistic="p99"),
                Row(f"replicas {pct} of knee (e2e): round-robin -> prefix affinity", f"round_robin@{pct}",
                    f"prefix@{pct}"),
            ]
        for variant, run in series["runs"].items():
            if "slow_share_early" in run:
                notes.append(f"{variant}: the {SLOW}x slower replica served {run['slow_share_early']:.0%} of "
                             f"the calls of the run's first quarter and {run['slow_share_late']:.0%} of its "
                             f"second half (a fair share is {1 / REPLICAS:.0%}); TTFT p50 "
                             f"{run['ttft_p50_ms']:.0f} ms, {run['failed']} failed")
                continue
            if "failed_after_kill" in run:
                notes.append(f"{variant}: {run['failed']} failed of {run['n']} ({run['failed_in_flight']} were "
                             f"in flight on the killed replica, {run['failed_after_kill']} started after the "
                             f"kill); {run['served_by_victim_after']} served by it after the kill")
                continue
            notes.append(f"{variant}: prefix-cache hit rate {run['hit_rate']:.0%} "
                         f"({run['hit_vs_ideal']:.0%} of the ideal {ideal:.0%}), calls per replica "
                         f"{run['per_replica']}, {run['failed']} failed")
        notes.insert(0, f"{REPLICAS} replicas ({profile}); knee {knee:.1f} req/s (closed loop, "
                        f"round-robin, {calib_c} in flight); {n} calls per policy and load, the same "
                        "sessions for every policy, each run's system prompts tagged (cold caches)")
        return ScenarioResult.of(self, records, rows=rows, notes=notes, series=series)


def _run_summary(out: list[RequestRecord], before: list[tuple[float, float]],
                 after: list[tuple[float, float]], urls: list[str], ideal: float, rate: float) -> dict[str, Any]:
    hits = sum(a[0] - b[0] for a, b in zip(after, before, strict=True))
    queries = sum(a[1] - b[1] for a, b in zip(after, before, strict=True))
    per_replica_hits = [round((a[0] - b[0]) / (a[1] - b[1]), 3) if a[1] > b[1] else None
                        for a, b in zip(after, before, strict=True)]
    served = Counter(r.extra.get("replica") for r in out if r.ok)
    counts = [served.get(url, 0) for url in urls]
    mean = sum(counts) / len(counts) if counts else 0.0
    spread = math.sqrt(sum((c - mean) ** 2 for c in counts) / len(counts)) / mean if mean else None
    hit_rate = hits / queries if queries else 0.0
    return {"rate_rps": round(rate, 2), "hit_rate": round(hit_rate, 4),
            "hit_vs_ideal": round(hit_rate / ideal, 3) if ideal else None,
            "hit_rate_per_replica": per_replica_hits, "per_replica": counts,
            "load_cv": round(spread, 3) if spread is not None else None,
            "failed": sum(not r.ok for r in out)}


def _slow_summary(out: list[RequestRecord], slow_url: str, rate: float) -> dict[str, Any]:
    """The slow replica's share of the calls started in the run's first quarter and in its
    second half, and the run's TTFT p50."""
    ok = sorted((r for r in out if r.ok), key=lambda r: r.start_s)
    quarter, half = ok[:max(1, len(ok) // 4)], ok[len(ok) // 2:]

    def share(rs: list[RequestRecord]) -> float:
        return sum(r.extra.get("replica") == slow_url for r in rs) / len(rs) if rs else 0.0

    ttfts = sorted(r.ttft_ms for r in ok if r.ttft_ms is not None)
    return {"rate_rps": round(rate, 2), "slow_share_early": round(share(quarter), 3),
            "slow_share_late": round(share(half), 3),
            "ttft_p50_ms": ttfts[len(ttfts) // 2] if ttfts else float("nan"),
            "failed": sum(not r.ok for r in out)}


def _kill_summary(out: list[RequestRecord], victim_url: str, kill_at: float) -> dict[str, Any]:
    """Failures of a run whose replica was killed ``kill_at`` seconds after its first arrival."""
    start = min(r.start_s for r in out) if out else 0.0
    after = [r for r in out if r.start_s - start >= kill_at]
    return {"n": len(out), "failed": sum(not r.ok for r in out),
            "failed_in_flight": sum(not r.ok and r.start_s - start < kill_at for r in out),
            "failed_after_kill": sum(not r.ok for r in after),
            "served_by_victim_after": sum(r.ok and r.extra.get("replica") == victim_url for r in after)}


SCENARIOS = (ReplicaRouting(),)
