"""Several replicas of one model behind one client: how the choice of replica changes TTFT.

What it models: a fleet of four GPUs serving one model (each replica its own reference-server
process on this machine, its own simulated GPU, engine and prefix cache; the suite's profile,
``h100-8b`` by default, unchanged) and one app sending multi-turn chat sessions: a few long
system prompts shared by many sessions (Zipf), then each session's own context (a long first
message: a document) and its history growing turn by turn, the turns of a session spread over
the run. Two workloads (``WORKLOADS``): ``chat``, documents of ~1.7k tokens (prompts ~3.2k
tokens), and ``long``, documents of ~5.1k tokens (prompts ~6.4k tokens, as RAG or a code
assistant sends; within the profile's 8k context).

The knee, per workload: the fleet's throughput once its GPUs are saturated, under round-robin:
closed loops at 8, 16, 32, ... calls in flight per replica until doubling them gains less than
10%. Open-loop Poisson arrivals then run at 50% and 80% of it. (A closed loop at 8 calls per
replica, the earlier knee, kept the GPUs' steps about a fifth full: the simulated GPU runs
memory-bound decode steps back to back, so its busy time is near 100% long before its token
budget is spent. Each run records both, and the CPU used, to show that the modelled GPUs, not
this machine's cores, are what saturates.) At each rate the same workload goes through
llmclient's three policies (``Replicas(urls, policy=...)``):

* ``round_robin``: what a plain load balancer in front of the replicas does;
* ``least_loaded``: the fewest calls in flight;
* ``prefix``: prefix affinity (consistent hashing with bounded loads over the prompt's leading
  blocks, then the replica holding the longest part of the prompt).

Each policy's run tags its system prompts (a marker at their very start) so that no run finds
the caches warmed by another. Reported per run: TTFT and e2e p50/p99 (rows, with bootstrap
intervals), the prefix-cache hit rate read from each replica's ``/metrics`` (tokens served from
cache / prompt tokens, the counters' change over the run) against the ideal rate of one replica
with an unbounded cache (computed from the workload: the longest prefix each prompt shares with
an earlier one, in 64-character blocks), the load spread (calls per replica), and the usage:
each simulated GPU's busy share and how full its steps were, the CPU of the replicas, of the
client and of the whole machine. A note splits TTFT p50 between the turns that open a session
(a new document: a miss for any router) and the follow-up turns, where routing decides
(``turn_split``); a p50 over all calls sits near the boundary of those two groups, since about
a third of the calls open a session.

Then, at 50% of the ``chat`` knee: one replica 5x slower (round-robin and prefix: the slow
replica's share of the calls early in the run and later), and one replica killed with SIGKILL
halfway through a prefix run (failed calls: those in flight on it, those that started after).

Your own replicas: ``python -m benchmarks --full --scenarios replicas --base-url
URL1,URL2,... --model M`` runs the same comparison on them (vLLM or any OpenAI-compatible
server of one model, whose context must hold the ~6.4k-token ``long`` prompts), without the
slow and killed replica (not ours to break); hit rates come from vLLM's
``vllm:prefix_cache_{hits,queries}_total`` where ``/metrics`` has them.

On the Messages API (``--api anthropic``) the same fleet serves ``POST /v1/messages`` through
``llmclient.AsyncAnthropic(base_url=Replicas(roots, policy=...))`` (the system prompt goes in
``system``, which prefix affinity hashes first, as Anthropic's prompt cache orders a prompt).
There each answer's usage says what the replica's prefix cache served
(``cache_read_input_tokens``, out of ``input_tokens + cache_creation_input_tokens +
cache_read_input_tokens``), so each run reports that hit rate as the client saw it beside the one
read from ``/metrics``. No official-client arm: the official clients take one base URL, so
round-robin (what a load balancer in front of them does) is the baseline on either API.

Subsets: ``BENCH_REPLICAS_LOADS=0.8``, ``BENCH_REPLICAS_WORKLOADS=long``,
``BENCH_REPLICAS_FAULTS=0`` (without the slow and killed replica). The quick pass runs the
``chat`` workload only at 50% of its knee (from 8 and 16 calls per replica), 32 calls per run,
judged on the TTFT p50 of follow-up turns and of first turns apart; no slow or killed replica
(their counts need the full pass's 400 calls).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import math
import os
import random
import threading
import time
from collections import Counter
from typing import Any
from urllib.parse import urlsplit

from ..harness._scenario import Arm, Context, NotAvailable, Rate, RequestRecord, Row, ScenarioResult
from ..harness.drivers import anthropic_root
from ..harness.load import (
    poisson_arrivals,
    readable_text,
    run_closed_loop,
    run_open_loop,
    zipf_indices,
)
from ..harness.records import ChatRequest
from ..harness.sampler import parse_prometheus
from ..harness.serverproc import ServerError, ServerProcess, start_replicas
from ..harness.stats import bootstrap_ratio, percentile

ORDER = 85

REPLICAS = 4
POLICIES = ("round_robin", "least_loaded", "prefix")
SYSTEM_PROMPTS = 4           # distinct long system prompts, drawn Zipf (s = 1.1)
SYSTEM_WORDS = 1200          # ~1.4k tokens each, shared by many sessions
DOC_WORDS = 1500             # a session's own context (a document, a codebase excerpt): ~1.7k tokens
LONG_DOC_WORDS = 4500        # the same with long documents (RAG, a code assistant): ~5.1k tokens
# The workloads: the words of a session's own document. With long documents a whole prompt
# (system prompt, document, six turns) stays within the 8k context of the h100-8b profile.
WORKLOADS = {"chat": DOC_WORDS, "long": LONG_DOC_WORDS}
USER_WORDS, ASSISTANT_WORDS = 40, 80
MAX_TURNS = 6
TURN_GAP = 12                # requests between two turns of a session (~0.5-1 s at these rates)
NEW_SESSION = 0.3            # chance that a new session starts while others are ready
MAX_TOKENS = 24
LOADS = (0.5, 0.8)           # fractions of the fleet's knee
KNEE_LADDER = (8, 16, 32, 64, 128)  # calls in flight per replica, doubled until throughput levels off
QUICK_LADDER = (8, 16)
KNEE_ROUNDS = 4              # calls per client slot at each step of the ladder
# The quick pass: at 50% of the knee, 48 calls a run (about 22 follow-up turns and 26 first
# turns a side: 32 gave 8-13 follow-ups, too few to decide); no slow or killed replica (the
# slow replica's share of 80 calls' second half did not separate round-robin from prefix
# affinity: the router shifts away over seconds, a count needs hundreds of calls).
QUICK_CALLS = 48
PLATEAU = 0.10               # doubling the calls in flight gained less than this: saturated
SLOW = 5                     # the slow replica's engine time, x
IDEAL_BLOCK = 64             # characters per block for the ideal hit rate


def saturated(throughputs: list[float]) -> bool:
    """Pure: whether the last step of the ladder (each step twice the calls in flight of the one
    before) gained less than ``PLATEAU`` over the step before: the GPUs are saturated, more
    calls in flight only queue."""
    return len(throughputs) >= 2 and throughputs[-1] < throughputs[-2] * (1 + PLATEAU)


def subset(loads: str | None, faults: str | None, workloads: str | None = None,
           quick: bool = False) -> tuple[tuple[float, ...], bool, tuple[str, ...]]:
    """Pure: what a run covers. ``BENCH_REPLICAS_LOADS``: comma-separated fractions of the knee
    among ``LOADS`` (unset or empty: all); ``BENCH_REPLICAS_FAULTS=0``: without the slow-replica
    and killed-replica runs; ``BENCH_REPLICAS_WORKLOADS``: names among ``WORKLOADS`` (unset:
    all, or only the first in a quick run). Anything else raises ``ValueError`` naming it."""
    chosen: list[float] = []
    for item in (loads or "").split(","):
        if not item.strip():
            continue
        try:
            value = float(item)
        except ValueError:
            raise ValueError(f"BENCH_REPLICAS_LOADS: {item.strip()!r} is not a number") from None
        if value not in LOADS:
            raise ValueError(f"BENCH_REPLICAS_LOADS: {value:g} is not one of {', '.join(map(str, LOADS))}")
        chosen.append(value)
    flag = (faults or "1").strip()
    if flag not in ("0", "1"):
        raise ValueError(f"BENCH_REPLICAS_FAULTS must be 0 or 1, got {flag!r}")
    names = [w.strip() for w in (workloads or "").split(",") if w.strip()]
    for name in names:
        if name not in WORKLOADS:
            raise ValueError(f"BENCH_REPLICAS_WORKLOADS: unknown workload {name!r} (one of {', '.join(WORKLOADS)})")
    default = tuple(WORKLOADS)[:1] if quick else tuple(WORKLOADS)
    return (tuple(sorted(set(chosen))) or LOADS, flag == "1",
            tuple(w for w in WORKLOADS if w in names) or default)


def sessions_workload(n: int, rng: random.Random, systems: list[str],
                      doc_words: int = DOC_WORDS) -> list[list[dict[str, str]]]:
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
            session["history"].append({"role": "user", "content": readable_text(doc_words + USER_WORDS, rng)})
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


# Prefix-cache counters in prompt tokens: the reference server's, and vLLM's (V1: queried and
# hit tokens, a sample per engine and model, summed).
_HITS = ("llm_prefix_cache_hits_total", "vllm:prefix_cache_hits_total")
_QUERIES = ("llm_prefix_cache_queries_total", "vllm:prefix_cache_queries_total")
_SIMULATED = ("llm_busy_seconds_total", "llm_steps_total", "llm_generation_tokens_total")


def counters_of(text: str) -> dict[str, float]:
    """Pure: the counters the scenario reads from a ``/metrics`` text (each summed over its
    label sets); ``known`` is 1.0 when the server reports prefix-cache counters (the reference
    server or vLLM), else 0.0."""
    values = parse_prometheus(text, _HITS + _QUERIES + _SIMULATED)
    hits = next((values[n] for n in _HITS if n in values), None)
    queries = next((values[n] for n in _QUERIES if n in values), None)
    return {"hits": hits or 0.0, "queries": queries or 0.0,
            "known": 1.0 if hits is not None and queries is not None else 0.0,
            "busy_s": values.get("llm_busy_seconds_total", 0.0),
            "steps": values.get("llm_steps_total", 0.0),
            "tokens": values.get("llm_generation_tokens_total", 0.0)}


def first_turns(prompts: list[list[dict[str, str]]]) -> list[bool]:
    """Pure: which prompts open their session (a system prompt and the first user message,
    its document): no router can find those in a prefix cache beyond the system prompt."""
    return [len(messages) <= 2 for messages in prompts]


def turn_split(baseline: list[RequestRecord], candidate: list[RequestRecord],
               prompts: list[list[dict[str, str]]], seed: str = "") -> dict[str, Any] | None:
    """TTFT p50 of first turns and of follow-up turns apart, baseline against candidate, with
    a bootstrap interval on the ratio (paired: entry i of both runs is the same prompt at the
    same arrival time). Where routing can matter is the follow-ups; a p50 over all calls
    sits near the boundary between the two groups when a third or more of the calls open a
    session. None when a run's records do not line up with its prompts (a call dropped by the
    harness). Pure."""
    if len(baseline) != len(prompts) or len(candidate) != len(prompts):
        return None
    first = first_turns(prompts)
    out: dict[str, Any] = {}
    for group, want in (("first", True), ("follow_up", False)):
        b = [r.ttft_ms if r.ok else None for r, f in zip(baseline, first, strict=True) if f is want]
        c = [r.ttft_ms if r.ok else None for r, f in zip(candidate, first, strict=True) if f is want]
        b_ok = [v for v in b if v is not None]
        c_ok = [v for v in c if v is not None]
        if not b_ok or not c_ok:
            out[group] = {"n": len(b)}
            continue
        b50, c50 = percentile(b_ok, 50), percentile(c_ok, 50)
        ci = bootstrap_ratio(b, c, "p50", seed=f"turns:{seed}:{group}")
        out[group] = {"n": len(b), "baseline_p50_ms": round(b50, 1), "candidate_p50_ms": round(c50, 1),
                      "ratio": round(b50 / c50, 3) if c50 > 0 else None,
                      "ci": [round(ci[0], 3), round(ci[1], 3)] if ci else None}
    return out


def _turns_note(variant: str, turns: dict[str, Any]) -> str | None:
    parts = []
    for group, name in (("follow_up", "follow-up turns"), ("first", "first turns")):
        g = turns.get(group, {})
        if g.get("ratio") is None:
            continue
        ci = f" [{g['ci'][0]:.2f}-{g['ci'][1]:.2f}]" if g.get("ci") else ""
        parts.append(f"{name} (n={g['n']}) {g['baseline_p50_ms']:.0f} -> {g['candidate_p50_ms']:.0f} ms, "
                     f"{g['ratio']:.2f}x{ci}")
    if not parts:
        return None
    return f"{variant}: TTFT p50 round-robin -> prefix affinity, " + "; ".join(parts)


@dataclasses.dataclass
class Remote:
    """A replica the user runs (``--base-url URL1,URL2,...``): no process of ours, its
    ``/metrics`` (vLLM serves it on the API port) read where it answers."""

    base_url: str
    verify: str | bool = True
    process: Any = None

    @property
    def origin(self) -> str:
        parts = urlsplit(self.base_url)
        return f"{parts.scheme}://{parts.netloc}"

    @property
    def ca_path(self) -> str | None:
        return self.verify if isinstance(self.verify, str) else None


def engine_counters(server: ServerProcess | Remote) -> dict[str, float]:
    """A replica's counters from its ``/metrics``: prefix-cache ``hits`` and ``queries`` (prompt
    tokens; ``known`` 0.0 where the server reports none), the simulated GPU's ``busy_s`` (the
    modelled time of the steps it ran), ``steps``."""
    import httpx

    try:
        response = httpx.get(server.origin + "/metrics", verify=server.ca_path or True, timeout=10)
        text = response.text if response.status_code == 200 else ""
    except httpx.HTTPError:
        text = ""
    return counters_of(text)


def prefix_counters(server: ServerProcess | Remote) -> tuple[float, float]:
    """(hits, queries) of a replica's prefix cache, in prompt tokens (its ``/metrics``)."""
    c = engine_counters(server)
    return c["hits"], c["queries"]


