"""Samples the server's Prometheus ``/metrics`` over a run (GPU memory, utilisation, queue).

Only series the server exposes are kept; a server without ``/metrics`` (or without a GPU) gives
an empty series and the report leaves the plot out instead of drawing zeros.
"""

from __future__ import annotations

import threading
import time
from typing import Any

__all__ = ["MetricsSampler", "parse_prometheus"]

# Series worth plotting over time; names from benchmarks/server/metrics.py (vLLM-like naming).
WANTED = ("gpu_memory_used_bytes", "gpu_memory_total_bytes", "gpu_utilization_percent",
          "llm_kv_cache_usage", "llm_requests_running", "llm_requests_waiting")


def parse_prometheus(text: str, wanted: tuple[str, ...] = WANTED) -> dict[str, float]:
    """Sum of each wanted metric over its label sets, from the text exposition format
    (Prometheus exposition format 0.0.4: ``name{labels} value``); NaN values are skipped."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        if "{" in line and "}" in line:
            # Label values may contain spaces, so split at the braces, not at whitespace.
            name, rest = line.split("{", 1)[0], line.rsplit("}", 1)[1]
        else:
            name, _, rest = line.partition(" ")
        if not any(name.startswith(w) for w in wanted):
            continue
        try:
            value = float(rest.strip().split()[0])
        except (ValueError, IndexError):
            continue
        if value == value:  # not NaN
            out[name] = out.get(name, 0.0) + value
    return out


class MetricsSampler:
    """Polls ``origin/metrics`` every ``interval_s`` in a daemon thread while running."""

    def __init__(self, origin: str, verify: str | bool = True, interval_s: float = 1.0) -> None:
        self.url = origin.rstrip("/") + "/metrics"
        self.verify = verify
        self.interval_s = interval_s
        self.samples: list[dict[str, Any]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._t0 = time.perf_counter()

    def available(self) -> bool:
        import httpx

        try:
            return httpx.get(self.url, verify=self.verify, timeout=3.0).status_code == 200
        except httpx.HTTPError:
            return False

    def start(self) -> MetricsSampler:
        self._thread = threading.Thread(target=self._loop, daemon=True, name="metrics-sampler")
        self._thread.start()
        return self

    def stop(self) -> list[dict[str, Any]]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)
        return self.samples

    def _loop(self) -> None:
        import httpx

        with httpx.Client(verify=self.verify, timeout=3.0) as client:
            while not self._stop.is_set():
                try:
                    values = parse_prometheus(client.get(self.url).text)
                except httpx.HTTPError:
                    values = {}
                if values:
                    self.samples.append({"t_s": time.perf_counter() - self._t0, **values})
                self._stop.wait(self.interval_s)
