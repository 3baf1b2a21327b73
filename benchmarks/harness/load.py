"""Load patterns: arrivals, workloads and the loops that drive them.

Arrival generators and workload builders are pure (seeded ``random.Random``); the runners are
thin asyncio loops around a :data:`~benchmarks.harness._scenario.Driver`.

- closed loop: ``concurrency`` workers, each sends its next request when the last one finished.
- open loop: requests are sent at pre-computed arrival times (Poisson or gamma inter-arrivals)
  whether or not earlier ones finished, and each latency is measured from the *scheduled* send
  time, so a stalled client or server cannot hide its queueing (no coordinated omission; see
  Gil Tene, "How NOT to measure latency", 2015).
- rate sweep: open loop at increasing rates; ``benchmarks.harness.stats.find_knee`` marks where
  latency turns up.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .records import ChatRequest, Driver, RequestRecord, new_trace_id

if TYPE_CHECKING:
    from ._scenario import Context

__all__ = [
    "LengthModel",
    "distinct_for",
    "gamma_arrivals",
    "long_prompt",
    "mixed_requests",
    "poisson_arrivals",
    "readable_text",
    "repeat_indices",
    "run_closed_loop",
    "run_interleaved",
    "run_open_loop",
    "run_sweep",
]


# ---- arrivals (pure) ----------------------------------------------------------------------
def poisson_arrivals(rate: float, n: int, rng: random.Random) -> list[float]:
    """``n`` send times (seconds from 0) of a Poisson process: exponential gaps, mean 1/rate."""
    return gamma_arrivals(rate, 1.0, n, rng)


def gamma_arrivals(rate: float, cv: float, n: int, rng: random.Random) -> list[float]:
    """Send times with gamma-distributed gaps of mean 1/rate and coefficient of variation
    ``cv`` (cv=1 is Poisson; cv>1 is burstier, as production traffic often is)."""
    if rate <= 0 or not math.isfinite(rate):
        raise ValueError(f"arrival rate must be a positive number, got {rate}")
    if cv <= 0:
        raise ValueError(f"coefficient of variation must be positive, got {cv}")
    if n < 0:
        raise ValueError(f"number of arrivals must be >= 0, got {n}")
    shape = 1.0 / (cv * cv)
    scale = 1.0 / (rate * shape)
    t = 0.0
    out: list[float] = []
    for _ in range(n):
        t += rng.gammavariate(shape, scale)
        out.append(t)
    return out


# ---- workloads (pure) ---------------------------------------------------------------------
_WORDS = ["the", "system", "answers", "each", "question", "about", "travel", "plans", "weather", "reports", "and", "recipes", "while", "a", "careful", "reader", "checks", "every", "claim", "against", "the", "source", "material", "before", "writing", "a", "short", "summary", "for", "the", "team", "meeting", "on", "monday", "morning", "because", "deadlines", "move", "quickly", "and", "clear", "notes", "help", "people", "decide", "what", "to", "build", "next", "in", "the", "project", "including", "tests", "benchmarks", "documentation", "and", "small", "examples", "that", "show", "how", "the", "client", "sends", "requests", "over", "a", "network", "with", "real", "delay", "bandwidth", "limits", "and", "occasional", "packet", "loss", "so", "latency", "numbers", "reflect", "what", "users", "would", "see", "in", "production", "rather", "than", "on", "a", "quiet", "laptop"]


def zipf_indices(n: int, distinct: int, s: float, rng: random.Random) -> list[int]:
    """``n`` draws from ranks ``0..distinct-1`` with P(k) proportional to 1/(k+1)**s: a few
    prompts asked often, a long tail asked once (web queries and chat prompts: s near 1)."""
    if distinct < 1 or n < 0:
        raise ValueError(f"need distinct >= 1 and n >= 0, got {distinct}, {n}")
    weights = [1.0 / (k + 1) ** s for k in range(distinct)]
    return rng.choices(range(distinct), weights=weights, k=n)


def repeat_indices(n: int, repeat_rate: float, s: float, rng: random.Random) -> list[int]:
    """A seeded workload of ``n`` prompt indices in which exactly ``round(n * repeat_rate)``
    are repeats of a prompt asked earlier, the repeated prompt drawn with Zipf weights over
    the prompts seen so far (popular ones come back most). The first ask is always new, and
    repeats are spread through the run (not all at the end), so a cache sees its hit rate
    from the start. Distinct prompts: ``n - repeats`` (indices ``0..distinct-1``)."""
    if n < 0 or not 0.0 <= repeat_rate < 1.0:
        raise ValueError(f"need n >= 0 and 0 <= repeat_rate < 1, got {n}, {repeat_rate}")
    repeats = round(n * repeat_rate)
    if n and repeats >= n:
        repeats = n - 1
    slots = set(rng.sample(range(1, n), repeats)) if n > 1 else set()
    out: list[int] = []
    fresh = 0
    for i in range(n):
        if i in slots:
            out.append(zipf_indices(1, fresh, s, rng)[0])
        else:
            out.append(fresh)
            fresh += 1
    return out


def readable_text(n_words: int, rng: random.Random) -> str:
    """Sentence-shaped English-like text of ``n_words`` words (tokenizes like prose)."""
    words: list[str] = []
    while len(words) < n_words:
        length = min(rng.randint(6, 18), n_words - len(words))
        sentence = [rng.choice(_WORDS) for _ in range(length)]
        sentence[0] = sentence[0].capitalize()
        words.extend(sentence[:-1])
        words.append(sentence[-1] + ".")
    return " ".join(words)


def long_prompt(n_chars: int, rng: random.Random) -> str:
    """A readable prompt of about ``n_chars`` characters (tens of thousands for long-context)."""
    text = readable_text(max(1, n_chars // 6), rng)
    return text[:n_chars]


@dataclass(frozen=True)
class LengthModel:
    """Lognormal prompt and output lengths (words / tokens), clipped. The defaults put the
    median prompt near 150 words with a long tail and the median answer near 48 tokens, the
    heavy-tailed shape of chat traces such as ShareGPT (Zheng et al., LMSYS-Chat-1M, 2023)."""

    prompt_median_words: float = 150.0
    prompt_sigma: float = 1.0
    prompt_max_words: int = 3000     # ~3.5k tokens: fits the 8k-context profiles with an answer
    output_median_tokens: float = 48.0
    output_sigma: float = 0.8
    output_max_tokens: int = 512

    def sample(self, rng: random.Random) -> tuple[int, int]:
        words = rng.lognormvariate(math.log(self.prompt_median_words), self.prompt_sigma)
        out = rng.lognormvariate(math.log(self.output_median_tokens), self.output_sigma)
        return (min(self.prompt_max_words, max(3, round(words))),
                min(self.output_max_tokens, max(1, round(out))))


def mixed_requests(n: int, rng: random.Random, stream: bool = False,
                   lengths: LengthModel | None = None) -> list[ChatRequest]:
    model = lengths or LengthModel()
    out = []
    for _ in range(n):
        words, max_tokens = model.sample(rng)
        out.append(ChatRequest(messages=[{"role": "user", "content": readable_text(words, rng)}],
                               max_tokens=max_tokens, stream=stream))
    return out


# ---- runners (I/O) ------------------------------------------------------------------------
async def _send(ctx: Context, driver: Driver, request: ChatRequest,
                scheduled: float | None) -> RequestRecord:
    try:
        return await driver(request, scheduled)
    except Exception as exc:  # a driver bug must show up as a failure row, not kill the run
        return RequestRecord(variant="?", trace_id=new_trace_id(), start_s=ctx.now_s(),
                             latency_ms=0.0, error_kind=f"harness:{type(exc).__name__}",
                             extra={"error": _redacted(str(exc))[:300]})


def distinct_for(request: ChatRequest, variant: str) -> ChatRequest:
    """The same request with a short variant tag in front of its first text message, so a
    server's prefix cache cannot hand the second variant the first one's prefill."""
    messages = [dict(m) for m in request.messages]
    for message in messages:
        if isinstance(message.get("content"), str):
            message["content"] = f"[{variant}] {message['content']}"
            break
    return dataclasses.replace(request, messages=messages)


def run_interleaved(ctx: Context, variants: Mapping[str, Driver],
                    requests: Sequence[ChatRequest], warmup: int = 2, distinct: bool = True
                    ) -> dict[str, list[RequestRecord]]:
    """A B A B ...: one request at a time, each through every variant, order flipped each
    round. The first ``warmup`` rounds are sent and dropped. With ``distinct`` (default) each
    variant's copy of a request is tagged (:func:`distinct_for`) so server-side prefix caching
    cannot favour whichever variant goes second; repeats *within* a variant stay repeats."""
    names = list(variants)
    records: dict[str, list[RequestRecord]] = {name: [] for name in names}

    async def go() -> None:
        for i, request in enumerate([*requests[:warmup], *requests]):
            order = names if i % 2 == 0 else names[::-1]
            for name in order:
                sent = distinct_for(request, name) if distinct else request
                record = await _send(ctx, variants[name], sent, None)
                record.variant = name
                if i >= warmup:
                    records[name].append(record)

    ctx.run(go())
    return records


def run_closed_loop(ctx: Context, driver: Driver, requests: Sequence[ChatRequest],
                    concurrency: int) -> list[RequestRecord]:
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency}")
    queue = list(reversed(requests))
    out: list[RequestRecord] = []

    async def worker() -> None:
        while queue:
            out.append(await _send(ctx, driver, queue.pop(), None))

    async def go() -> None:
        await asyncio.gather(*(worker() for _ in range(concurrency)))

    ctx.run(go())
    return out


async def open_loop(ctx: Context, driver: Driver, requests: Sequence[ChatRequest],
                    arrivals: Sequence[float], max_in_flight: int = 2000
                    ) -> list[RequestRecord]:
    """Send ``requests[i]`` at ``arrivals[i]`` seconds from now. Requests that would exceed
    ``max_in_flight`` are recorded as ``client_overload`` failures instead of being delayed
    (delaying them would be the coordinated omission this loop exists to avoid)."""
    if len(arrivals) != len(requests):
        raise ValueError("one arrival time per request is required")
    start = time.perf_counter()
    tasks: list[asyncio.Task[RequestRecord]] = []
    overload: list[RequestRecord] = []
    in_flight = 0

    async def one(request: ChatRequest, scheduled: float) -> RequestRecord:
        nonlocal in_flight
        in_flight += 1
        try:
            return await _send(ctx, driver, request, scheduled)
        finally:
            in_flight -= 1

    for request, at in zip(requests, arrivals, strict=True):
        scheduled = start + at
        delay = scheduled - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        if in_flight >= max_in_flight:
            overload.append(RequestRecord(variant="?", trace_id=new_trace_id(),
                                          start_s=scheduled - ctx.epoch, latency_ms=0.0,
                                          error_kind="client_overload"))
            continue
        tasks.append(asyncio.create_task(one(request, scheduled)))
    return [*(await asyncio.gather(*tasks)), *overload]


def run_open_loop(ctx: Context, driver: Driver, requests: Sequence[ChatRequest],
                  arrivals: Sequence[float]) -> list[RequestRecord]:
    return ctx.run(open_loop(ctx, driver, requests, arrivals))


def run_sweep(ctx: Context, driver: Driver, rates: Sequence[float], per_rate: int,
              make_requests: Any, rng: random.Random) -> list[dict[str, Any]]:
    """Open loop at each rate in turn; returns one point per rate with its summary."""
    from .stats import summarize

    points = []
    for rate in rates:
        requests = make_requests(per_rate)
        records = run_open_loop(ctx, driver, requests, poisson_arrivals(rate, per_rate, rng))
        summary = summarize(records)
        ctx.progress(f"  sweep {rate:g} req/s: p50 "
                     f"{summary['latency_ms'].get('p50', float('nan')):.0f} ms, "
                     f"p99 {summary['latency_ms'].get('p99', float('nan')):.0f} ms, "
                     f"{summary['n_failed']} failed")
        points.append({"rate": rate, "records": records, "summary": summary})
    return points


async def measure_scheduler_overhead(n: int = 500, rate: float = 500.0) -> dict[str, float]:
    """The harness's own cost: how late the open loop sends when the request does nothing."""
    from .stats import percentile

    rng = random.Random(1)
    arrivals = poisson_arrivals(rate, n, rng)
    lags: list[float] = []
    start = time.perf_counter()

    async def noop(scheduled: float) -> None:
        lags.append((time.perf_counter() - scheduled) * 1000.0)

    tasks = []
    for at in arrivals:
        delay = start + at - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(noop(start + at)))
    await asyncio.gather(*tasks)
    return {"n": float(n), "lag_p50_ms": percentile(lags, 50), "lag_p99_ms": percentile(lags, 99)}


def _redacted(text: str) -> str:
    from llmclient._redact import redact_text

    return redact_text(text)
