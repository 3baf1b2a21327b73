"""Connection handling: what a warm HTTP/2 connection saves over how apps connect today.

The same chat workload (non-streamed and streamed) through
  (a) ``fresh-connection``: a new HTTP/1.1 client per call (TCP + TLS handshake every time),
  (b) ``openai``: the official client with its defaults (pooled HTTP/1.1 keep-alive),
  (c) ``llmclient``: warm HTTP/2,
interleaved request by request over the emulated network. Against a TLS server every handshake
pays the network's round trips, which is the cost this row is about.
"""

from __future__ import annotations

import random

from ..harness._scenario import Context, NotAvailable, RequestRecord, Row, ScenarioResult
from ..harness.load import LengthModel, mixed_requests, run_closed_loop
from ..harness.serverproc import ServerError

ORDER = 10

# Short chat turns: connection setup matters most where the answer itself is quick.
_LENGTHS = LengthModel(prompt_median_words=60, prompt_sigma=0.6, prompt_max_words=600,
                       output_median_tokens=16, output_sigma=0.5, output_max_tokens=64)
VARIANTS = ("fresh-connection", "openai", "llmclient")


class ConnectionHandling:
    name = "connection"
    apis = ("openai", "anthropic")
    description = ("same chat workload via a fresh connection per call, the official openai "
                   "client's defaults, and llmclient's warm HTTP/2 (non-stream and stream)")
    requires = ("llmclient", "openai")
    quick_s = 16  # measured: 36 calls of ~0.4 s over wan

    def run(self, ctx: Context) -> ScenarioResult:
        rng = random.Random(ctx.seed + 10)
        n = max(10, ctx.budget // 2) if not ctx.quick else 5
        records = {}
        for stream in (False, True):
            suffix = "/stream" if stream else ""
            drivers = {f"{kind}{suffix}": ctx.driver(kind, variant=f"{kind}{suffix}")
                       for kind in VARIANTS}
            requests = mixed_requests(n, rng, stream=stream, lengths=_LENGTHS)
            ctx.progress(f"  connection{suffix or '/non-stream'}: {n} requests x 3 variants")
            # one warm-up round warms the official client's pool and llmclient's connection
            records.update(ctx.interleave(drivers, requests, warmup=1 if ctx.quick else 2))
        rows = [
            Row("connection: fresh conn/call -> llmclient", "fresh-connection", "llmclient",
                technique="warm connection vs a new one per call"),
            Row("connection: openai defaults -> llmclient", "openai", "llmclient",
                technique="warm HTTP/2 connection vs the official client"),
            Row("connection (stream TTFT): fresh -> llmclient", "fresh-connection/stream",
                "llmclient/stream", metric="ttft_ms",
                technique="warm connection vs a new one per call, stream"),
            Row("connection (stream TTFT): openai -> llmclient", "openai/stream",
                "llmclient/stream", metric="ttft_ms",
                technique="warm HTTP/2 connection vs the official client, stream"),
        ]
        notes = [f"{n} requests per variant and mode, interleaved, {1 if ctx.quick else 2} warm-up "
                 "round(s) dropped"]
        if "tls" not in ctx.capabilities:
            notes.append("server without TLS: handshake savings understated")
        return ScenarioResult.of(self, records, rows=rows, notes=notes)


class Concurrency:
    name = "concurrency"
    apis = ("openai", "anthropic")
    description = ("closed loop at fixed concurrency: official client (HTTP/1.1 pool) vs "
                   "llmclient (HTTP/2 multiplexing), fresh clients, blocks alternated A B A B")
    requires = ("llmclient", "openai")
    quick_s = 4

    def run(self, ctx: Context) -> ScenarioResult:
        rng = random.Random(ctx.seed + 11)
        concurrency = 8
        blocks, per_block = (2, 16) if ctx.quick else (6, 64)
        records: dict[str, list[RequestRecord]] = {"openai": [], "llmclient": []}
        ctx.progress(f"  concurrency {concurrency}: {blocks} blocks of {per_block} requests "
                     "per client, alternating")
        for block in range(blocks):
            order = ("openai", "llmclient") if block % 2 == 0 else ("llmclient", "openai")
            requests = mixed_requests(per_block, rng, stream=True, lengths=_LENGTHS)
            for kind in order:
                # A new client per block: the pool must open its connections under load,
                # which is where one multiplexed HTTP/2 connection differs from a pool.
                driver = ctx.driver(kind, variant=kind)
                out = run_closed_loop(ctx, driver, requests, concurrency)
                records[kind] += out
        rows = [Row(f"concurrency {concurrency}: openai -> llmclient", "openai", "llmclient",
                    technique=f"HTTP/2 multiplexing, {concurrency} in flight"),
                Row(f"concurrency {concurrency} (TTFT): openai -> llmclient", "openai",
                    "llmclient", metric="ttft_ms",
                    technique=f"HTTP/2 multiplexing, {concurrency} in flight, stream")]
        return ScenarioResult.of(
            self, records, rows=rows,
            notes=[f"{blocks * per_block} requests per client at concurrency {concurrency}, "
                   "new client per block (its pool starts cold)"],
            series={"concurrency": concurrency})


class Http1Origin:
    """vLLM, SGLang, llama.cpp and Ollama speak HTTP/1.1 only: no HTTP/2 lane to win on. The
    reference server behind uvicorn (h11), as vLLM and SGLang serve, through the same emulated
    network: the official client against llmclient, one call at a time (non-stream, stream
    TTFT) and at concurrency 8 (fresh clients per block, so each pool opens under load)."""

    name = "http1"
    apis = ("openai", "anthropic")
    description = ("an HTTP/1.1-only origin (uvicorn, as vLLM/SGLang serve): official client vs "
                   "llmclient, one at a time and at concurrency 8")
    requires = ("llmclient", "openai", "spawn_server")
    quick_s = 12

    def run(self, ctx: Context) -> ScenarioResult:
        assert ctx.spawn_server is not None
        rng = random.Random(ctx.seed + 12)
        profile = ctx.server.profile if ctx.server else "zero"
        try:
            server = ctx.spawn_server(profile=profile, extra_args=("--server", "uvicorn", "--cold-start-s", "0"))
            server.wait_healthy()
        except (ServerError, OSError) as exc:
            raise NotAvailable(f"could not start the reference server under uvicorn: {exc}") from exc
        n = 5 if ctx.quick else max(10, ctx.budget // 2)
        blocks, per_block = (2, 8) if ctx.quick else (4, 48)
        records: dict[str, list[RequestRecord]] = {}
        try:
            with ctx.routed(server) as url:
                sub = ctx.derive(base_url=url, direct_url=server.base_url,
                                 verify=server.ca_path or ctx.verify)
                for stream in (False, True):
                    suffix = "/stream" if stream else ""
                    drivers = {f"{kind}{suffix}": sub.driver(kind, variant=f"{kind}{suffix}")
                               for kind in ("openai", "llmclient")}
                    ctx.progress(f"  http1{suffix or '/non-stream'}: {n} requests x 2 variants")
                    records.update(sub.interleave(drivers, mixed_requests(n, rng, stream=stream,
                                                                          lengths=_LENGTHS)))
                ctx.progress(f"  http1 concurrency 8: {blocks} blocks of {per_block} per client")
                for block in range(blocks):
                    order = ("openai", "llmclient") if block % 2 == 0 else ("llmclient", "openai")
                    requests = mixed_requests(per_block, rng, stream=True, lengths=_LENGTHS)
                    for kind in order:
                        out = run_closed_loop(sub, sub.driver(kind, variant=f"{kind}/c8"), requests, 8)
                        records.setdefault(f"{kind}/c8", []).extend(out)
        finally:
            server.stop()
        rows = [
            Row("HTTP/1.1 origin: openai -> llmclient", "openai", "llmclient",
                technique="HTTP/1.1 origin, one call at a time"),
            Row("HTTP/1.1 origin (stream TTFT): openai -> llmclient", "openai/stream",
                "llmclient/stream", metric="ttft_ms",
                technique="HTTP/1.1 origin, one stream at a time"),
            Row("HTTP/1.1 origin, concurrency 8: openai -> llmclient", "openai/c8", "llmclient/c8",
                technique="HTTP/1.1 origin, 8 in flight"),
        ]
        notes = [f"reference server under uvicorn (HTTP/1.1 only), {n} requests per variant and "
                 f"mode interleaved; {blocks * per_block} per client at concurrency 8"]
        return ScenarioResult.of(self, records, rows=rows, notes=notes)


SCENARIOS = (ConnectionHandling(), Concurrency(), Http1Origin())
