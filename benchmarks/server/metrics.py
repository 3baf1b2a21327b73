"""Prometheus text exposition (format 0.0.4) of the engine's stats and the HTTP counters,
written by ``prometheus-client`` (the ``bench`` and ``test`` extras).

GPU figures come from NVML (pynvml, the ``gpu`` extra) only when a GPU is present; when none
is, the series are absent rather than zero, so a dashboard cannot mistake "no GPU" for "idle".
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

try:
    from prometheus_client import generate_latest
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
except ImportError as exc:  # pragma: no cover - the bench/test extras install it
    raise ImportError("the reference server's /metrics needs prometheus-client: "
                      "pip install 'llmclient[bench]'") from exc

from .engine.base import EngineStats

__all__ = ["GpuSample", "HttpCounters", "render_metrics", "sample_gpu"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"  # prometheus_client.CONTENT_TYPE_LATEST


@dataclass
class HttpCounters:
    requests_by_status: Counter[int] = field(default_factory=Counter)
    in_flight: int = 0

    def record(self, status: int) -> None:
        self.requests_by_status[status] += 1


@dataclass(frozen=True)
class GpuSample:
    index: int
    name: str
    memory_used_bytes: int
    memory_total_bytes: int
    utilization_pct: float


def sample_gpu() -> list[GpuSample] | None:
    """One sample per visible GPU via NVML; None when pynvml or a GPU is absent."""
    try:
        import pynvml
    except ImportError:  # the "gpu" extra is not installed
        return None
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return None
    try:
        samples = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            mem = pynvml.nvmlDeviceGetMemoryInfo(h)
            util = pynvml.nvmlDeviceGetUtilizationRates(h)
            name = pynvml.nvmlDeviceGetName(h)
            name = name.decode() if isinstance(name, bytes) else str(name)
            samples.append(GpuSample(i, name, int(mem.used), int(mem.total), float(util.gpu)))
        return samples or None
    except pynvml.NVMLError:
        return None
    finally:
        pynvml.nvmlShutdown()


class _Families:
    """What ``prometheus_client.generate_latest`` reads: an object whose ``collect()`` yields
    metric families (a registry of one scrape's worth, built from plain data)."""

    def __init__(self, families: list[Any]) -> None:
        self._families = families

    def collect(self) -> list[Any]:
        return self._families


def _gauge(out: list[Any], name: str, help_: str, value: float | None) -> None:
    if value is not None:
        out.append(GaugeMetricFamily(name, help_, value=float(value)))


def _counter(out: list[Any], name: str, help_: str, value: float | None) -> None:
    if value is not None:
        out.append(CounterMetricFamily(name, help_, value=float(value)))


def render_metrics(
    stats: EngineStats, http: HttpCounters, gpus: list[GpuSample] | None, engine_ready: bool
) -> str:
    """The /metrics body (pure), written by ``prometheus_client`` (text format 0.0.4)."""
    m: list[Any] = []
    _gauge(m, "llm_engine_ready", "1 once the model is loaded", int(engine_ready))
    _gauge(m, "llm_requests_running", "Sequences in the running batch", stats.running)
    _gauge(m, "llm_requests_waiting", "Requests waiting for admission", stats.waiting)
    _gauge(m, "llm_kv_blocks_used", "KV cache blocks in use", stats.kv_blocks_used)
    _gauge(m, "llm_kv_blocks_total", "KV cache blocks in total", stats.kv_blocks_total)
    usage = stats.kv_blocks_used / stats.kv_blocks_total if stats.kv_blocks_total else None
    _gauge(m, "llm_kv_cache_usage_ratio", "Fraction of KV blocks in use", usage)
    _counter(m, "llm_prefix_cache_queries_total", "Prefix cache lookups (blocks)",
             stats.prefix_cache_queries)
    _counter(m, "llm_prefix_cache_hits_total", "Prefix cache hits (blocks)", stats.prefix_cache_hits)
    rate = stats.prefix_cache_hits / stats.prefix_cache_queries if stats.prefix_cache_queries else None
    _gauge(m, "llm_prefix_cache_hit_ratio", "Prefix cache hits / queries", rate)
    _counter(m, "llm_prompt_tokens_total", "Prompt tokens processed", stats.prompt_tokens_total)
    _counter(m, "llm_generation_tokens_total", "Tokens generated", stats.generation_tokens_total)
    _counter(m, "llm_preemptions_total", "Sequences preempted", stats.preemptions_total)
    for key, value in sorted(stats.extra.items()):
        _gauge(m, f"llm_{key}", f"Engine figure {key}", value)
    _http_families(m, http)
    _gpu_families(m, stats, gpus)
    return generate_latest(_Families(m)).decode()


def _http_families(out: list[Any], http: HttpCounters) -> None:
    _gauge(out, "http_requests_in_flight", "HTTP requests being served", http.in_flight)
    total = CounterMetricFamily("http_requests_total", "HTTP responses by status", labels=["status"])
    errors = CounterMetricFamily("http_errors_total", "HTTP error responses (>= 400) by status",
                                 labels=["status"])
    for status, count in sorted(http.requests_by_status.items()):
        total.add_metric([str(status)], count)
        if status >= 400:
            errors.add_metric([str(status)], count)
    out += [total, errors]


def _gpu_families(out: list[Any], stats: EngineStats, gpus: list[GpuSample] | None) -> None:
    if gpus:
        series = (
            ("gpu_memory_used_bytes", "GPU memory in use", lambda g: g.memory_used_bytes),
            ("gpu_memory_total_bytes", "GPU memory in total", lambda g: g.memory_total_bytes),
            ("gpu_utilization_percent", "GPU utilisation (NVML)", lambda g: g.utilization_pct),
        )
        for name, help_, get in series:
            family = GaugeMetricFamily(name, help_, labels=["gpu", "name"])
            for g in gpus:
                family.add_metric([str(g.index), g.name], float(get(g)))
            out.append(family)
        return
    # An engine may know its device figures without NVML (e.g. torch.cuda); use them if so.
    _gauge(out, "gpu_memory_used_bytes", "GPU memory in use", stats.gpu_memory_used_bytes)
    _gauge(out, "gpu_memory_total_bytes", "GPU memory in total", stats.gpu_memory_total_bytes)
    _gauge(out, "gpu_utilization_percent", "GPU utilisation", stats.gpu_utilization_pct)
