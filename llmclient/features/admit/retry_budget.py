"""A retry budget per origin: retries may add only a bounded share of load while it fails.

Without one, every client's retries multiply an outage: with ``max_retries=2`` a server that
answers every call 503 gets three attempts per call (the official client's figure), at the
moment it can least take them. This is gRPC's retry throttling (gRFC A6, "Retry Throttling";
grpc-core's ``ServerRetryThrottleData``), the policy Envoy calls a retry budget:

* each origin (``scheme://host:port``) has a bucket of :attr:`RetryBudget.max_tokens` tokens,
  full at first;
* an attempt that fails in a way the retry policy would retry (5xx, 408, 409, a connection
  error or timeout) takes one token away; a 429 (a quota, not a failing origin) and a refused
  connect (nothing reached a server) neither take nor give; a retry is allowed only while more than
  half the bucket is left (``tokens > max_tokens / 2``);
* every other outcome (an answer, or an error the policy does not retry: the origin is
  answering) puts :attr:`RetryBudget.token_ratio` back, up to the top.

One kind of failure costs less: Anthropic's 529 ``overloaded_error`` (:data:`SHED_STATUSES`)
takes :data:`SHED_COST` (a quarter) of a token. Only a live API sends it, shedding load for a
moment, and it comes in bursts: every call in flight refused at once. At a full token each, a
burst of 8 from 32 callers takes 8 of the 20 tokens, two close together spend the bucket, and
the calls they hit fail although the origin answers four calls in five: the overload benchmark
(``python -m benchmarks reliability overload``, 529 bursts of 8 making 17-19% of the answers,
2026-12-07) failed 19 of 200 llmclient calls on the budget where the official client failed
none. At a quarter, a seeded simulation of that fault (20 runs of 20,000 attempts,
tests/admit) refuses 0.1 retries a run at 17% and 0.3 at 20% (a full token: 2,285 and 3,092),
and a full 529 outage still stops retrying, after ``max_tokens / 2 / SHED_COST`` = 40 of them
(503, which a gateway whose upstream is down sends too, keeps the full token).

So retries stop within ``max_tokens / 2`` failures of an outage (a full outage costs about
1.0x the calls plus a handful, not 3x), and while an origin is sick they add at most
``token_ratio`` retries per success: 20 % with the defaults (20 tokens, 0.2); for 529s alone,
``token_ratio / SHED_COST`` (80 %): an origin shedding under about 44 % of its answers keeps
its retries, one shedding more has them throttled.
A healthy origin (failures under ``token_ratio / (1 + token_ratio)`` of attempts, 16.7 %) keeps
its bucket full, and its transient failures are retried as before. Why not gRFC A6's example
(10 tokens, 0.1): its healthy line is 9 % of attempts, and the ``faults`` benchmark's mix (12 %
of answers 429/503/504/reset, each retried by the official client) drained it, so llmclient
failed 35 of 300 calls where the official client failed none (2026-12-07). With these
defaults a 12 % failure rate loses 0.23 % of calls to the budget against 0.17 % lost with no
budget at all (``max_retries=2``; 200 seeded runs of 300 calls, tests/admit), and a full
outage still costs the calls plus at most ``max_tokens / 2`` = 10 retries. Requests the transport
proved never sent (``unprocessed``) neither take nor give: they cost the server nothing.

A refused retry fails the call at once with the error it had, its message naming the budget
(:func:`refusal`) and the attribute ``retry_budget`` (the origin). ``OpenAI(retry_budget=
RetryBudget(...))`` changes it, ``retry_budget=False`` turns it off. The buckets belong to
the :class:`RetryBudget` object (a client and its ``with_options`` copies share one; clients
given the same object share it); with ``redis=`` they are shared by every process using
that Redis (``retry_shared.py``).

:class:`Bucket` is the arithmetic, pure; :class:`OriginBudget` holds one origin's bucket
behind a lock (sync clients call from many threads).
"""

