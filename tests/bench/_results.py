"""A result document built from known records, as the suite would write it."""

from __future__ import annotations

import random
from typing import Any

from benchmarks.harness._scenario import RequestRecord, Row, ScenarioResult
from benchmarks.harness.report import build_result


def records(variant: str, median_ms: float, n: int = 200, seed: int = 0,
            failures: dict[int, int] | None = None,
            breakdown: dict[str, float] | None = None) -> list[RequestRecord]:
    rng = random.Random(seed)
    out = [RequestRecord(variant=variant, trace_id=f"{variant}-{i:04d}", start_s=i * 0.1,
                         latency_ms=median_ms * rng.lognormvariate(0.0, 0.3), status=200,
                         ttft_ms=median_ms / 4, output_tokens=20,
                         breakdown=dict(breakdown or {}))
           for i in range(n)]
    for status, count in (failures or {}).items():
        out += [RequestRecord(variant=variant, trace_id=f"{variant}-f{status}-{i}", start_s=0.0,
                              latency_ms=3.0, status=status, error_kind="http_error")
                for i in range(count)]
    return out


def result_doc(llmclient_median: float = 100.0, seed: int = 0) -> dict[str, Any]:
    connection = ScenarioResult(
        name="connection", description="test connection row",
        variants={"fresh-connection": records("fresh-connection", 300.0, seed=seed,
                                              breakdown={"connect": 60.0, "tls": 90.0,
                                                         "server.queue": 5.0}),
                  "llmclient": records("llmclient", llmclient_median, seed=seed + 1,
                                       failures={429: 3})},
        rows=[Row("connection: fresh -> llmclient", "fresh-connection", "llmclient")],
        notes=["200 requests per variant"])
    sweep = ScenarioResult(
        name="sweep", description="test sweep",
        variants={"llmclient@1rps": records("llmclient@1rps", 100.0, n=30, seed=seed + 2)},
        series={"points": [{"rate": r, "n": 30, "n_failed": 0,
                            "latency_ms": {"p50": p, "p99": p * 2, "n": 30}}
                           for r, p in ((1, 100), (2, 101), (4, 104), (8, 120), (16, 600))],
                "knee_rate": 8, "profile": "a100-175b"})
    skipped = ScenarioResult(name="images", description="test skip", skipped="needs preprocess")
    meta = {"created": "2026-12-02T00:00:00+00:00", "quick": True,
            "network": {"profile": "wan", "rtt_ms": {"median": 50.2, "n": 45}},
            "harness_overhead": {"n": 500.0, "lag_p50_ms": 0.5, "lag_p99_ms": 1.5},
            "gpu_samples": [{"t_s": float(t), "gpu_memory_used_bytes": 2**30 * (10 + t),
                             "gpu_utilization_percent": 50.0} for t in range(5)]}
    return build_result([connection, sweep, skipped], meta)


def quick_pass_doc(seed: int = 0) -> dict[str, Any]:
    """A quick pass's shape: a few requests per variant, interleaved; a clear win, a tie, a
    tail row with far too few samples for its p95, and the network the run measured."""
    def side(variant: str, median: float, n: int, k: int) -> list[RequestRecord]:
        return records(variant, median, n=n, seed=seed + k)

    images = ScenarioResult(
        name="images", description="12 MP photos",
        variants={"raw": side("raw", 1900.0, 5, 1),
                  "prepared": side("prepared", 480.0, 5, 2)},
        rows=[Row("images 12MP: raw upload -> prepared", "raw", "prepared",
                  technique="image preparation (12 MP photo)")])
    encoding = ScenarioResult(
        name="encoding", description="16 KB chats",
        variants={"openai": side("openai", 300.0, 6, 3), "llmclient": side("llmclient", 300.0, 6, 4)},
        rows=[Row("encoding 16 KB chat: openai -> llmclient", "openai", "llmclient",
                  technique="orjson + zstd request bodies")])
    tail = ScenarioResult(
        name="tail", description="slow replicas",
        variants={"llmclient": side("llmclient", 400.0, 8, 5),
                  "llmclient+hedge": side("llmclient+hedge", 400.0, 8, 6)},
        rows=[Row("slow replicas: llmclient -> + hedge", "llmclient", "llmclient+hedge",
                  statistic="p95", technique="hedged requests (slow replicas)", effort="option")])
    meta = {"created": "2026-12-02T00:00:00+00:00", "quick": True,
            "network": {"profile": "wan", "rtt_ms": {"median": 50.6, "n": 45},
                        "down_mbit": 48.7, "up_mbit": 19.6,
                        "target": {"rtt_ms": 50.0, "down_mbit": 50.0, "up_mbit": 20.0}},
            "harness_overhead": {"n": 500.0, "lag_p50_ms": 0.4, "lag_p99_ms": 1.2}}
    return build_result([images, encoding, tail], meta)
