"""The speculation budget: how much extra load prefetching may add.

Like a backup-request budget (hedging in gRPC and Finagle's RetryBudget), prefetches earn
credit from the app's own calls: each app call deposits ``max_load_share`` of a prefetch, and
each prefetch spends one. The bucket is capped at ``burst`` so idle time does not bank an
unbounded burst. On top: a cap on prefetches in flight and on prefetched tokens per minute.
All state changes take the time as an argument, so the policy is tested without clocks.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass


@dataclass(frozen=True)
class BudgetConfig:
    max_in_flight: int = 2
    max_load_share: float = 0.5
    burst: float = 4.0
    max_tokens_per_minute: int = 20_000
    max_candidates: int = 2

    def __post_init__(self) -> None:
        if self.max_in_flight < 0 or self.max_candidates < 0:
            raise ValueError("max_in_flight and max_candidates must be >= 0")
        if not 0 <= self.max_load_share <= 10:
            raise ValueError("max_load_share must be between 0 and 10 prefetches per app call")
        if self.max_tokens_per_minute < 0:
            raise ValueError("max_tokens_per_minute must be >= 0")


_WINDOW_S = 60.0


@dataclass
class Ticket:
    """One granted prefetch: its time and the tokens it holds in the per-minute window."""

    at: float
    tokens: int


class Budget:
    """Thread-safe budget state. ``try_acquire`` returns a Ticket, or the reason it refused."""

    def __init__(self, config: BudgetConfig | None = None) -> None:
        self.config = config or BudgetConfig()
        self.in_flight = 0
        self.credit = min(self.config.burst, 1.0)
        self.app_calls = 0
        self.granted = 0
        self._tokens: deque[Ticket] = deque()
        self._lock = threading.Lock()

    def on_app_call(self) -> None:
        with self._lock:
            self.app_calls += 1
            self.credit = min(self.config.burst, self.credit + self.config.max_load_share)

    def tokens_in_window(self, now: float) -> int:
        with self._lock:
            self._expire(now)
            return sum(t.tokens for t in self._tokens)

    def try_acquire(self, tokens: int, now: float) -> Ticket | str:
        with self._lock:
            self._expire(now)
            if self.in_flight >= self.config.max_in_flight:
                return "max_in_flight"
            if self.credit < 1.0:
                return "max_load_share"
            if sum(t.tokens for t in self._tokens) + tokens > self.config.max_tokens_per_minute:
                return "max_tokens_per_minute"
            self.in_flight += 1
            self.credit -= 1.0
            self.granted += 1
            ticket = Ticket(now, tokens)
            self._tokens.append(ticket)
            return ticket

    def release(self, ticket: Ticket, used: int | None) -> None:
        """A prefetch ended; its reservation becomes the tokens it really used."""
        with self._lock:
            self.in_flight = max(0, self.in_flight - 1)
            if used is not None:
                ticket.tokens = used

    def _expire(self, now: float) -> None:
        while self._tokens and now - self._tokens[0].at > _WINDOW_S:
            self._tokens.popleft()
