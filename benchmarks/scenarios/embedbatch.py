"""Embedding micro-batching: 64 concurrent single-input ``embeddings.create`` callers, llmclient
without and with ``embedding_batch=`` (issue 34): requests sent and each call's latency.

Rounds alternate between the two clients (A B B A ...), so machine noise hits both alike; a
round starts 64 calls at once on the suite's event loop and waits for all of them.
"""

from __future__ import annotations

import asyncio
import importlib
import time
from typing import Any

from ..harness._scenario import Arm, Context, Rate, RequestRecord, Row, ScenarioResult

ORDER = 61
CALLERS = 64
MODEL = "text-embedding-3-small"
WINDOW_MS = 2.0


class EmbeddingBatching:
    name = "embedbatch"
    description = "64 concurrent single-input embeddings calls: llmclient without and with micro-batching"
    requires = ("llmclient",)
    quick_s = 2

    def run(self, ctx: Context) -> ScenarioResult:
        llmclient = importlib.import_module("llmclient")
        rounds = 4 if ctx.quick else 20
        kwargs: dict[str, Any] = {"base_url": ctx.base_url, "api_key": ctx.api_key}
        if ctx.verify is not True:
            kwargs["verify"] = ctx.verify
        clients = {"llmclient": llmclient.AsyncOpenAI(**kwargs),
                   "llmclient+batch": llmclient.AsyncOpenAI(**kwargs, embedding_batch={"window_ms": WINDOW_MS})}
        for client in clients.values():
            ctx.closers.append(client.close)
        records: dict[str, list[RequestRecord]] = {name: [] for name in clients}

        async def one(variant: str, text: str) -> RequestRecord:
            t0 = time.perf_counter()
            status, error = 200, None
            try:
                await clients[variant].embeddings.create(model=MODEL, input=text)
            except Exception as exc:  # a failed call is a record, not the end of the run
                status, error = int(getattr(exc, "status_code", 0) or 0), type(exc).__name__
            return RequestRecord(variant=variant, trace_id="", start_s=t0 - ctx.epoch,
                                 latency_ms=(time.perf_counter() - t0) * 1000.0,
                                 status=status or None, error_kind=error)

        async def round_of(variant: str, n: int) -> list[RequestRecord]:
            texts = [f"round {n} caller {i}: a short passage to embed" for i in range(CALLERS)]
            return list(await asyncio.gather(*(one(variant, t) for t in texts)))

        ctx.run(round_of("llmclient", -1))  # warm both clients' connections
        ctx.run(round_of("llmclient+batch", -1))
        warm = dict(clients["llmclient+batch"]._ctx.batcher.stats())
        for n in range(rounds):
            order = ("llmclient", "llmclient+batch") if n % 2 == 0 else ("llmclient+batch", "llmclient")
            for variant in order:
                records[variant].extend(ctx.run(round_of(variant, n)))
        stats = clients["llmclient+batch"]._ctx.batcher.stats()
        notes = [f"{rounds} rounds of {CALLERS} concurrent single-input calls per variant (window "
                 f"{WINDOW_MS:g} ms); requests sent: llmclient {rounds * CALLERS}, llmclient+batch "
                 f"{stats['requests']} for {stats['calls']} calls (warm-up round included)"]
        # The batcher's own count (a record is a call, not a request), the warm-up round taken
        # out; without the batcher every call is a request of its own.
        calls = stats["calls"] - warm["calls"]
        batched = stats["requests"] - warm["requests"]
        rows: list[Row | Rate] = [Rate("embeddings, 64 concurrent callers: requests sent per call", "llmclient",
                     "llmclient+batch", event="calls that sent a request of their own",
                     tallies=(rounds * CALLERS, rounds * CALLERS, batched, calls),
                     higher_is_better=False,
                     technique="embedding micro-batching, requests sent",
                     context=f"{stats['requests']} requests for {stats['calls']} calls, warm-up "
                             "round included"),
                 Row("embeddings, 64 concurrent callers: llmclient -> micro-batched", "llmclient",
                     "llmclient+batch", technique="embedding micro-batching, latency",
                     context=f"the {WINDOW_MS:g} ms window each call waits for others")]
        arms = {"llmclient": Arm("llmclient"),
                "llmclient+batch": Arm("llmclient", {"embedding_batch": {"window_ms": WINDOW_MS}})}
        return ScenarioResult.of(self, records, rows=rows, notes=notes, arms=arms,
                                 series={"embedbatch": {"calls": stats["calls"], "requests": stats["requests"]}})


SCENARIOS = (EmbeddingBatching(),)
