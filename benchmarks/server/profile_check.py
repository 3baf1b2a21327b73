"""Check that the simulated engine reproduces a profile's figures (no HTTP: the engine alone).

    python -m benchmarks.server.profile_check --profile h100-8b
        low load, one request at a time: measured TTFT of a 256-token prompt and time per output
        token, next to the profile's target figures and its cost model's prediction.
    python -m benchmarks.server.profile_check --profile a100-175b --sweep
        open-loop Poisson request-rate sweep with short outputs: p50/p99 latency and mean batch
        per rate, so the knee is visible. ``--virtual`` runs the same sweep on a simulated clock
        (instant and deterministic) instead of real time.

Cold start is skipped (``cold_start_s=0``): it is a one-off, checked by the server's /health.
Every prompt is fresh random token ids so the prefix cache never hides prefill cost.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import random
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass

from .engine.base import EngineOverloaded, EngineRequest
from .engine.scheduler import Scheduler
from .engine.sim import SimEngine
from .profiles import Profile, load_profile
from .tokenizer import VOCAB_SIZE

__all__ = [
    "LowLoadResult", "SweepPoint", "low_load", "main", "percentile", "sweep", "virtual_sweep",
]

# Real time costs wall-clock seconds per rate, so it takes fewer, longer points than the
# virtual sweep (a short window hides queue growth past the knee).
REAL_RATES = (10.0, 20.0, 30.0, 35.0, 40.0, 50.0)
VIRTUAL_RATES = (5.0, 10.0, 13.0, 15.0, 20.0, 25.0, 30.0, 35.0, 38.0, 40.0, 45.0, 50.0, 60.0)


@dataclass(frozen=True)
class LowLoadResult:
    ttft_ms: float           # medians over the requests
    tpot_ms: float
    requests: int


@dataclass(frozen=True)
class SweepPoint:
    rate: float
    completed: int
    rejected: int
    p50_ms: float
    p99_ms: float
    mean_batch: float


def _prompt(rng: random.Random, n: int) -> tuple[int, ...]:
    return tuple(rng.randrange(VOCAB_SIZE) for _ in range(n))


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in [0, 100]); NaN for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q / 100 * len(ordered)) - 1))]


async def low_load(profile: Profile, *, requests: int = 8, prompt_tokens: int = 256,
                   max_tokens: int = 32, seed: int = 0) -> LowLoadResult:
    """Send requests one at a time and time them as a client of the engine would."""
    engine = SimEngine(profile, cold_start_s=0.0, rng=random.Random(seed))
    await engine.start()
    rng = random.Random(seed)
    loop = asyncio.get_running_loop()
    ttfts: list[float] = []
    tpots: list[float] = []
    try:
        for i in range(requests):
            req = EngineRequest(f"check-{i}", _prompt(rng, prompt_tokens), max_tokens,
                                temperature=0.0)
            t0 = loop.time()
            stamps: list[float] = []
            async for event in engine.submit(req):
                stamps.extend(loop.time() for _ in event.token_ids)
            ttfts.append((stamps[0] - t0) * 1000)
            if len(stamps) > 1:
                tpots.append((stamps[-1] - stamps[0]) * 1000 / (len(stamps) - 1))
            await asyncio.sleep(0.01)   # idle gap: each request meets an idle engine
    finally:
        await engine.stop()
    return LowLoadResult(statistics.median(ttfts), statistics.median(tpots), requests)


def _arrivals(rate: float, duration_s: float, rng: random.Random) -> list[float]:
    out, t = [], rng.expovariate(rate)
    while t < duration_s:
        out.append(t)
        t += rng.expovariate(rate)
    return out


async def _sweep_point(profile: Profile, rate: float, duration_s: float, prompt_tokens: int,
                       max_tokens: int, seed: int) -> SweepPoint:
    engine = SimEngine(profile, cold_start_s=0.0, rng=random.Random(seed))
    await engine.start()
    rng = random.Random(seed)
    loop = asyncio.get_running_loop()
    latencies: list[float] = []
    batches: list[int] = []
    rejected = 0

    async def one(i: int, prompt: tuple[int, ...]) -> None:
        nonlocal rejected
        t0 = loop.time()
        try:
            stream = engine.submit(EngineRequest(f"s{i}", prompt, max_tokens))
        except EngineOverloaded:
            rejected += 1
            return
        async for _ in stream:
            if engine.last_plan is not None:
                batches.append(engine.last_plan.batch_size)
        latencies.append((loop.time() - t0) * 1000)

    start = loop.time()
    tasks = []
    for i, at in enumerate(_arrivals(rate, duration_s, rng)):
        prompt = _prompt(rng, prompt_tokens)
        await asyncio.sleep(max(0.0, start + at - loop.time()))
        tasks.append(asyncio.create_task(one(i, prompt)))
    await asyncio.gather(*tasks)
    await engine.stop()
    return SweepPoint(rate, len(latencies), rejected, percentile(latencies, 50),
                      percentile(latencies, 99), statistics.fmean(batches) if batches else 0.0)


async def sweep(profile: Profile, rates: Sequence[float], *, duration_s: float = 5.0,
                prompt_tokens: int = 64, max_tokens: int = 8, seed: int = 0) -> list[SweepPoint]:
    """Open-loop Poisson arrivals into a real-time engine, one fresh engine per rate."""
    return [await _sweep_point(profile, rate, duration_s, prompt_tokens, max_tokens, seed)
            for rate in rates]


def virtual_sweep(profile: Profile, rates: Sequence[float], *, duration_s: float = 20.0,
                  prompt_tokens: int = 64, max_tokens: int = 8, seed: int = 0,
                  ) -> list[SweepPoint]:
    """The same sweep on a simulated clock: the scheduler alone, instant and deterministic."""
    points = []
    for rate in rates:
        rng = random.Random(seed)
        sched = Scheduler(profile, rng=random.Random(seed))
        arrivals = _arrivals(rate, duration_s, rng)
        started: dict[int, float] = {}
        latencies: list[float] = []
        batches: list[int] = []
        rejected, i, now = 0, 0, 0.0
        while i < len(arrivals) or sched.has_work():
            while i < len(arrivals) and arrivals[i] <= now:
                req = EngineRequest(f"s{i}", _prompt(rng, prompt_tokens), max_tokens)
                try:
                    started[sched.add(req, arrivals[i])] = arrivals[i]
                except EngineOverloaded:
                    rejected += 1
                i += 1
            plan = sched.step(now)
            if plan.idle:
                due = [t for t in (plan.wake_at, arrivals[i] if i < len(arrivals) else None)
                       if t is not None]
                now = max(now, min(due))
                continue
            now = plan.end
            batches.append(plan.batch_size)
            latencies.extend((now - started[o.seq_id]) * 1000
                             for o in plan.outputs if o.finish_reason is not None)
        points.append(SweepPoint(rate, len(latencies), rejected, percentile(latencies, 50),
                                 percentile(latencies, 99),
                                 statistics.fmean(batches) if batches else 0.0))
    return points


def _report_low_load(profile: Profile, result: LowLoadResult, prompt_tokens: int) -> None:
    rows = [("TTFT", result.ttft_ms, profile.targets.get(f"ttft_ms_{prompt_tokens}"),
             profile.predicted_ttft_ms(prompt_tokens)),
            ("time per output token", result.tpot_ms, profile.targets.get("tpot_ms"),
             profile.predicted_tpot_ms(1))]
    print(f"profile {profile.name}: {result.requests} requests one at a time, "
          f"{prompt_tokens}-token prompts (medians, ms)")
    for label, measured, target, predicted in rows:
        vs = ""
        if target:
            vs = f"  target {target:7.1f}  ({(measured - target) / target * 100:+.1f}%)"
        print(f"  {label:22s} measured {measured:7.1f}  model {predicted:7.1f}{vs}")


def _report_sweep(points: list[SweepPoint], label: str) -> None:
    print(f"{label}\n  {'req/s':>6} {'done':>5} {'429':>4} {'p50 ms':>8} {'p99 ms':>8} {'batch':>6}")
    for p in points:
        print(f"  {p.rate:6.1f} {p.completed:5d} {p.rejected:4d} {p.p50_ms:8.0f} "
              f"{p.p99_ms:8.0f} {p.mean_batch:6.1f}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.server.profile_check",
                                     description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--profile", default="h100-8b", help="profile name or JSON path")
    parser.add_argument("--sweep", action="store_true", help="request-rate sweep")
    parser.add_argument("--virtual", action="store_true", help="sweep on a simulated clock")
    parser.add_argument("--rates", default=None,
                        help="comma-separated request rates for --sweep (req/s; default "
                             f"{','.join(f'{r:g}' for r in REAL_RATES)} real, "
                             f"{','.join(f'{r:g}' for r in VIRTUAL_RATES)} virtual)")
    parser.add_argument("--duration", type=float, default=None,
                        help="seconds of arrivals per rate (default 5 real, 20 virtual)")
    parser.add_argument("--prompt-tokens", type=int, default=None,
                        help="prompt length (default 256 low-load, 64 sweep)")
    parser.add_argument("--max-tokens", type=int, default=None,
                        help="output tokens per request (default 32 low-load, 8 sweep)")
    parser.add_argument("--requests", type=int, default=8, help="low-load request count")
    args = parser.parse_args(argv)
    try:
        profile = load_profile(args.profile)
        rates = (VIRTUAL_RATES if args.virtual else REAL_RATES) if args.rates is None else [
            float(r) for r in args.rates.split(",") if r.strip()]
    except ValueError as exc:
        parser.error(str(exc))
    if not args.sweep:
        prompt = args.prompt_tokens or 256
        result = asyncio.run(low_load(profile, requests=args.requests, prompt_tokens=prompt,
                                      max_tokens=args.max_tokens or 32))
        _report_low_load(profile, result, prompt)
        return 0
    kw = {"prompt_tokens": args.prompt_tokens or 64, "max_tokens": args.max_tokens or 8}
    t0 = time.perf_counter()
    if args.virtual:
        points = virtual_sweep(profile, rates, duration_s=args.duration or 20.0, **kw)
        label = "virtual clock"
    else:
        points = asyncio.run(sweep(profile, rates, duration_s=args.duration or 5.0, **kw))
        label = "real time"
    _report_sweep(points, f"profile {profile.name}: open-loop Poisson sweep, {label}, "
                  f"{kw['prompt_tokens']}-token prompts, {kw['max_tokens']} output tokens "
                  f"({time.perf_counter() - t0:.1f} s); targets {profile.targets}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
