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
* congestion is a queue that stands through a whole round of calls (``limit`` samples, at
  least :data:`MIN_ROUND`): the
  round's LOWEST sample above ``tolerance`` x baseline (CoDel's test: the minimum over an
  interval, not one sample). A single slow sample is not evidence: a server batches in steps,
  so even an idle one makes an arriving call wait up to one step (tens of ms; measured on the
  reference server's a100-175b profile, queue samples spread 0-37 ms with 16 of 16 slots
  free), and cutting on them held a batch job to 3 calls where the server ran 16. A
  baseline below :data:`MIN_BASELINE_MS` counts as that much, for the same reason. On
  congestion the limit is cut by ``backoff``, and the answers of calls already in flight at
  the cut are not counted towards the next round (they queued under the old limit);
* otherwise, while the limit is in use, it grows by one per round (``1 / limit`` per call);
  before the first cut it doubles per round (one per call: TCP's slow start), since an
  additive climb from ``initial`` to a knee of tens of calls takes tens of rounds (measured:
  4 to 11 in 8 s on the adaptive scenario, a batch job at 58% of the best fixed cap).

A plain (non-streamed) call to a server that sends no Server-Timing gives no sample: its
latency mixes queueing with however long its answer is. vLLM, SGLang, llama.cpp and OpenAI
send none, so a job of plain calls would leave the limit at ``initial`` for good, a cap
learned from nothing. Such an answer is :func:`unsignalled`: while no sample has ever come,
the limit is lifted to ``maximum`` and says why (the gate logs it once); the first sample (a
stream's, or Server-Timing's) hands the limit back to :func:`observe`.

The decisions are :func:`observe` and :func:`unsignalled`; the gate that holds calls at the
limit is ``gate.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

__all__ = ["NO_SIGNAL", "AdaptiveConfig", "AdaptiveLimit", "adaptive_config", "observe", "unsignalled"]

NO_SIGNAL = ("no signal: plain calls to a server that sends no Server-Timing carry no queue time, so "
             "nothing is learned and calls are not held; stream the calls (their time to first token "
             "is the signal) or set a fixed cap ({'initial': N, 'maximum': N})")
FORGET_EVERY = 50
MIN_ROUND = 8  # a round is at least this many samples: the minimum of fewer is jitter too
MIN_BASELINE_MS = 25.0  # about one batching step of a large model: below it, jitter, not queueing


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
    round_n: int = 0  # samples in the current round (negative: answers of calls sent before the cut)
    round_min_ms: float | None = None  # the current round's lowest sample
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
    floor = max(baseline, MIN_BASELINE_MS)
    threshold = config.tolerance * floor
    round_n, round_min = limit.round_n + 1, limit.round_min_ms
    if round_n > 0:
        round_min = sample_ms if round_min is None else min(round_min, sample_ms)
    if round_n >= max(limit.allowed, MIN_ROUND) and round_min is not None:  # a round ends
        if round_min > threshold:
            value = max(float(config.minimum), limit.value * config.backoff)
            return replace(limit, value=value, baseline_ms=baseline, since_cut=0, samples=samples,
                           cuts=limit.cuts + 1, round_n=-max(0, in_flight - 1), round_min_ms=None,
                           reason=f"cut: a round's lowest sample {round_min:.0f} ms > {config.tolerance:g} x "
                                  f"baseline {floor:.0f} ms")
        round_n, round_min = 0, None
    value = limit.value
    if sample_ms <= threshold and in_flight >= limit.allowed:
        if limit.cuts == 0:  # slow start: until the first congestion, double per round
            value = min(float(config.maximum), value + 1.0)
            reason = "slow start: the limit is in use and the latency is at its baseline"
        else:
            value = min(float(config.maximum), value + 1.0 / limit.value)
            reason = "grow: the limit is in use and the latency is at its baseline"
    elif limit.reason == NO_SIGNAL:  # the first sample after answers that had none
        reason = "learning: samples came (streams' time to first token or Server-Timing)"
    else:
        reason = limit.reason
    return replace(limit, value=value, baseline_ms=baseline, since_cut=since, samples=samples, reason=reason,
                   round_n=round_n, round_min_ms=round_min)


def unsignalled(config: AdaptiveConfig, limit: AdaptiveLimit) -> AdaptiveLimit:
    """The limit after an answer that carried no sample: lifted to ``maximum`` while no sample
    has ever come (nothing to learn from, so nothing to hold calls back on), else unchanged
    (the samples that came decide). Pure."""
    if limit.samples:
        return limit
    return replace(limit, value=float(config.maximum), reason=NO_SIGNAL)