from __future__ import annotations

import logging
import os
import threading
import weakref
from typing import Any, Final

__all__ = ["DEFAULT_MAX_TOKENS", "DEFAULT_TOKEN_RATIO", "NOT_COUNTED_STATUSES", "SHED_COST", "SHED_STATUSES", "Bucket",
           "OriginBudget", "RetryBudget", "apply", "check_retry_budget", "check_setting", "failure_cost", "mark_refused",
           "origin_of", "outcome", "refusal"]

log = logging.getLogger("llmclient.admit")

# Answers that neither take nor give a token. A 429 is a quota answer from an origin that is
# up: its retries wait the server's retry-after (and pacing spreads them), and counting it
# made a budget spent by one tenant's rate limit fail that tenant's calls at once (the
# ratelimits benchmark without pacing, 0.5 s windows: 636 of 2,712 calls failed). A refused
# connect is left out by the retry layer for the same reason as a never-sent request.
NOT_COUNTED_STATUSES: Final = frozenset({429})

# Answers that take only SHED_COST of a token: Anthropic's 529 overloaded_error ("Anthropic's API
# is temporarily overloaded", docs.claude.com/en/api/errors, read 2026-12): the API is up and
# sheds load in bursts (the module's docstring has the figures).
SHED_STATUSES: Final = frozenset({529})
SHED_COST: Final = 0.25

DEFAULT_MAX_TOKENS: Final = 20.0  # gRFC A6's policy shape; the sizes: the module's docstring
DEFAULT_TOKEN_RATIO: Final = 0.2


class RetryBudget:
    """How many retries an origin gets while it fails (see the module's docstring):
    ``max_tokens`` (a bucket of them, retries allowed above half of it; 1 to 1000) and
    ``token_ratio`` (put back by each success; 0 < ratio <= 1).

    The object also keeps the buckets, one per origin: clients given the same ``RetryBudget``
    (and a client's ``with_options`` copies) share them; each client made without one has its
    own. With ``redis=`` on the client, every process (and client) using that Redis shares them.
    """

    __slots__ = ("__weakref__", "_budgets", "_by_url", "_lock", "max_tokens", "token_ratio")

    def __init__(self, max_tokens: float = DEFAULT_MAX_TOKENS, token_ratio: float = DEFAULT_TOKEN_RATIO) -> None:
        for name, value in (("max_tokens", max_tokens), ("token_ratio", token_ratio)):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"RetryBudget({name}=...) must be a number, got {value!r}")
        if not 1.0 <= max_tokens <= 1000.0:
            raise ValueError(f"RetryBudget(max_tokens={max_tokens!r}) must be in [1, 1000]")
        if not 0.0 < token_ratio <= 1.0:
            raise ValueError(f"RetryBudget(token_ratio={token_ratio!r}) must be in (0, 1]")
        self.max_tokens = float(max_tokens)
        self.token_ratio = float(token_ratio)
        self._lock = threading.Lock()
        self._budgets: dict[tuple[str, str | None], OriginBudget] = {}
        self._by_url: dict[tuple[str, Any], OriginBudget] = {}  # the same, by the raw base URL
        _live.add(self)

    @property
    def threshold(self) -> float:
        return self.max_tokens / 2.0

    def __repr__(self) -> str:
        return f"RetryBudget(max_tokens={self.max_tokens:g}, token_ratio={self.token_ratio:g})"

    def for_url(self, base_url: str, redis: Any = None) -> OriginBudget:
        """The bucket of ``base_url``'s origin, shared through Redis at ``redis`` (a URL, or an
        object with ``url``) when given."""
        fast = (base_url, redis)
        try:
            return self._by_url[fast]
        except (KeyError, TypeError):  # TypeError: an unhashable redis= object
            pass
        url = redis if isinstance(redis, str) or redis is None else getattr(redis, "url", None)
        key = (origin_of(base_url), url)
        with self._lock:
            budget = self._budgets.get(key)
            if budget is None:
                shared = None
                if url is not None:
                    from .retry_shared import (
                        shared_budgets,  # redis-py: only with redis= (the redis extra)
                    )

                    try:
                        shared = shared_budgets(url)
                    except (ImportError, ValueError) as exc:  # a retry budget never fails a call
                        log.warning("retry budget of %s: not shared (%s); this process's own view", key[0], exc)
                budget = self._budgets[key] = OriginBudget(key[0], self, shared)
                if shared is not None:
                    shared.join(budget)  # from the fleet's tokens (one round trip, once per origin)
            try:
                self._by_url[fast] = budget
            except TypeError:
                pass
        return budget

    def stats(self) -> dict[str, dict[str, Any]]:
        """Each origin's bucket: tokens, policy, whether spent, retries refused."""
        return {origin: b.snapshot() for (origin, _), b in list(self._budgets.items())}

    def _after_fork(self) -> None:
        self._lock = threading.Lock()
        self._budgets = {}  # the child starts full (with its own Redis thread, if shared)
        self._by_url = {}


