"""Prometheus text exposition (format 0.0.4) of the engine's stats and the HTTP counters.

GPU figures come from NVML (pynvml, the ``gpu`` extra) only when a GPU is present; when none
is, the series are absent rather than zero, so a dashboard cannot mistake "no GPU" for "idle".
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from .engine.base import EngineStats

__all__ = ["GpuSample", "HttpCounters", "render_metrics", "sample_gpu"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


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


def _metric(lines: list[str], name: str, kind: str, help_: str, value: float | None) -> None:
    if value is None:
        return
    lines += [f"# HELP {name} {help_}", f"# TYPE {name} {kind}", f"{name} {_num(value)}"]


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def render_metrics(
    stats: EngineStats, http: HttpCounters, gpus: list[GpuSample] | None, engine_ready: bool
) -> str:
    """The /metrics body (pure)."""
    lines: list[str] = []
    m = lines
    _metric(m, "llm_engine_ready", "gauge", "1 once the model is loaded", int(engine_ready))
    _metric(m, "llm_requests_running", "gauge", "Sequences in the running batch", stats.running)
    _metric(m, "llm_requests_waiting", "gauge", "Requests waiting for admission", stats.waiting)
    _metric(m, "llm_kv_blocks_used", "gauge", "KV cache blocks in use", stats.kv_blocks_used)
    _metric(m, "llm_kv_blocks_total", "gauge", "KV cache blocks in total", stats.kv_blocks_total)
    usage = stats.kv_blocks_used / stats.kv_blocks_total if stats.kv_blocks_total else None
    _metric(m, "llm_kv_cache_usage_ratio", "gauge", "Fraction of KV blocks in use", usage)
    _metric(m, "llm_prefix_cache_queries_total", "counter", "Prefix cache lookups (blocks)",
            stats.prefix_cache_queries)
    _metric(m, "llm_prefix_cache_hits_total", "counter", "Prefix cache hits (blocks)",
            stats.prefix_cache_hits)
    rate = stats.prefix_cache_hits / stats.prefix_cache_queries if stats.prefix_cache_queries else None
    _metric(m, "llm_prefix_cache_hit_ratio", "gauge", "Prefix cache hits / queries", rate)
    _metric(m, "llm_prompt_tokens_total", "counter", "Prompt tokens processed",
            stats.prompt_tokens_total)
    _metric(m, "llm_generation_tokens_total", "counter", "Tokens generated",
            stats.generation_tokens_total)
    _metric(m, "llm_preemptions_total", "counter", "Sequences preempted", stats.preemptions_total)
    for key, value in sorted(stats.extra.items()):
        _metric(m, f"llm_{key}", "gauge", f"Engine figure {key}", value)
    _render_http(lines, http)
    _render_gpu(lines, stats, gpus)
    return "\n".join(lines) + "\n"


def _render_http(lines: list[str], http: HttpCounters) -> None:
    _metric(lines, "http_requests_in_flight", "gauge", "HTTP requests being served", http.in_flight)
    for name, help_, keep in (
        ("http_requests_total", "HTTP responses by status", lambda s: True),
        ("http_errors_total", "HTTP error responses (>= 400) by status", lambda s: s >= 400),
    ):
        lines += [f"# HELP {name} {help_}", f"# TYPE {name} counter"]
        for status, count in sorted(http.requests_by_status.items()):
            if keep(status):
                lines.append(f'{name}{{status="{status}"}} {count}')


def _render_gpu(lines: list[str], stats: EngineStats, gpus: list[GpuSample] | None) -> None:
    if gpus:
        series = (
            ("gpu_memory_used_bytes", "GPU memory in use", lambda g: g.memory_used_bytes),
            ("gpu_memory_total_bytes", "GPU memory in total", lambda g: g.memory_total_bytes),
            ("gpu_utilization_percent", "GPU utilisation (NVML)", lambda g: g.utilization_pct),
        )
        for name, help_, get in series:
            lines += [f"# HELP {name} {help_}", f"# TYPE {name} gauge"]
            for g in gpus:
                lines.append(f'{name}{{gpu="{g.index}",name="{_label(g.name)}"}} {_num(get(g))}')
        return
    # An engine may know its device figures without NVML (e.g. torch.cuda); use them if so.
    _metric(lines, "gpu_memory_used_bytes", "gauge", "GPU memory in use", stats.gpu_memory_used_bytes)
    _metric(lines, "gpu_memory_total_bytes", "gauge", "GPU memory in total",
            stats.gpu_memory_total_bytes)
    _metric(lines, "gpu_utilization_percent", "gauge", "GPU utilisation", stats.gpu_utilization_pct)
