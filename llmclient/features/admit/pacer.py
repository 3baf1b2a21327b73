"""The admit stage's thin I/O for one process: what each (origin, credential) allowed, and the
reservations of the calls about to go (decisions: ``budget.py``, ``headers.py``, ``cost.py``).

:meth:`Pacer.admit` runs before each attempt: it estimates the call's cost, reserves it in the
budget the server described and returns how long the caller must wait for its slot (the caller
sleeps; nothing here sleeps). :meth:`Pacer.settle` runs on each answer's headers: it learns the
budgets, gives back what a refused attempt had reserved, and notes a Retry-After. With a
``shared`` budget (``shared.py``: Redis), the reservation is made there, for every process that
uses the same credential; when Redis fails, this process paces on its own view.

Pacing is ``"auto"`` by default: the budgets are always learned (``client.rate_limits``), but a
call waits only once that origin and credential has refused a call with 429. Until then a call
goes as it would have without llmclient, so nothing that would have succeeded is slowed.
Without Redis, "auto" also stops pacing (for ten windows) when an answer shows the server
counting more than this process's calls explain: other processes share the budget, and pacing
on a view that misses their calls measured worse than not pacing. ``pacing=True`` paces from
the first answer that described a budget, whatever else spends it; ``False`` never.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Literal

from ..._errors import APITimeoutError, OpenAIError
from ._async.pacer import AsyncPacerIO
from ._sync.pacer import PacerIO
from .budget import NEVER, Bucket, learn, release, reserve, server_debt, wait_for
from .cost import estimate_tokens
from .headers import Observation, parse_headers

__all__ = ["BudgetTooSmallError", "Pacer", "PacingMode", "Ticket", "admit_timeout", "pacing_mode"]

log = logging.getLogger("llmclient.admit")

PacingMode = Literal["auto"] | bool
# A Retry-After longer than this is not waited for inside a call: the call gets its 429.
MAX_HOLD_S = 60.0
# After an answer showed others spending the budget, "auto" stops pacing for this many windows.
OTHERS_HOLD_WINDOWS = 10


class BudgetTooSmallError(OpenAIError, ValueError):
    """A call costs more tokens than the server's whole budget: it could never be sent."""


def pacing_mode(value: Any) -> PacingMode:
    if value in ("auto", True, False):
        return value
    raise ValueError(f"pacing must be 'auto', True or False, got {value!r}")


@dataclass(slots=True)
class _State:
    """One (origin, credential): its budgets as learned, and our calls in flight."""

    requests: Bucket | None = None
    tokens: Bucket | None = None
    pending_requests: int = 0
    pending_tokens: int = 0
    engaged: bool = False  # a 429 was seen here ("auto" paces from then on)
    # Until then (monotonic), "auto" does not pace: an answer showed the server counting more
    # than this process's own calls explain, so others share the budget unseen (no Redis).
    others_until: float = 0.0
    hold_until: float = 0.0  # a Retry-After: no call before this (monotonic)
    seen: Observation | None = None
    seen_at: float = 0.0
    others_seen: int = 0
    sent: int = 0  # tickets issued: an answer to the latest one, with none in flight, is exact
    refused: int = 0
    paced: int = 0
    waited_s: float = 0.0
    # For the next Redis reservation: the server's debt per budget as last seen (and when,
    # under "at"), and units refused attempts gave back.
    shared_debt: dict[str, float] = field(default_factory=dict)
    shared_release: dict[str, float] = field(default_factory=dict)


@dataclass(slots=True)
class Ticket:
    """One attempt's reservation, handed back to :meth:`Pacer.settle` with its answer."""

    key: tuple[str, str]
    tokens: int
    reserved: bool
    wait_s: float
    seq: int = 0


