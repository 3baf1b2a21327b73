"""Per-replica health: in-flight calls, EWMAs of time to first token and of the server's queue
time, an error rate, and outlier ejection with a growing cooldown and half-open probes
(Envoy's outlier detection, in small).

* A connection that cannot be made ejects the replica at once; a reset, a timeout or a 5xx
  counts, and ``consecutive`` of them in a row eject it.
* An ejected replica gets no calls for ``cooldown x 2^(ejections-1)`` (capped), then one
  probe call (half-open): its success brings the replica back, its failure ejects it again
  for longer. Health comes back through traffic, not through probes of our own.

Pure: every function takes ``now`` (seconds, any monotonic clock); no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["Ejection", "Health", "State", "on_failure", "on_success", "state"]

State = Literal["up", "probe", "down"]

EWMA_ALPHA = 0.2  # weight of the newest sample: ~the last 10 calls matter


@dataclass(frozen=True, slots=True)
class Ejection:
    consecutive: int = 3          # failures in a row (resets, timeouts, 5xx) that eject
    cooldown_s: float = 5.0       # the first ejection's length; doubles with each repeat
    max_cooldown_s: float = 120.0


@dataclass(slots=True)
class Health:
    in_flight: int = 0
    ttft_ms: float | None = None   # EWMA of time to first token (first byte for whole answers)
    queue_ms: float | None = None  # EWMA of the server's queue time (Server-Timing), when sent
    error_rate: float = 0.0        # EWMA of failures (1) and successes (0)
    served: int = 0
    failed: int = 0
    consecutive: int = 0
    ejections: int = 0             # ejections in a row (reset by a success)
    ejected_until: float = 0.0
    probing: bool = False          # a half-open probe call is in flight
    last_error: str = ""


def _ewma(old: float | None, sample: float) -> float:
    return sample if old is None else old + EWMA_ALPHA * (sample - old)


def state(h: Health, now: float) -> State:
    """``up``: takes calls; ``probe``: its cooldown is over and it may take one call;
    ``down``: ejected (or probing already)."""
    if h.ejected_until == 0.0:
        return "up"
    if now < h.ejected_until or h.probing:
        return "down"
    return "probe"


def on_success(h: Health, ttft_ms: float | None, queue_ms: float | None) -> None:
    h.served += 1
    h.error_rate = _ewma(h.error_rate, 0.0)
    if ttft_ms is not None:
        h.ttft_ms = _ewma(h.ttft_ms, ttft_ms)
    if queue_ms is not None:
        h.queue_ms = _ewma(h.queue_ms, queue_ms)
    h.consecutive = 0
    h.ejections = 0
    h.ejected_until = 0.0
    h.probing = False


def on_failure(h: Health, reason: str, now: float, policy: Ejection, at_once: bool = False) -> bool:
    """Count a failure; True when it ejects the replica (``at_once``: a connection that could
    not be made; a failed half-open probe also ejects again at once)."""
    h.failed += 1
    h.error_rate = _ewma(h.error_rate, 1.0)
    h.consecutive += 1
    h.last_error = reason
    was_probing, h.probing = h.probing, False
    if at_once or was_probing or h.consecutive >= policy.consecutive:
        h.ejections += 1
        cooldown = min(policy.max_cooldown_s, policy.cooldown_s * 2 ** (h.ejections - 1))
        h.ejected_until = now + cooldown
        h.consecutive = 0
        return True
    return False
