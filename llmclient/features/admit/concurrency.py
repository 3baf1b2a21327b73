"""Adaptive concurrency for servers that queue instead of refusing (pure decisions).

Self-hosted servers (vLLM, SGLang, llama.cpp) send no rate-limit headers: past their knee they
accept every call and queue it, so a batch job pushes interactive calls' time to first token
up without ever seeing a 429. AIMD (additive increase, multiplicative decrease; Jacobson's
congestion avoidance, as in Netflix's concurrency-limits) keeps the calls in flight per origin
under a limit learned from latency alone:

* each answer gives a sample: the server's own queue time (``Server-Timing: queue;dur=``)
  where it reports one, else the stream's time to first token;
* the baseline is the lowest sample seen, forgetting slowly (it drifts up 1% every
  :data:`FORGET_EVERY` samples, so a server that became slower for good is relearned);
* a sample above ``tolerance`` x baseline is congestion: the limit is cut by ``backoff``, at
  most once per round of calls in flight (one cut per congestion event, not one per call);
* otherwise, while the limit is in use, it grows by one per round (``1 / limit`` per call).

The decision is :func:`observe`; the gate that holds calls at the limit is ``gate.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

__all__ = ["AdaptiveConfig", "AdaptiveLimit", "adaptive_config", "observe"]

FORGET_EVERY = 50


@dataclass(frozen=True, slots=True)
class AdaptiveConfig:
    initial: int = 4
    minimum: int = 1
    maximum: int = 256
    tolerance: float = 2.0  # a sample this many times the baseline is congestion
    backoff: float = 0.75  # the limit's cut on congestion

    def __post_init__(self) -> None:
        if not 1 <= self.minimum <= self.initial <= self.maximum:
            raise ValueError(f"adaptive concurrency needs 1 <= minimum <= initial <= maximum, got "
                             f"{self.minimum}, {self.initial}, {self.maximum}")
        if not self.tolerance > 1.0 or not 0.0 < self.backoff < 1.0:
            raise ValueError(f"adaptive concurrency needs tolerance > 1 and 0 < backoff < 1, got "
                             f"{self.tolerance}, {self.backoff}")


@dataclass(frozen=True, slots=True)
class AdaptiveLimit:
    value: float  # calls allowed in flight (its floor is the gate's limit)
    baseline_ms: float | None = None
    since_cut: int = 0  # samples since the last cut
    samples: int = 0
    cuts: int = 0
    reason: str = "initial"

    @property
    def allowed(self) -> int:
        return max(1, int(self.value))


def adaptive_config(value: Any) -> AdaptiveConfig | None:
    """``concurrency=`` as the client takes it: None/False (off), True or "adaptive" (the
    defaults), an :class:`AdaptiveConfig`, or a dict of its fields."""
    if value is None or value is False:
        return None
    if value is True or value == "adaptive":
        return AdaptiveConfig()
    if isinstance(value, AdaptiveConfig):
        return value
    if isinstance(value, dict):
        return AdaptiveConfig(**value)
    raise ValueError(f"concurrency must be None, 'adaptive', True, a dict or an AdaptiveConfig, got {value!r}")


def observe(config: AdaptiveConfig, limit: AdaptiveLimit, sample_ms: float, in_flight: int) -> AdaptiveLimit:
    """The limit after one answer's latency sample, with ``in_flight`` calls (this one included)."""
    if not sample_ms >= 0.0:  # NaN or negative: no information
        return limit
    samples = limit.samples + 1
    baseline = limit.baseline_ms
    if baseline is not None and samples % FORGET_EVERY == 0:
        baseline *= 1.01
    baseline = sample_ms if baseline is None else min(baseline, sample_ms)
    since = limit.since_cut + 1
    floor = max(baseline, 1.0)  # below a millisecond, noise is larger than the signal
    if sample_ms > config.tolerance * floor and since >= limit.allowed:
        value = max(float(config.minimum), limit.value * config.backoff)
        return replace(limit, value=value, baseline_ms=baseline, since_cut=0, samples=samples, cuts=limit.cuts + 1,
                       reason=f"cut: {sample_ms:.0f} ms > {config.tolerance:g} x baseline {floor:.0f} ms")
    value = limit.value
    if sample_ms <= config.tolerance * floor and in_flight >= limit.allowed:
        value = min(float(config.maximum), value + 1.0 / limit.value)
        reason = "grow: the limit is in use and the latency is at its baseline"
    else:
        reason = limit.reason
    return replace(limit, value=value, baseline_ms=baseline, since_cut=since, samples=samples, reason=reason)