def _proc_stat(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError, ValueError):
        return None


def _proc_cpu_s(pid: int) -> float | None:
    """CPU seconds (user + system) a process and its living children (the HTTP server's
    workers) have used so far; None off Linux or once it exited."""
    stats: dict[int, list[str]] = {}
    with contextlib.suppress(OSError):
        for name in os.listdir("/proc"):
            if name.isdigit() and (fields := _proc_stat(int(name))) is not None:
                stats[int(name)] = fields
    if pid not in stats:
        return None
    tree, frontier = {pid}, [pid]
    while frontier:
        parent = frontier.pop()
        for child, fields in stats.items():
            if child not in tree and fields[1] == str(parent):
                tree.add(child)
                frontier.append(child)
    return sum(int(stats[p][11]) + int(stats[p][12]) for p in tree) / os.sysconf("SC_CLK_TCK")


def _machine_busy_s() -> tuple[float, float] | None:
    """(busy, total) CPU seconds of the whole machine, over every core (``/proc/stat``)."""
    try:
        with open("/proc/stat", encoding="ascii") as f:
            values = [int(v) for v in f.readline().split()[1:]]
        tick = os.sysconf("SC_CLK_TCK")
        idle = values[3] + (values[4] if len(values) > 4 else 0)
        return (sum(values) - idle) / tick, sum(values) / tick
    except (OSError, ValueError, IndexError):
        return None


