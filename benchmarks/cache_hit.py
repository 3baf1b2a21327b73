"""Cost of a cache hit, per backend: ``python -m benchmarks.cache_hit [--n 5000] [--json]``.

Two layers are timed, each as the median (and p90/p99) over ``--n`` hits after a warm-up:

* ``backend``: ``ResponseCache.plan_for`` (policy + SHA-256 key) -> ``lookup`` (backend get +
  orjson decode) -> ``replay_response``: everything the client does for a hit except build
  response objects.
* ``client``: ``client.chat.completions.create(...)`` answered from the cache (the reference
  server is started once to prime the entry, then every timed call is a hit).

``--zipf``: a Zipf-distributed workload (``--requests`` calls over ``--prompts`` distinct
prompts, exponent ``--zipf-s``, seeded) through the client against the reference server
(``--profile``, default h100-8b: simulated model time), each backend vs no cache: hit rate and
end-to-end latency p50/p90/p99 in milliseconds.

Targets: memory <= 50 us, SQLite <= 1 ms, Redis on loopback <= 1 ms at p50.
Redis is a private ``redis-server`` on a free loopback port (skipped if the binary is missing).
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import orjson

from llmclient.cache import RedisBackend, ResponseCache, replay_response, scope_hash

from .fixtures.redis import redis_server
from .harness.load import zipf_indices
from .harness.stats import percentile

TARGET_US = {"memory": 50.0, "sqlite": 1000.0, "redis": 1000.0}

# A typical short chat answer (~1 KB stored), the size class a classification/extraction
# workload caches.
RESPONSE: dict[str, Any] = {
    "id": "chatcmpl-bench", "object": "chat.completion", "created": 1764700000, "model": "bench",
    "system_fingerprint": "fp_bench",
    "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                 "message": {"role": "assistant", "content": "word " * 150}}],
    "usage": {"prompt_tokens": 120, "completion_tokens": 150, "total_tokens": 270},
}
BODY: dict[str, Any] = {
    "model": "sim-zero", "temperature": 0,  # the zero profile's model
    "messages": [{"role": "system", "content": "Classify the sentiment. " * 20},
                 {"role": "user", "content": "I loved this film, the ending was perfect."}],
}


def time_us(fn: Callable[[], Any], n: int, warmup: int = 200) -> list[float]:
    for _ in range(warmup):
        fn()
    samples = []
    clock = time.perf_counter_ns
    for _ in range(n):
        start = clock()
        fn()
        samples.append((clock() - start) / 1000.0)
    return samples


def summary(samples: list[float]) -> dict[str, float]:
    return {"p50_us": percentile(samples, 50), "p90_us": percentile(samples, 90),
            "p99_us": percentile(samples, 99), "n": float(len(samples))}


def bench_backend_layer(cache: ResponseCache, n: int) -> dict[str, float]:
    scope = scope_hash("sk-bench")
    plan = cache.plan_for(base_url="http://127.0.0.1:1/v1", path="/chat/completions",
                          body=BODY, scope=scope)
    assert plan is not None
    cache.store_response(plan, RESPONSE)

    def hit() -> None:
        p = cache.plan_for(base_url="http://127.0.0.1:1/v1", path="/chat/completions",
                           body=BODY, scope=scope)
        entry = cache.lookup(p)
        if entry is None:
            raise RuntimeError("benchmark expected a hit")
        replay_response(entry)

    return summary(time_us(hit, n))


def bench_client_layer(spec: str | Any, n: int) -> dict[str, float] | None:
    """A hit through ``client.chat.completions.create``; None if the client or server is missing."""
    try:
        from llmclient import OpenAI

        from .harness.serverproc import start_server
    except ImportError:
        return None
    server = start_server("zero")
    try:
        client = OpenAI(base_url=server.base_url, api_key="sk-bench", cache=spec)
        client.chat.completions.create(**BODY)  # primes the entry (a miss)

        def hit() -> None:
            response = client.chat.completions.create(**BODY)
            if response.timings.cache != "hit":
                raise RuntimeError(f"benchmark expected a hit, got {response.timings.cache!r}")

        result = summary(time_us(hit, n))
        client.close()
        return result
    finally:
        server.stop()


def zipf_workload(requests: int, prompts: int, s: float, seed: int) -> list[int]:
    """Prompt indices drawn with P(k) proportional to 1/k^s (k = 1..prompts)."""
    return zipf_indices(requests, prompts, s, random.Random(seed))


def bench_zipf(specs: dict[str, Callable[[], Any]], args: argparse.Namespace) -> dict[str, Any]:
    from llmclient import OpenAI

    from .harness.serverproc import start_server

    order = zipf_workload(args.requests, args.prompts, args.zipf_s, args.seed)
    server = start_server(args.profile)
    model = _profile_model(args.profile)
    out: dict[str, Any] = {"requests": args.requests, "prompts": args.prompts, "s": args.zipf_s,
                           "profile": args.profile}
    try:
        for name, make in {"none": lambda: None, **specs}.items():
            run_tag = f"{name}-{time.time_ns()}"  # fresh prompts per run: every cache starts cold
            latencies, hits = [], 0
            with OpenAI(base_url=server.base_url, api_key="sk-bench", cache=make()) as client:
                for k in order:
                    start = time.perf_counter()
                    response = client.chat.completions.create(
                        model=model, temperature=0, max_tokens=args.max_tokens,
                        messages=[{"role": "user", "content": f"question {k} of run {run_tag}"}])
                    latencies.append((time.perf_counter() - start) * 1000.0)
                    hits += response.timings.cache == "hit"
            out[name] = {"hit_rate": hits / len(order), "p50_ms": percentile(latencies, 50),
                         "p90_ms": percentile(latencies, 90), "p99_ms": percentile(latencies, 99),
                         "mean_ms": sum(latencies) / len(latencies)}
    finally:
        server.stop()
    return out


def _profile_model(profile: str) -> str:
    from pathlib import Path

    path = Path(__file__).parent / "server" / "profiles" / f"{profile}.json"
    return str(orjson.loads(path.read_bytes())["model"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=5000, help="timed hits per backend")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--no-client", action="store_true", help="backend layer only")
    parser.add_argument("--zipf", action="store_true", help="run the Zipf workload instead")
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--prompts", type=int, default=100)
    parser.add_argument("--zipf-s", type=float, default=1.1)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--max-tokens", type=int, default=16)
    parser.add_argument("--profile", default="h100-8b")
    args = parser.parse_args(argv)
    if args.zipf:
        return _main_zipf(args)
    results: dict[str, Any] = {"python": sys.version.split()[0]}
    with tempfile.TemporaryDirectory() as tmp, redis_server() as redis_url:
        specs: dict[str, Callable[[], Any]] = {
            "memory": lambda: "memory",
            "sqlite": lambda: f"sqlite://{tmp}/bench.db",
        }
        if redis_url is not None:
            specs["redis"] = lambda: RedisBackend(redis_url, prefix=f"bench-{time.time_ns()}:")
        for name, make in specs.items():
            cache = ResponseCache(make())
            row: dict[str, Any] = {"backend_layer": bench_backend_layer(cache, args.n),
                                   "target_p50_us": TARGET_US[name]}
            cache.clear()
            cache.close()
            if not args.no_client:
                row["client_layer"] = bench_client_layer(make(), max(200, args.n // 5))
            results[name] = row
    if args.json:
        print(orjson.dumps(results, option=orjson.OPT_INDENT_2).decode())
        return 0
    print(f"cache hit cost (python {results['python']}), microseconds")
    print(f"{'backend':8} {'layer':8} {'p50':>9} {'p90':>9} {'p99':>9} {'target p50':>11}")
    for name in ("memory", "sqlite", "redis"):
        if name not in results:
            print(f"{name:8} skipped (redis-server not found)")
            continue
        for layer in ("backend_layer", "client_layer"):
            s = results[name].get(layer)
            if s is None:
                continue
            print(f"{name:8} {layer.split('_')[0]:8} {s['p50_us']:9.1f} {s['p90_us']:9.1f} "
                  f"{s['p99_us']:9.1f} {results[name]['target_p50_us']:11.0f}")
    return 0


def _main_zipf(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory() as tmp, redis_server() as redis_url:
        specs: dict[str, Callable[[], Any]] = {
            "memory": lambda: "memory",
            "sqlite": lambda: f"sqlite://{tmp}/zipf.db",
        }
        if redis_url is not None:
            specs["redis"] = lambda: RedisBackend(redis_url, prefix=f"zipf-{time.time_ns()}:")
        results = bench_zipf(specs, args)
    if args.json:
        print(orjson.dumps(results, option=orjson.OPT_INDENT_2).decode())
        return 0
    print(f"Zipf workload: {results['requests']} calls over {results['prompts']} prompts, "
          f"s={results['s']}, server profile {results['profile']}; latency in ms")
    print(f"{'cache':8} {'hit rate':>8} {'p50':>9} {'p90':>9} {'p99':>9} {'mean':>9}")
    for name in ("none", "memory", "sqlite", "redis"):
        r = results.get(name)
        if r is not None:
            print(f"{name:8} {r['hit_rate']:8.1%} {r['p50_ms']:9.3f} {r['p90_ms']:9.3f} "
                  f"{r['p99_ms']:9.3f} {r['mean_ms']:9.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