class Pacer(PacerIO, AsyncPacerIO):
    """Budgets per (base URL, credential scope) for one client, thread-safe. ``admit`` /
    ``aadmit`` (``_async/pacer.py``, the sync twin generated) reserve; :meth:`settle` learns."""

    def __init__(self, mode: PacingMode = "auto", shared: Any = None) -> None:
        self.mode = pacing_mode(mode)
        self.shared = shared  # a SharedBudget (Redis) or None
        self._states: dict[tuple[str, str], _State] = {}
        self._lock = threading.Lock()
        self._asked: set[tuple[str, str]] = set()  # keys whose budgets were looked up in Redis

    def _active(self, state: _State) -> bool:
        if self.mode is True:
            return True
        # Pacing per process on a budget other processes spend too holds calls on a view that
        # misses their calls, and measured worse than not pacing (README, "ratelimits"): "auto"
        # paces alone on a budget, or with Redis.
        return (self.mode == "auto" and state.engaged
                and (self.shared is not None or time.monotonic() >= state.others_until))

    def _begin(self, key: tuple[str, str], body: Any) -> tuple[_State | None, int, Ticket | None]:
        """(state, cost, None) when the call is to be paced; (None, 0, ticket or None) when not."""
        state = self._states.get(key)
        if state is None or self.mode is False:
            return None, 0, None
        cost = estimate_tokens(body) if isinstance(body, dict) else 0
        with self._lock:
            if not self._active(state):  # learning only: count it in flight, never hold it
                _count_sent(state, cost, time.monotonic())
                return None, 0, Ticket(key, cost, False, 0.0, state.sent)
            if state.tokens is not None and cost > state.tokens.limit:
                raise BudgetTooSmallError(
                    f"this call is estimated at {cost} tokens, more than the whole budget of "
                    f"{state.tokens.limit} tokens per {state.tokens.window_s:g} s that {key[0]} "
                    "allows this credential: it could never be sent (lower max_tokens or the prompt)")
        return state, cost, None

    def _adopt(self, key: tuple[str, str], found: dict[str, tuple[int, float]]) -> None:
        """Budgets another process paced this credential with (from Redis): pace from them."""
        with self._lock:
            if key in self._states or not found:
                return
            state = self._states[key] = _State(engaged=True)
            if "requests" in found:
                state.requests = Bucket(*found["requests"])
            if "tokens" in found:
                state.tokens = Bucket(*found["tokens"])

    def _first_sight(self, key: tuple[str, str]) -> bool:
        """Whether to ask Redis for this key's budgets: once per key, before anything is known."""
        if self.shared is None or self.mode is False or key in self._states or key in self._asked:
            return False
        self._asked.add(key)
        return True

    def _wait_locally(self, state: _State, cost: int, now: float, low: bool) -> float:
        wait = 0.0
        if state.requests is not None:
            wait = max(wait, wait_for(state.requests, 1, now, low))
        if state.tokens is not None:
            wait = max(wait, wait_for(state.tokens, cost, now, low))
        return wait

    def _book(self, key: tuple[str, str], state: _State, cost: int, shared_wait: float | None,
              timeout_s: float | None, low: bool) -> Ticket:
        """The local reservation (the whole of it without Redis; with Redis, the local view the
        fallback and the next header read use), with the wait the budget's keeper decided."""
        t = time.monotonic()
        with self._lock:
            local_wait = self._wait_locally(state, cost, t, low)
            wait = max(state.hold_until - t, local_wait if shared_wait is None else shared_wait, 0.0)
            if wait == NEVER or (timeout_s is not None and wait > timeout_s):
                if shared_wait is not None and self.shared is not None and shared_wait <= (timeout_s or 0.0):
                    self.shared.note_release(state, cost)
                raise self._too_long(key[0], wait, timeout_s or 0.0)
            _count_sent(state, cost, t)
            if wait > 0:
                state.paced += 1
                state.waited_s += wait
        return Ticket(key, cost, True, wait, state.sent)

    @staticmethod
    def _too_long(base_url: str, wait: float, timeout_s: float) -> APITimeoutError:
        return APITimeoutError(
            f"Request timed out waiting for rate-limit budget: {base_url} would allow this call in "
            f"{wait:.2f} s, past its timeout of {timeout_s:g} s (nothing was sent)")

    def settle(self, ticket: Ticket | None, base_url: str, scope: str, status: int | None,
               headers: Any, now: float | None = None) -> None:
        """An attempt ended: ``status`` and ``headers`` of its answer (None: no answer came)."""
        obs = parse_headers(headers) if headers is not None else None
        if ticket is None and (obs is None or obs.empty):
            return
        t = time.monotonic() if now is None else now
        key = (base_url, scope)
        with self._lock:
            state = self._states.get(key)
            if state is None:
                state = self._states[key] = _State()
            if ticket is not None:
                state.pending_requests = max(0, state.pending_requests - 1)
                state.pending_tokens = max(0, state.pending_tokens - ticket.tokens)
            if status == 429:
                state.engaged = True
                state.refused += 1
                if ticket is not None and ticket.reserved:  # the server did not count it
                    if state.requests is not None:
                        state.requests = release(state.requests, 1, t)
                    if state.tokens is not None:
                        state.tokens = release(state.tokens, ticket.tokens, t)
                    if self.shared is not None:
                        self.shared.note_release(state, ticket.tokens)
            if obs is None or obs.empty:
                return
            state.seen, state.seen_at = obs, t
            if self.shared is None:
                self._notice_others(state, obs, t)
            # Answers overtake each other: one to an earlier call may miss calls of ours that
            # the server counted since and whose answers were read already. Its budget can only
            # raise our estimate, unless it answers the latest call and none is in flight.
            exact = ticket is None or (ticket.seq == state.sent and state.pending_requests == 0)
            if obs.requests is not None:
                state.requests = learn(state.requests, obs.requests, t, state.pending_requests, not exact)
                state.shared_debt["requests"] = server_debt(obs.requests)
            if obs.tokens is not None:
                state.tokens = learn(state.tokens, obs.tokens, t, state.pending_tokens, not exact)
                state.shared_debt["tokens"] = server_debt(obs.tokens)
            state.shared_debt["at"] = t
            # A Retry-After holds the other calls only where the answer also described the budget
            # it refers to; a bare one (a proxy's, an injected fault's) is for its own call's retry.
            described = obs.requests is not None or obs.tokens is not None
            if status == 429 and described and obs.retry_after_s is not None and obs.retry_after_s <= MAX_HOLD_S:
                state.hold_until = max(state.hold_until, t + obs.retry_after_s)

    @staticmethod
    def _notice_others(state: _State, obs: Observation, t: float) -> None:
        """Whether this answer shows the server counting more than this process's model holds
        (our reservations since the last answer, and what that answer said), by more than a
        tenth of the window: another client spends the budget too."""
        for bucket, seen in ((state.requests, obs.requests), (state.tokens, obs.tokens)):
            if bucket is None or seen is None or bucket.window_s != seen.window_s:
                continue
            if server_debt(seen) > max(0.0, bucket.tat - t) + 0.1 * seen.window_s:
                state.others_until = t + OTHERS_HOLD_WINDOWS * seen.window_s
                state.others_seen += 1

    def snapshot(self, now: float | None = None) -> dict[str, dict[str, Any]]:
        """What was learned, per ``"base_url scope[:12]"`` (``client.rate_limits``)."""
        t = time.monotonic() if now is None else now
        out: dict[str, dict[str, Any]] = {}
        with self._lock:
            for (base_url, scope), state in self._states.items():
                entry: dict[str, Any] = {"pacing": self._active(state) and self.mode is not False,
                                         "others_seen": state.others_seen,
                                         "shared": self.shared is not None and self.shared.last_ok,
                                         "refused_429": state.refused, "paced_calls": state.paced,
                                         "paced_wait_s": round(state.waited_s, 3),
                                         "in_flight": state.pending_requests}
                for kind, bucket in (("requests", state.requests), ("tokens", state.tokens)):
                    if bucket is not None:
                        entry[kind] = {"limit": bucket.limit, "window_s": bucket.window_s,
                                       "remaining": int(bucket.remaining(t))}
                out[f"{base_url} {scope[:12]}"] = entry
        return out


def admit_timeout(timeout: Any) -> float | None:
    """How long a call may wait for budget: its timeout (an ``httpx.Timeout``'s longest
    phase, or a number); None: unbounded."""
    if timeout is None or isinstance(timeout, (int, float)):
        return timeout
    phases = [getattr(timeout, name, None) for name in ("read", "connect", "write", "pool")]
    values = [v for v in phases if isinstance(v, (int, float))]
    return max(values) if values else None


def _count_sent(state: _State, cost: int, t: float) -> None:
    """Reserve one request and ``cost`` tokens in ``state``'s budgets at ``t`` and count the
    call in flight (held or not: the model must see every call the server will count)."""
    if state.requests is not None:
        state.requests = reserve(state.requests, 1, t)[0]
    if state.tokens is not None:
        state.tokens = reserve(state.tokens, cost, t)[0]
    state.pending_requests += 1
    state.pending_tokens += cost
    state.sent += 1