def _cpu_of(server: ServerProcess | Remote) -> float | None:
    return _proc_cpu_s(server.process.pid) if server.process is not None else None


class Usage:
    """What a stretch of the run used: each replica's simulated-GPU busy time (the modelled
    fleet) and the CPU of the replicas' processes, of this (client + network emulator) process
    and of the whole machine (the VM the fleet is simulated on)."""

    def __init__(self, servers: list[ServerProcess] | list[Remote]) -> None:
        self.servers = servers
        self.t0 = time.perf_counter()
        self.engines = [engine_counters(s) for s in servers]
        self.cpu = [_cpu_of(s) for s in servers]
        self.client = time.process_time()
        self.machine = _machine_busy_s()

    def summary(self) -> dict[str, Any]:
        wall = time.perf_counter() - self.t0
        engines = [engine_counters(s) for s in self.servers]
        cpu = [_cpu_of(s) for s in self.servers]
        machine = _machine_busy_s()
        return usage_summary(wall, self.engines, engines, self.cpu, cpu, time.process_time() - self.client,
                             self.machine, machine, os.cpu_count() or 1)


def usage_summary(wall_s: float, engines_before: list[dict[str, float]], engines_after: list[dict[str, float]],
                  cpu_before: list[float | None], cpu_after: list[float | None], client_cpu_s: float,
                  machine_before: tuple[float, float] | None, machine_after: tuple[float, float] | None,
                  cores: int, step_tokens: int = 2048) -> dict[str, Any]:
    """Pure: fractions of ``wall_s``. ``gpu_busy``: per replica, the share of the time its
    simulated GPU ran steps; ``tokens_per_step``: tokens generated per step (about the decode batch);
    ``budget_use``: tokens computed (prompt tokens not served from cache, and generated ones) per
    step over the step's token budget ``step_tokens`` (how full the GPU's steps were); ``server_cpu``: per
    replica process, cores used; ``client_cpu``: cores this process used; ``machine_cpu``: the
    share of all ``cores`` the machine had busy (None where not known)."""
    wall = max(wall_s, 1e-9)

    def delta(key: str) -> list[float]:
        return [a[key] - b[key] for a, b in zip(engines_after, engines_before, strict=True)]

    busy, steps, tokens = delta("busy_s"), delta("steps"), delta("tokens")
    prefilled = [q - h for q, h in zip(delta("queries"), delta("hits"), strict=True)]
    server_cpu = [round((a - b) / wall, 3) if a is not None and b is not None else None
                  for a, b in zip(cpu_after, cpu_before, strict=True)]
    machine = None
    if machine_before and machine_after and machine_after[1] > machine_before[1]:
        machine = round((machine_after[0] - machine_before[0]) / (machine_after[1] - machine_before[1]), 3)
    return {"wall_s": round(wall_s, 2), "gpu_busy": [round(b / wall, 3) for b in busy],
            "gpu_busy_mean": round(sum(busy) / wall / len(busy), 3) if busy else None,
            "tokens_per_step": [round(t / s, 2) if s else None for t, s in zip(tokens, steps, strict=True)],
            "budget_use": [round((p + t) / (s * step_tokens), 3) if s else None
                           for p, t, s in zip(prefilled, tokens, steps, strict=True)],
            "server_cpu": server_cpu, "client_cpu": round(client_cpu_s / wall, 3),
            "machine_cpu": machine, "cores": cores}