def check_setting(value: object) -> RetryBudget | bool | None:
    """The client's ``retry_budget=`` as given, checked (the client's Config keeps it): None or
    True (the default budget), False (none: every retryable failure retried up to
    ``max_retries``, as the official client does), or a :class:`RetryBudget`; anything else is a
    ValueError that names it."""
    if value is None or isinstance(value, (bool, RetryBudget)):
        return value
    raise ValueError(f"retry_budget must be True, False, None or llmclient.RetryBudget(...), got {value!r}")


def check_retry_budget(value: object, inherited: RetryBudget | None = None) -> RetryBudget | None:
    """The budget a client with ``retry_budget=value`` uses: the one it was given, none with
    False, else ``inherited`` (the client it is a copy of had one) or a new default one."""
    value = check_setting(value)
    if value is False:
        return None
    if isinstance(value, RetryBudget):
        return value
    return inherited if inherited is not None else RetryBudget()


class Bucket:
    """One origin's tokens. Not thread-safe (:class:`OriginBudget` locks)."""

    __slots__ = ("policy", "tokens")

    def __init__(self, policy: RetryBudget, tokens: float | None = None) -> None:
        self.policy = policy
        self.tokens = policy.max_tokens if tokens is None else tokens

    def failed(self, cost: float = 1.0) -> bool:
        """A retryable failure: ``cost`` tokens less (one, or :data:`SHED_COST` for a shed
        answer); whether a retry may follow."""
        self.tokens = max(0.0, self.tokens - cost)
        return self.tokens > self.policy.threshold

    def succeeded(self) -> None:
        self.tokens = min(self.policy.max_tokens, self.tokens + self.policy.token_ratio)

    @property
    def spent(self) -> bool:
        return self.tokens <= self.policy.threshold


def apply(tokens: float, policy: RetryBudget, failures: float, successes: int) -> float:
    """``tokens`` after ``successes`` then ``failures`` (the tokens failures took: a shed answer
    takes less than one; the order the shared script uses: the pessimistic one, since a success
    at the top of the bucket is lost). Pure."""
    tokens = min(policy.max_tokens, tokens + successes * policy.token_ratio)
    return max(0.0, tokens - failures)


