"""How long a call must wait for rate-limit budget: GCRA over a learned budget (pure).

A budget (a server's requests or tokens per window, for one origin and credential) is modelled
as the server describes it (OpenAI's reset headers, ``headers.py``): a bucket of ``limit`` units
that refills continuously over ``window_s``. GCRA (the generic cell rate algorithm, ITU-T I.371;
redis-cell's ``CL.THROTTLE``) keeps it as one number, the theoretical arrival time ``tat``: the
moment the bucket would be whole again. A unit costs ``T = window_s / limit`` seconds of it; a
call of cost ``c`` fits at ``now`` when ``max(tat, now) + c*T - now <= window_s`` (less a small
:data:`HEADROOM`), and otherwise waits the difference. Reserving moves ``tat`` at once, before the wait, so callers get their
slots in the order they asked: the reservation *is* the fair (FIFO) queue, without a queue.

Every function here is pure: (state, input) -> (state, answer). The thin I/O around them is
``pacer.py`` (one process) and ``shared.py`` (the same arithmetic in a Redis script).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from .headers import Limits

__all__ = ["HEADROOM", "LOW_PRIORITY_SHARE", "NEVER", "Bucket", "learn", "release", "reserve", "wait_for"]

NEVER = math.inf  # the wait of a call whose cost exceeds the whole budget
# The share of the budget a paced client leaves unspent. Slots are exact on the client's
# clock, but a call reaches the server a little after its slot, and not always in the order of
# the slots (threads, processes, the network): spending at most 95% of a whole budget at once
# absorbs those shifts. It costs only the first burst; the steady rate is the server's.
HEADROOM = 0.05
# Low-priority calls (``x-llm-priority: low``: batch jobs, prefetches) leave this share of the
# budget more for the others: when batch calls keep the budget spent, an interactive call
# still finds a quarter of it and goes at once.
LOW_PRIORITY_SHARE = 0.25


@dataclass(frozen=True, slots=True)
class Bucket:
    limit: int  # units in a whole budget
    window_s: float  # the time a whole budget takes to refill
    tat: float = 0.0  # when the budget is whole again (the model's clock, seconds)

    @property
    def per_unit_s(self) -> float:
        return self.window_s / self.limit

    def remaining(self, now: float) -> float:
        """Units left at ``now`` (what the server's ``remaining`` header would say)."""
        return max(0.0, self.limit - max(0.0, self.tat - now) / self.per_unit_s)


def wait_for(bucket: Bucket, cost: float, now: float, low: bool = False) -> float:
    """Seconds until ``cost`` units fit (0: now); :data:`NEVER` when they never can. ``low``:
    a low-priority call, which leaves :data:`LOW_PRIORITY_SHARE` of the budget to the others."""
    if cost > bucket.limit:
        return NEVER
    after = max(bucket.tat, now) + cost * bucket.per_unit_s
    spendable = 1.0 - HEADROOM - (LOW_PRIORITY_SHARE if low else 0.0)
    return max(0.0, after - bucket.window_s * spendable - now)


def reserve(bucket: Bucket, cost: float, now: float, low: bool = False) -> tuple[Bucket, float]:
    """Take ``cost`` units: the bucket after, and how long the caller waits for its slot.
    A cost that never fits takes nothing (wait :data:`NEVER`)."""
    wait = wait_for(bucket, cost, now, low)
    if wait == NEVER:
        return bucket, NEVER
    return replace(bucket, tat=max(bucket.tat, now) + cost * bucket.per_unit_s), wait


def release(bucket: Bucket, cost: float, now: float) -> Bucket:
    """Give back units a call reserved but the server never counted (it refused with 429, or
    the request never reached it)."""
    return replace(bucket, tat=max(now, bucket.tat - cost * bucket.per_unit_s))


def server_debt(seen: Limits) -> float:
    """Seconds until the server's budget is whole again, as an answer described it: its reset
    header where it gave one (exact for a continuously refilled budget), else from the count."""
    if seen.reset_s is not None:
        return min(seen.reset_s, seen.window_s)
    return (seen.limit - seen.remaining) * seen.window_s / seen.limit


def learn(bucket: Bucket | None, seen: Limits, now: float, pending: float = 0.0, only_raise: bool = False) -> Bucket:
    """The bucket after an answer described the server's budget: its size and window as the
    server says, and ``tat`` at what the server had counted plus ``pending``, the units of our
    own calls still in flight (the answer may not count them yet). ``only_raise``: never move
    ``tat`` back (a shared budget, where other processes' calls in flight are not known)."""
    tat = now + server_debt(seen) + pending * seen.window_s / seen.limit
    if bucket is not None and only_raise and bucket.window_s == seen.window_s and bucket.tat > tat:
        tat = bucket.tat
    return Bucket(seen.limit, seen.window_s, tat)
