"""Caching, encoding and everything combined: the rows the other scenario modules do not make.

- ``cache``: classification-style prompts, temperature 0, from a seeded workload in which a
  stated share (REPEAT_RATE) of the requests repeats an earlier prompt, the repeated one drawn
  with Zipf weights (popular prompts come back most). The official client, llmclient without
  a cache, and llmclient with ``cache="memory"`` (outside quick mode also SQLite in a temp file
  and a private loopback Redis), interleaved request by request; the rows give the mixed p50
  at that repeat rate, the cache alone, and a hit against a call, with the hit rate beside.
- ``encoding``: ten-turn conversations of about 16 KB per request (the shape of a chat app's
  requests late in a session). The official client (JSON), llmclient's JSON path (orjson, the
  body compressed with zstd once the origin said it reads it) and llmclient with
  ``wire="protobuf"`` (falls back to JSON by itself where the server does not speak it).
- ``combined``: app sessions of three calls with think time between them, the same code
  through ``openai.AsyncOpenAI`` and ``llmclient.AsyncOpenAI``: a question about a 12 MP photo,
  a follow-up ("explain in more detail", offered as ``prefetch``), and an FAQ drawn from a
  Zipf distribution. llmclient runs with its defaults plus ``cache="memory"`` and speculation;
  sessions alternate between the two clients so machine noise hits both. Judged on the mean
  session time (the sum of its calls), and on the photo question and the follow-up apart.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import random
import statistics
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from typing import Any

from ..fixtures.redis import redis_server
from ..harness._scenario import (
    Arm,
    ChatRequest,
    Context,
    NotAvailable,
    RequestRecord,
    Row,
    ScenarioResult,
)
from ..harness.load import readable_text, repeat_indices, zipf_indices

ORDER = 70

ZIPF_S = 1.1              # rank-frequency exponent of repeated prompts (web queries: ~1)
# The share of requests that repeat an earlier prompt, stated in the report. Above one half, so
# the mixed p50 is a hit's when the cache works (at or below it the p50 stays a network call
# and says nothing about the cache); the hit rate and hit latency are reported beside it.
REPEAT_RATE = 0.75
QUICK_CACHE_REQUESTS = 24
CONVERSATION_TURNS = 10
TURN_WORDS = 200           # ~16 KB of JSON per 10-turn request
LIKELY = ("explain in more detail",)
THINK_S = (0.5, 1.0)       # a reader's pause between the calls of a session
# App sessions per client in the quick pass: the fewest a mean session time is judged on
# (harness.stats.min_samples("mean")).
QUICK_SESSIONS = 5


def _median(values: Sequence[float | int | None]) -> float | None:
    present = [float(v) for v in values if v is not None]
    return statistics.median(present) if present else None


class Caching:
    name = "cache"
    apis = ("openai", "anthropic")
    description = (f"a seeded workload in which {REPEAT_RATE:.0%} of the requests repeat an "
                   f"earlier prompt (Zipf s={ZIPF_S} over the prompts seen so far, temperature "
                   "0): openai vs llmclient vs llmclient with cache='memory'")
    requires = ("llmclient", "llmclient.cache", "openai")
    quick_s = 18

    def run(self, ctx: Context) -> ScenarioResult:
        rng = random.Random(ctx.seed + 71)
        n = QUICK_CACHE_REQUESTS if ctx.quick else ctx.budget
        picks = repeat_indices(n, REPEAT_RATE, ZIPF_S, rng)
        prompts = [f"Classify the sentiment of this review as positive, negative or neutral: "
                   f"{readable_text(rng.randint(20, 60), rng)}" for _ in range(max(picks) + 1)]
        requests = [ctx.chat_request(prompts[i], max_tokens=16, temperature=0) for i in picks]
        drivers = {
            "openai": ctx.driver("openai"),
            "llmclient": ctx.driver("llmclient"),
            "llmclient+cache": ctx.driver("llmclient", variant="llmclient+cache",
                                          client_options={"cache": "memory"}),
        }
        with contextlib.ExitStack() as stack:
            if not ctx.quick:  # the persistent and the shared backends, beside memory
                folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="llmclient-bench-"))
                drivers["llmclient+sqlite"] = ctx.driver(
                    "llmclient", variant="llmclient+sqlite",
                    client_options={"cache": f"sqlite:///{folder}/cache.db"})
                redis_url = stack.enter_context(redis_server())
                if redis_url is not None:
                    drivers["llmclient+redis"] = ctx.driver(
                        "llmclient", variant="llmclient+redis", client_options={"cache": redis_url})
            ctx.progress(f"  cache: {n} requests x {len(drivers)} variants over "
                         f"{len(set(picks))} distinct prompts")
            records = ctx.interleave(drivers, requests, warmup=0)
        figures = cache_figures(records["llmclient+cache"], picks)
        repeats = n - len(set(picks))
        notes = [f"{n} requests per variant, {len(set(picks))} distinct prompts, {repeats} repeats "
                 f"({repeats / n:.0%}): {figures['hits']} served from the cache "
                 f"({figures['hit_rate']:.0%})",
                 "the cache starts empty: every first ask of a prompt is a miss"]
        if figures["hit_ms"] is not None and figures["miss_ms"] is not None:
            notes.append(f"median latency of a cache hit {figures['hit_ms']:.2f} ms vs a miss "
                         f"{figures['miss_ms']:.0f} ms; the mixed p50 moves once more than half "
                         "the calls are hits")
        # The workload mixes hits and misses, whose p50 jumps between the two: each kind is a row
        # of its own (the same requests without the cache beside them, pair by pair), and the
        # mix is judged on its mean.
        records.update(split_by_cache(records, "llmclient+cache", "llmclient"))
        for backend in ("sqlite", "redis"):
            name = f"llmclient+{backend}"
            if name in records:
                records.update(split_by_cache(records, name, "llmclient", tag=backend))
                hit = _median([r.latency_ms for r in records[name]
                               if r.extra.get("cache") in ("hit", "join")])
                notes.append(f"{backend}: median hit {_fmt_ms(hit)}")
        if not ctx.quick and "llmclient+redis" not in records:
            notes.append("redis: not measured (redis-server not found)")
        pct = f"{repeats / n:.0%}"
        context = (f"{pct} repeats; hit rate {figures['hit_rate']:.0%} "
                   f"({figures['hits']}/{n}); hit {_fmt_ms(figures['hit_ms'])}")
        rows = [Row(f"cache, {pct} repeats: openai -> llmclient+cache (mean)", "openai",
                    "llmclient+cache", statistic="mean",
                    technique=f"response cache, {pct} repeats (mean)", context=context),
                Row(f"cache alone: llmclient -> llmclient+cache (mean, {pct} repeats)", "llmclient",
                    "llmclient+cache", statistic="mean",
                    technique=f"response cache alone, {pct} repeats (mean)", context=context),
                Row("cache hit vs the same call without a cache", "llmclient/at-hits",
                    "llmclient+cache/hits", technique="response cache, hits", context=context),
                Row("cache miss vs the same call without a cache", "llmclient/at-misses",
                    "llmclient+cache/misses", technique="response cache, misses (its cost)")]
        for backend in ("sqlite", "redis"):
            if f"llmclient+{backend}" in records:
                rows.append(Row(f"cache hit ({backend}) vs the same call without a cache",
                                f"llmclient/at-{backend}-hits", f"llmclient+{backend}/hits",
                                technique=f"response cache ({backend}), hits"))
        return ScenarioResult.of(
            self, records, rows=rows, notes=notes,
            series={"zipf_s": ZIPF_S, "repeat_rate": repeats / n if n else None,
                    "distinct": len(set(picks)), "requests": n, **figures})


def split_by_cache(records: dict[str, list[RequestRecord]], cached: str, plain: str,
                   tag: str = "") -> dict[str, list[RequestRecord]]:
    """Pure: the ``cached`` variant's hits and misses, and the ``plain`` variant's records at
    the same positions (the same requests, sent interleaved without a cache): ``<cached>/hits``,
    ``<cached>/misses``, ``<plain>/at-hits``, ``<plain>/at-misses`` (``at-<tag>-hits`` ... with a
    ``tag``). A join (the call waited for an identical one in flight) counts as a hit."""
    hit = [r.extra.get("cache") in ("hit", "join") for r in records[cached]]
    base = records[plain]
    if len(base) != len(hit):
        raise ValueError(f"{cached} and {plain} do not line up ({len(hit)} vs {len(base)} records)")
    at = f"at-{tag}-" if tag else "at-"
    return {f"{cached}/hits": [r for r, h in zip(records[cached], hit, strict=True) if h],
            f"{cached}/misses": [r for r, h in zip(records[cached], hit, strict=True) if not h],
            f"{plain}/{at}hits": [r for r, h in zip(base, hit, strict=True) if h],
            f"{plain}/{at}misses": [r for r, h in zip(base, hit, strict=True) if not h]}


def cache_figures(records: Sequence[RequestRecord], picks: Sequence[int]) -> dict[str, Any]:
    """What the cache did, from its variant's records: hits (joins count: the call waited for
    an identical one in flight, no request of its own), the hit rate against the repeats the
    workload offered, and the median latency of a hit and of a miss."""
    served = Counter(r.extra.get("cache") or "miss" for r in records)
    hits = served.get("hit", 0) + served.get("join", 0)
    n = len(records)
    repeats = len(picks) - len(set(picks))
    return {
        "served": dict(served), "hits": hits, "hit_rate": hits / n if n else 0.0,
        "hits_of_repeats": hits / repeats if repeats else None,
        "hit_ms": _median([r.latency_ms for r in records if r.extra.get("cache") in ("hit", "join")]),
        "miss_ms": _median([r.latency_ms for r in records
                            if r.ok and r.extra.get("cache") not in ("hit", "join")]),
    }


def _fmt_ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f} ms"


def conversation(rng: random.Random, turns: int = CONVERSATION_TURNS,
                 words: int = TURN_WORDS) -> list[dict[str, Any]]:
    """A chat history of ``turns`` user/assistant exchanges ending on a user turn."""
    tag = uuid.uuid4().hex[:8]
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": f"You are a helpful travel assistant ({tag})."}]
    for _ in range(turns - 1):
        messages.append({"role": "user", "content": readable_text(words // 3, rng)})
        messages.append({"role": "assistant", "content": readable_text(words, rng)})
    messages.append({"role": "user", "content": "And what should I pack for the last leg?"})
    return messages


class Encoding:
    name = "encoding"
    description = ("ten-turn conversations (~16 KB a request): openai (JSON) vs llmclient "
                   "(orjson, zstd-compressed body) vs llmclient wire='protobuf'")
    requires = ("llmclient", "llmclient.protobuf", "openai")
    quick_s = 14

    def run(self, ctx: Context) -> ScenarioResult:
        rng = random.Random(ctx.seed + 72)
        n = 6 if ctx.quick else max(8, ctx.budget // 2)
        requests = [ChatRequest(messages=conversation(rng), max_tokens=32) for _ in range(n)]
        drivers = {
            "openai": ctx.driver("openai"),
            "llmclient": ctx.driver("llmclient"),
            "llmclient+protobuf": ctx.driver("llmclient", variant="llmclient+protobuf",
                                             client_options={"wire": "protobuf"}),
        }
        size = len(_json_size(requests[0], ctx.model))
        ctx.progress(f"  encoding: {n} conversations of {size / 1024:.1f} KB per variant")
        records = ctx.interleave(drivers, requests, warmup=1)
        sent = {name: _median([r.bytes_sent for r in recs]) for name, recs in records.items()}
        received = {name: _median([r.bytes_received for r in recs]) for name, recs in records.items()}
        wires = Counter(r.extra.get("wire") for r in records["llmclient+protobuf"])
        notes = [f"{n} requests per variant; request JSON {size} bytes; median bytes on the wire "
                 "(request/response): " + ", ".join(
                     f"{name} {_fmt(sent[name])}/{_fmt(received[name])}" for name in records
                     if sent[name] is not None)]
        if wires.get("protobuf", 0) < len(records["llmclient+protobuf"]):
            notes.append(f"the server answered protobuf calls as JSON {wires.get('json', 0)} times "
                         "(it does not speak protobuf: llmclient fell back)")
        return ScenarioResult.of(
            self, records,
            rows=[Row("encoding 16 KB chat: openai -> llmclient", "openai", "llmclient",
                      technique="orjson + zstd request bodies (16 KB chat)"),
                  Row("encoding: llmclient JSON -> protobuf", "llmclient", "llmclient+protobuf",
                      technique="protobuf wire (16 KB chat)")],
            notes=notes,
            series={"request_json_bytes": size, "median_bytes_sent": sent,
                    "median_bytes_received": received})


def _json_size(request: ChatRequest, model: str) -> bytes:
    import json

    return json.dumps({"model": model, "messages": request.messages,
                       "max_tokens": request.max_tokens}).encode()


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value / 1024:.1f} KB"


class Combined:
    name = "combined"
    description = ("app sessions (photo question, predictable follow-up, Zipf FAQ) with think "
                   "time: the same code through openai and through llmclient with every feature")
    requires = ("llmclient", "llmclient.cache", "llmclient.prefetch", "llmclient.images",
                "openai", "vision")
    quick_s = 42  # measured: 5 sessions a client, ~4.5 s (official client) and ~2.5 s (llmclient)

    def run(self, ctx: Context) -> ScenarioResult:
        from .images import photo_bytes

        rng = random.Random(ctx.seed + 73)
        sessions = QUICK_SESSIONS if ctx.quick else max(6, ctx.budget // 12)
        faqs = [f"FAQ: {readable_text(rng.randint(12, 30), rng)}?" for _ in range(12)]
        ctx.progress(f"  combined: {sessions} sessions of 3 calls per client (photos cached on disk)")
        photos = [photo_bytes(ctx.seed * 1000 + i) for i in range(sessions)]
        clients = {"openai": _openai_client(ctx), "llmclient": _llmclient(ctx)}
        records: dict[str, list[RequestRecord]] = {name: [] for name in clients}
        for i in range(sessions):
            order = list(clients) if i % 2 == 0 else list(clients)[::-1]
            faq = faqs[zipf_indices(1, len(faqs), ZIPF_S, rng)[0]]
            think = [rng.uniform(*THINK_S) for _ in range(2)]
            for name in order:
                ctx.progress(f"  combined: session {i + 1}/{sessions} ({name})")
                records[name] += ctx.run(_session(ctx, clients[name], name, photos[i], faq, think))
        variants: dict[str, list[RequestRecord]] = dict(records)
        steps = ("photo", "follow-up", "faq")
        for name in clients:
            for step in steps:
                variants[f"{name}/{step}"] = [r for r in records[name] if r.extra.get("step") == step]
            variants[f"{name}/session"] = session_records(records[name], name)
        # A session's calls are of different kinds (a photo, a follow-up its prefetch served, an
        # FAQ the cache may hold): all calls' p50 would jump between those modes, so the whole
        # is judged on the mean session time, and two kinds with one mode each on their own.
        # The FAQ is a hit or a miss depending on the Zipf draw: in the notes, not a row.
        rows = [Row("app sessions: openai -> llmclient, mean session time", "openai/session",
                    "llmclient/session", statistic="mean",
                    technique="everything together, app sessions (mean session time)"),
                Row("app sessions, the photo question: openai -> llmclient", "openai/photo",
                    "llmclient/photo", technique="everything together, the photo question"),
                Row("app sessions, the predictable follow-up: openai -> llmclient",
                    "openai/follow-up", "llmclient/follow-up",
                    technique="everything together, the predictable follow-up")]
        served = Counter(r.extra.get("cache") or "network" for r in records["llmclient"])
        faq_served = Counter(r.extra.get("cache") or "network" for r in variants["llmclient/faq"])
        notes = [f"{sessions} sessions x 3 calls per client, think {THINK_S[0]}-{THINK_S[1]} s "
                 "between calls (not counted); sessions alternate which client goes first; a "
                 "session's time is the sum of its three calls",
                 "llmclient calls answered: " + ", ".join(f"{k} {v}" for k, v in sorted(served.items())),
                 "the FAQ call (Zipf over 12 questions): " + ", ".join(
                     f"{k} {v}" for k, v in sorted(faq_served.items()))]
        arms = {"openai": Arm("openai"),
                "llmclient": Arm("llmclient", {"cache": "memory", "speculation": "SpeculationConfig()",
                                               "prefetch": list(LIKELY)})}
        return ScenarioResult.of(self, variants, rows=rows, notes=notes, arms=arms,
                                 series={"sessions": sessions, "served": dict(served)})


def session_records(records: Sequence[RequestRecord], variant: str) -> list[RequestRecord]:
    """Pure: one record per session (its calls, three in a row, in order), whose latency is the
    sum of its calls' (think time not counted); a session with a failed or missing call is a
    failed record, so it is drawn in the bootstrap and left out of the mean."""
    out: list[RequestRecord] = []
    steps = ("photo", "follow-up", "faq")
    i = 0
    while i < len(records):
        group = [records[i]]
        i += 1
        while i < len(records) and records[i].extra.get("step") != steps[0]:
            group.append(records[i])
            i += 1
        whole = [r.extra.get("step") for r in group] == list(steps) and all(r.ok for r in group)
        out.append(RequestRecord(
            variant=f"{variant}/session", trace_id=group[0].trace_id, start_s=group[0].start_s,
            latency_ms=sum(r.latency_ms for r in group), status=200 if whole else None,
            error_kind=None if whole else "incomplete_session",
            extra={"calls": len(group), "trace_ids": [r.trace_id for r in group]}))
    return out


def _openai_client(ctx: Context) -> Any:
    try:
        import openai
    except ImportError as exc:  # pragma: no cover - the scenario requires "openai"
        raise NotAvailable("the official openai client is not installed") from exc
    kwargs: dict[str, Any] = {"base_url": ctx.base_url, "api_key": ctx.api_key}
    if ctx.verify is not True:
        kwargs["http_client"] = openai.DefaultAsyncHttpxClient(verify=ctx.verify)
    client = openai.AsyncOpenAI(**kwargs)
    ctx.closers.append(client.close)
    return client


def _llmclient(ctx: Context) -> Any:
    import llmclient

    kwargs: dict[str, Any] = {"base_url": ctx.base_url, "api_key": ctx.api_key,
                              "cache": "memory", "speculation": llmclient.SpeculationConfig()}
    if ctx.verify is not True:
        kwargs["verify"] = ctx.verify
    client = llmclient.AsyncOpenAI(**kwargs)
    ctx.closers.append(client.close)
    return client


async def _session(ctx: Context, client: Any, variant: str, photo: bytes, faq: str,
                   think: Sequence[float]) -> list[RequestRecord]:
    """One app session; the code is what an app writes, plus llmclient's options when present."""
    is_llmclient = type(client).__module__.startswith("llmclient")
    tag = f"{variant}-{uuid.uuid4().hex[:8]}"  # no session reuses another's server-side prefix
    url = "data:image/jpeg;base64," + base64.b64encode(photo).decode("ascii")
    messages: list[dict[str, Any]] = [{"role": "user", "content": [
        {"type": "text", "text": f"What is in this photo? ({tag})"},
        {"type": "image_url", "image_url": {"url": url}}]}]
    extra: dict[str, Any] = {"prefetch": list(LIKELY)} if is_llmclient else {}
    out: list[RequestRecord] = []

    async def call(step: str, msgs: list[dict[str, Any]], **kw: Any) -> Any:
        started = time.perf_counter()
        try:
            response = await client.chat.completions.create(
                model=ctx.model, messages=msgs, temperature=0, max_tokens=24, **kw)
        except Exception as exc:
            out.append(RequestRecord(
                variant=variant, trace_id=str(getattr(exc, "trace_id", "") or ""),
                start_s=started - ctx.epoch, latency_ms=(time.perf_counter() - started) * 1000.0,
                status=getattr(exc, "status_code", None), error_kind=type(exc).__name__,
                extra={"step": step}))
            return None
        timings = getattr(response, "timings", None)
        usage = getattr(response, "usage", None)
        out.append(RequestRecord(
            variant=variant, trace_id=getattr(response, "trace_id", "") or "",
            start_s=started - ctx.epoch, latency_ms=(time.perf_counter() - started) * 1000.0,
            status=200, output_tokens=getattr(usage, "completion_tokens", None),
            prompt_tokens=getattr(usage, "prompt_tokens", None),
            extra={"step": step, "cache": getattr(timings, "cache", None)}))
        return response

    answer = await call("photo", messages, **extra)
    if answer is None:
        return out
    await asyncio.sleep(think[0])
    follow = [*messages, {"role": "assistant", "content": answer.choices[0].message.content},
              {"role": "user", "content": LIKELY[0]}]
    await call("follow-up", follow, **extra)
    await asyncio.sleep(think[1])
    await call("faq", [{"role": "user", "content": f"{faq} ({variant})"}])
    return out


SCENARIOS = (Caching(), Encoding(), Combined())