class OriginBudget:
    """One origin's bucket in this process, and what it has not yet told Redis (``pending``)
    when it is shared (``shared``: a ``retry_shared.SharedRetryBudgets``)."""

    __slots__ = ("__weakref__", "bucket", "lock", "origin", "pending_failures", "pending_successes", "refused",
                 "shared", "used_at")

    def __init__(self, origin: str, policy: RetryBudget, shared: Any = None) -> None:
        self.origin = origin
        self.bucket = Bucket(policy)
        self.lock = threading.Lock()
        self.shared = shared
        self.pending_failures = 0.0  # tokens taken (a shed answer takes SHED_COST)
        self.pending_successes = 0
        self.refused = 0  # retries this budget refused (stats)
        self.used_at = 0.0  # when the shared thread last saw it touched (its clock)

    @property
    def policy(self) -> RetryBudget:
        return self.bucket.policy

    def succeeded(self) -> None:
        bucket = self.bucket
        if bucket.tokens >= bucket.policy.max_tokens and self.shared is None:
            return  # full, the common case: no lock
        with self.lock:
            bucket.succeeded()
            self.pending_successes += 1
        if self.shared is not None:
            self.shared.touched(self)

    def failed(self, cost: float = 1.0) -> bool:
        """A retryable failure costing ``cost`` tokens; whether the retry it asks for may go."""
        with self.lock:
            allowed = self.bucket.failed(cost)
            self.pending_failures += cost
            if not allowed:
                self.refused += 1
        if self.shared is not None:
            self.shared.touched(self)
        return allowed

    def take_pending(self) -> tuple[float, int]:
        """(tokens failures took, successes) not yet sent to Redis, now handed to the shared
        thread."""
        with self.lock:
            out = self.pending_failures, self.pending_successes
            self.pending_failures, self.pending_successes = 0.0, 0
        return out

    def merge(self, shared_tokens: float) -> None:
        """Redis answered the fleet's tokens (ours included up to the flush): the local view
        is that plus what happened here since."""
        with self.lock:
            self.bucket.tokens = apply(shared_tokens, self.policy, self.pending_failures, self.pending_successes)

    def snapshot(self) -> dict[str, Any]:
        return {"tokens": round(self.bucket.tokens, 3), "max_tokens": self.policy.max_tokens,
                "token_ratio": self.policy.token_ratio, "spent": self.bucket.spent, "refused": self.refused,
                "shared": self.shared is not None}


def origin_of(base_url: str) -> str:
    """``scheme://host:port`` of a base URL (the budget's key: paths on one origin share it)."""
    scheme, _, rest = base_url.partition("://")
    netloc = rest.split("/", 1)[0].rsplit("@", 1)[-1].lower()
    return f"{scheme.lower()}://{netloc}"


def refusal(budget: OriginBudget) -> str:
    """What a call refused a retry says, appended to its error's message."""
    p = budget.policy
    return (f"retry not sent: the retry budget of {budget.origin} is spent ({budget.bucket.tokens:.1f} of "
            f"{p.max_tokens:g} tokens left, retries need more than {p.threshold:g}; each success puts "
            f"{p.token_ratio:g} back), so retries add at most {p.token_ratio:.0%} of the calls while it "
            f"fails; OpenAI(retry_budget=llmclient.RetryBudget(max_tokens=..., token_ratio=...)) changes it, "
            f"retry_budget=False turns it off")


def mark_refused(err: Any, budget: OriginBudget) -> Any:
    """``err`` (the call's public error) says that its retry was refused, and by which budget
    (``err.retry_budget``: the origin)."""
    err.message = f"{err.message}; {refusal(budget)}"
    err.args = (err.message,)
    err.retry_budget = budget.origin
    return err


def failure_cost(status: int | None) -> float:
    """The tokens a retryable failure takes: :data:`SHED_COST` for a shed answer
    (:data:`SHED_STATUSES`), one for anything else (another status; None: a connection error)."""
    return SHED_COST if status in SHED_STATUSES else 1.0


def outcome(budget: OriginBudget, retryable_failure: bool, wants_retry: bool, cost: float = 1.0) -> bool:
    """Record one attempt's outcome (a retryable failure takes ``cost`` tokens:
    :func:`failure_cost`); True when the retry it wants is refused."""
    if not retryable_failure:
        budget.succeeded()
        return False
    return not budget.failed(cost) and wants_retry


_live: weakref.WeakSet[RetryBudget] = weakref.WeakSet()


def _forget_after_fork() -> None:
    for budget in list(_live):
        budget._after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)