def usage_hit_rate(records: list[RequestRecord]) -> float | None:
    """Pure: the prompt-cache hit rate the answers' usage reports (the Messages API's
    ``cache_read_input_tokens`` over the prompt's tokens, input + cache creation + cache read,
    over the answered calls that carry them); None when none does (Chat Completions here)."""
    read = total = 0
    for r in records:
        if not r.ok or "cache_read_input_tokens" not in r.extra:
            continue
        read += int(r.extra["cache_read_input_tokens"])
        total += sum(int(r.extra.get(k) or 0) for k in
                     ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"))
    return read / total if total else None


class ReplicaRouting:
    name = "replicas"
    apis = ("openai", "anthropic")
    description = (f"{REPLICAS} replicas, multi-turn sessions over shared system prompts (Zipf), "
                   "open loop at 50% and 80% of the fleet's knee: round-robin vs least-loaded "
                   "vs llmclient's prefix affinity")
    requires = ("llmclient",)  # and the embedded server (spawn_server) or --base-url URL1,URL2,...
    quick_s = {"openai": 24, "anthropic": 24}  # measured: 4 replicas, a 2-step knee ladder, 3 runs of 48 calls

    def run(self, ctx: Context) -> ScenarioResult:
        own = not ctx.replica_urls  # replicas this run starts, else the user's
        if own and ctx.spawn_server is None:
            raise NotAvailable("needs the embedded reference server (it starts the replicas) or your "
                               "replicas of one model: --base-url URL1,URL2,... (two or more)")
        rng = random.Random(ctx.seed + 85)
        profile = ctx.server.profile if ctx.server else "h100-8b"
        loads, faults, workloads = subset(os.environ.get("BENCH_REPLICAS_LOADS"),
                                          os.environ.get("BENCH_REPLICAS_FAULTS"),
                                          os.environ.get("BENCH_REPLICAS_WORKLOADS"), ctx.quick)
        if ctx.quick and not os.environ.get("BENCH_REPLICAS_LOADS"):
            loads = LOADS[:1]
        policies = POLICIES
        n = QUICK_CALLS if ctx.quick else 400
        if ctx.quick:
            faults = False
        servers: list[Any]
        if own:
            assert ctx.spawn_server is not None
            try:
                servers = start_replicas(REPLICAS, profile, spawn=ctx.spawn_server,
                                         extra_args=("--cold-start-s", "0"))
            except (ServerError, OSError) as exc:
                raise NotAvailable(f"could not start {REPLICAS} reference-server replicas: {exc}") from exc
        else:  # the user's fleet: no profile of ours, no faults we could inject into it
            servers = [Remote(url, ctx.verify) for url in ctx.replica_urls]
            profile, faults = f"yours: {ctx.model}", False
        fleet_n = len(servers)
        records: dict[str, list[RequestRecord]] = {}
        series: dict[str, Any] = {"replicas": fleet_n, "profile": profile, "runs": {}, "workloads": {}}
        try:
            with contextlib.ExitStack() as stack:
                # the face's URLs: the Messages API's roots (the official way to give anthropic's)
                face_url = anthropic_root if ctx.api == "anthropic" else str
                urls = [face_url(stack.enter_context(ctx.routed(server))) for server in servers]
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

                chat: tuple[float, list[list[dict[str, str]]]] | None = None
                for workload in workloads:
                    doc_words = WORKLOADS[workload]
                    suffix = variant_suffix(workload)
                    # The knee: the fleet's throughput once its GPUs are saturated, under round-robin.
                    ladder: list[tuple[int, float, dict[str, Any]]] = []
                    for per_replica in (QUICK_LADDER if ctx.quick else KNEE_LADDER):
                        c = per_replica * fleet_n
                        calib_n = c * (1 if ctx.quick else KNEE_ROUNDS)
                        ctx.progress(f"  replicas{suffix}: knee, {calib_n} calls at {per_replica} per replica "
                                     "(round-robin)")
                        calib = requests(f"calibrate{per_replica}{suffix}",
                                         sessions_workload(calib_n, rng, systems, doc_words))
                        usage = Usage(servers)
                        t0 = time.perf_counter()
                        done = run_closed_loop(sub, driver("round_robin", "calibrate"), calib, c)
                        rps = sum(r.ok for r in done) / (time.perf_counter() - t0)
                        ladder.append((per_replica, rps, usage.summary()))
                        ctx.progress(f"  replicas{suffix}: {rps:.1f} req/s at {per_replica} per replica; "
                                     f"{_usage_note(ladder[-1][2])}")
                        if saturated([x[1] for x in ladder]):
                            break
                    knee = max(x[1] for x in ladder)
                    if knee <= 0:
                        raise NotAvailable("the calibration run completed no call")
                    prompts = sessions_workload(n, rng, systems, doc_words)
                    ideal = ideal_hit_rate(prompts)
                    series["workloads"][workload] = {
                        "doc_words": doc_words, "knee_rps": round(knee, 2), "ideal_hit_rate": round(ideal, 4),
                        "knee_ladder": [{"per_replica": c, "rps": round(r, 2), "usage": u} for c, r, u in ladder]}
                    if chat is None:
                        chat = (knee, prompts)
                    for load in loads:
                        rate = knee * load
                        arrivals = poisson_arrivals(rate, n, random.Random(ctx.seed + int(load * 100)))
                        order = policies if load == LOADS[0] else tuple(reversed(policies))
                        for policy in order:
                            variant = f"{policy}@{round(load * 100)}%{suffix}"
                            ctx.progress(f"  replicas: {variant}, {n} calls at {rate:.1f} req/s")
                            usage = Usage(servers)
                            before = [(e["hits"], e["queries"]) for e in usage.engines]
                            out = run_open_loop(sub, driver(policy, variant), requests(variant, prompts), arrivals)
                            used = usage.summary()
                            after = [prefix_counters(s) for s in servers]
                            for record in out:
                                record.variant = variant
                            records[variant] = out
                            known = all(e["known"] for e in usage.engines)
                            series["runs"][variant] = {**_run_summary(out, before, after, urls, ideal, rate, known),
                                                       "workload": workload, "usage": used,
                                                       "usage_hit_rate": usage_hit_rate(out)}
                        pct = f"{round(load * 100)}%{suffix}"
                        series["runs"][f"prefix@{pct}"]["turns"] = turn_split(
                            records[f"round_robin@{pct}"], records[f"prefix@{pct}"], prompts, seed=pct)
                        for policy in policies:
                            records.update(by_turn(records, f"{policy}@{pct}", prompts))

                # One replica 5x slower (every request takes 5x its engine time), then one killed
                # with SIGKILL halfway through: at 50% of the first workload's knee.
                if faults and own and chat is not None:
                    knee, prompts = chat
                    rate = knee * LOADS[0]
                    arrivals = poisson_arrivals(rate, n, random.Random(ctx.seed + 7))
                    slow = start_replicas(1, profile, spawn=ctx.spawn_server, cert_from=servers[0],
                                          extra_args=("--cold-start-s", "0", "--faults", f"straggler={SLOW}"))[0]
                    servers.append(slow)
                    fleet = [*urls[:REPLICAS - 1], face_url(stack.enter_context(ctx.routed(slow)))]
                    for policy in ("round_robin", "prefix"):
                        variant = f"{policy}+slow"
                        ctx.progress(f"  replicas: {variant}, {n} calls at {rate:.1f} req/s, one replica "
                                     f"{SLOW}x slower")
                        out = run_open_loop(sub, driver(policy, variant, fleet), requests(variant, prompts), arrivals)
                        mark_late_on(out, fleet[-1])
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
            if own:
                for server in servers:
                    server.stop()
        rows = _rows(workloads, loads, quick=ctx.quick)
        if "round_robin+slow" in records and "prefix+slow" in records:
            rows.append(Rate(f"replicas, one {SLOW}x slower: its calls in the run's second half: "
                             "round-robin -> prefix affinity", "round_robin+slow", "prefix+slow",
                             event=f"calls the {SLOW}x slower replica served in the run's second half",
                             count=late_on_slow, higher_is_better=False,
                             technique=f"routing around a {SLOW}x slower replica",
                             context=f"a fair share is {1 / REPLICAS:.0%}"))
        arms = {name: policy_arm(name) for name in records}
        return ScenarioResult.of(self, records, rows=rows, notes=_notes(series, n),
                                 series=series, arms=arms)


def variant_suffix(workload: str) -> str:
    """What a workload adds to its variants' names: nothing for the first (``chat``)."""
    return "" if workload == next(iter(WORKLOADS)) else f"/{workload}"


def policy_arm(variant: str) -> Arm:
    """The arm of a run: ``Replicas(urls, policy=...)``, prefix affinity being the default."""
    policy = variant.split("@", 1)[0].split("+", 1)[0].split("/", 1)[0]
    return Arm("llmclient", {} if policy == "prefix" else {"policy": policy})


def by_turn(records: dict[str, list[RequestRecord]], variant: str,
            prompts: list[list[dict[str, str]]]) -> dict[str, list[RequestRecord]]:
    """Pure: a run's calls that open a session and its follow-up turns, as variants of their
    own (``<variant>/first``, ``<variant>/follow-up``; in prompt order, so that two runs of the
    same prompts pair up); nothing when the run's records do not line up with its prompts."""
    recs = records[variant]
    if len(recs) != len(prompts):
        return {}
    first = first_turns(prompts)
    return {f"{variant}/first": [r for r, f in zip(recs, first, strict=True) if f],
            f"{variant}/follow-up": [r for r, f in zip(recs, first, strict=True) if not f]}


def mark_late_on(records: list[RequestRecord], slow_url: str) -> None:
    """Marks each call of a slow-replica run: in the run's second half (by send order) or not,
    and whether the slow replica served it."""
    for i, r in enumerate(records):
        r.extra["late"] = i >= len(records) // 2
        r.extra["on_slow"] = r.extra.get("replica") == slow_url


def late_on_slow(record: RequestRecord) -> bool | None:
    """The slow-replica rate's count: a call of the run's second half that the slow replica
    served (None: an early call, or one that failed: no replica answered it)."""
    if not record.extra.get("late") or not record.ok:
        return None
    return bool(record.extra.get("on_slow"))


def _rows(workloads: tuple[str, ...], loads: tuple[float, ...], quick: bool = False) -> list[Row | Rate]:
    """Per workload and load: TTFT p50 of the follow-up turns (where routing decides) and of the
    turns that open a session apart, round-robin against prefix affinity; in the full pass
    also all calls' TTFT p50, TTFT p99 against least-loaded and e2e p50."""
    rows: list[Row | Rate] = []
    for workload in workloads:
        suffix = variant_suffix(workload)
        label = "" if not suffix else f", {workload} documents"
        for load in loads:
            pct = f"{round(load * 100)}%"
            where = f"{pct} of the knee{label}"
            rows += [
                Row(f"replicas {pct} of knee{label} (TTFT, follow-up turns): round-robin -> prefix affinity",
                    f"round_robin@{pct}{suffix}/follow-up", f"prefix@{pct}{suffix}/follow-up", metric="ttft_ms",
                    technique=f"prefix-affinity routing, follow-up turns ({where})"),
                Row(f"replicas {pct} of knee{label} (TTFT, first turns): round-robin -> prefix affinity",
                    f"round_robin@{pct}{suffix}/first", f"prefix@{pct}{suffix}/first", metric="ttft_ms",
                    technique=f"prefix-affinity routing, turns that open a session ({where})"),
                Row(f"replicas {pct} of knee{label} (TTFT, follow-up turns): least-loaded -> prefix affinity",
                    f"least_loaded@{pct}{suffix}/follow-up", f"prefix@{pct}{suffix}/follow-up",
                    metric="ttft_ms",
                    technique=f"prefix-affinity routing vs least-loaded, follow-up turns ({where})"),
            ]
            if quick:
                continue
            rows += [
                Row(f"replicas {pct} of knee{label} (TTFT): round-robin -> prefix affinity",
                    f"round_robin@{pct}{suffix}", f"prefix@{pct}{suffix}", metric="ttft_ms",
                    technique=f"prefix-affinity routing, all calls ({where})"),
                Row(f"replicas {pct} of knee{label} (TTFT p99): least-loaded -> prefix affinity",
                    f"least_loaded@{pct}{suffix}", f"prefix@{pct}{suffix}", metric="ttft_ms", statistic="p99",
                    technique=f"prefix-affinity routing vs least-loaded ({where}, TTFT p99)"),
                Row(f"replicas {pct} of knee{label} (e2e): round-robin -> prefix affinity",
                    f"round_robin@{pct}{suffix}", f"prefix@{pct}{suffix}",
                    technique=f"prefix-affinity routing, all calls ({where}, e2e)"),
            ]
    return rows


def _notes(series: dict[str, Any], n: int) -> list[str]:
    notes = []
    for workload, about in series["workloads"].items():
        steps = ", ".join(f"{x['rps']:.1f} at {x['per_replica']}" for x in about["knee_ladder"])
        notes.append(f"{workload} (documents of {about['doc_words']} words): knee {about['knee_rps']:.1f} req/s, "
                     f"the fleet's throughput once saturated (closed loop, round-robin; req/s at calls in "
                     f"flight per replica: {steps}; stopped when doubling gained < {PLATEAU:.0%}); at the "
                     f"knee {_usage_note(about['knee_ladder'][-1]['usage'])}")
    for variant, run in series["runs"].items():
        if "slow_share_early" in run:
            notes.append(f"{variant}: the {SLOW}x slower replica served {run['slow_share_early']:.0%} of "
                         f"the calls of the run's first quarter and {run['slow_share_late']:.0%} of its "
                         f"second half (a fair share is {1 / REPLICAS:.0%}); "
                         + (f"at most half its fair share from {run['halved_after_s']:.0f} s on; "
                            if run.get("halved_after_s") is not None else "")
                         + f"TTFT p50 {run['ttft_p50_ms']:.0f} ms, {run['failed']} failed")
            continue
        if "failed_after_kill" in run:
            notes.append(f"{variant}: {run['failed']} failed of {run['n']} ({run['failed_in_flight']} were "
                         f"in flight on the killed replica, {run['failed_after_kill']} started after the "
                         f"kill); {run['served_by_victim_after']} served by it after the kill")
            continue
        ideal = series["workloads"][run["workload"]]["ideal_hit_rate"]
        hits = (f"prefix-cache hit rate {run['hit_rate']:.0%} ({run['hit_vs_ideal']:.0%} of the ideal {ideal:.0%})"
                if run["hit_rate"] is not None else
                "prefix-cache hit rate not reported (no vLLM or reference-server counters in /metrics)")
        seen = run.get("usage_hit_rate")
        said = "" if seen is None else f" (the answers' cache_read_input_tokens: {seen:.0%})"
        notes.append(f"{variant}: {hits}{said}, calls per replica {run['per_replica']}, {run['failed']} failed; "
                     f"{_usage_note(run['usage'])}")
        if run.get("turns") and (line := _turns_note(variant, run["turns"])):
            notes.append(line)
    notes.insert(0, f"{series['replicas']} replicas ({series['profile']}); {n} calls per policy and load, the same "
                    "sessions for every policy, each run's system prompts tagged (cold caches)")
    return notes


def _usage_note(usage: dict[str, Any]) -> str:
    """One line of a stretch's usage: the modelled GPUs against the VM's CPU."""
    def mean(values: list[float | None]) -> float:
        known = [v for v in values if v is not None]
        return sum(known) / len(known) if known else float("nan")

    machine = usage.get("machine_cpu")
    here = (f"client {usage['client_cpu']:.2f} core, machine "
            f"{'?' if machine is None else f'{machine:.0%}'} of {usage['cores']} cores busy")
    if all(v is None for v in usage["budget_use"]):  # not simulated GPUs (the user's replicas)
        return f"CPU here: {here}"
    replicas = ("" if all(v is None for v in usage["server_cpu"])
                else f"replicas {mean(usage['server_cpu']):.2f} core each, ")
    return (f"GPU steps {mean(usage['budget_use']):.0%} full (token budget), busy "
            f"{usage['gpu_busy_mean']:.0%}; CPU: {replicas}{here}")


def _run_summary(out: list[RequestRecord], before: list[tuple[float, float]],
                 after: list[tuple[float, float]], urls: list[str], ideal: float, rate: float,
                 known: bool = True) -> dict[str, Any]:
    """One policy's run: prefix-cache hit rate from the replicas' counters (None where they
    report none: ``known``), calls per replica and their spread, failures."""
    hits = sum(a[0] - b[0] for a, b in zip(after, before, strict=True))
    queries = sum(a[1] - b[1] for a, b in zip(after, before, strict=True))
    per_replica_hits = [round((a[0] - b[0]) / (a[1] - b[1]), 3) if a[1] > b[1] else None
                        for a, b in zip(after, before, strict=True)]
    served = Counter(r.extra.get("replica") for r in out if r.ok)
    counts = [served.get(url, 0) for url in urls]
    mean = sum(counts) / len(counts) if counts else 0.0
    spread = math.sqrt(sum((c - mean) ** 2 for c in counts) / len(counts)) / mean if mean else None
    hit_rate = (hits / queries if queries else 0.0) if known else None
    return {"rate_rps": round(rate, 2), "hit_rate": round(hit_rate, 4) if hit_rate is not None else None,
            "hit_vs_ideal": round(hit_rate / ideal, 3) if ideal and hit_rate is not None else None,
            "hit_rate_per_replica": per_replica_hits if known else None, "per_replica": counts,
            "load_cv": round(spread, 3) if spread is not None else None,
            "failed": sum(not r.ok for r in out)}


SHARE_WINDOW_S = 2.0  # the slow replica's share of the calls, per window of the run


def share_windows(starts: list[float], slow: list[bool], window_s: float = SHARE_WINDOW_S
                  ) -> list[tuple[float, float, int]]:
    """Pure: per ``window_s`` of the run (from its first call), the share of the calls started
    in it that went to the slow replica: ``(window start s, share, calls)``, empty windows left
    out."""
    if not starts:
        return []
    t0 = min(starts)
    counts: dict[int, list[int]] = {}
    for start, is_slow in zip(starts, slow, strict=True):
        c = counts.setdefault(int((start - t0) // window_s), [0, 0])
        c[0] += is_slow
        c[1] += 1
    return [(k * window_s, c[0] / c[1], c[1]) for k, c in sorted(counts.items())]


def halved_after(windows: list[tuple[float, float, int]], fair: float, window_s: float = SHARE_WINDOW_S
                 ) -> float | None:
    """Pure: the time from which every later window gives the slow replica at most half its
    fair share (the end of the last window above it); None when the last window is above."""
    if not windows or windows[-1][1] > fair / 2:
        return None
    above = [start for start, share, _ in windows if share > fair / 2]
    return above[-1] + window_s if above else 0.0


def _slow_summary(out: list[RequestRecord], slow_url: str, rate: float) -> dict[str, Any]:
    """The slow replica's share of the calls started in the run's first quarter and in its
    second half, per 2 s window and from when it stayed at half its fair share or less, and
    the run's TTFT p50."""
    ok = sorted((r for r in out if r.ok), key=lambda r: r.start_s)
    quarter, half = ok[:max(1, len(ok) // 4)], ok[len(ok) // 2:]

    def share(rs: list[RequestRecord]) -> float:
        return sum(r.extra.get("replica") == slow_url for r in rs) / len(rs) if rs else 0.0

    windows = share_windows([r.start_s for r in ok], [r.extra.get("replica") == slow_url for r in ok])
    ttfts = sorted(r.ttft_ms for r in ok if r.ttft_ms is not None)
    return {"rate_rps": round(rate, 2), "slow_share_early": round(share(quarter), 3),
            "slow_share_late": round(share(half), 3),
            "slow_share_windows": [(w, round(x, 3), n) for w, x, n in windows],
            "halved_after_s": halved_after(windows, 1 / REPLICAS),
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
