"""Counters per backend; increments are under a lock so threads never lose counts."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, fields

__all__ = ["CacheStats"]


@dataclass
class CacheStats:
    """hits/misses/stores/joins/errors are counted by ResponseCache; evictions by the backend.

    ``bytes`` is the total of value bytes written (stores), ``errors`` counts backend faults
    and unreadable entries (both answered as misses).
    """

    hits: int = 0
    misses: int = 0
    stores: int = 0
    bytes: int = 0
    evictions: int = 0
    errors: int = 0
    joins: int = 0
    rejected: int = 0  # entries refused for a missing or wrong signature (answered as misses)
    unavailable: int = 0  # operations skipped while a failed backend rests
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, name: str, amount: int = 1) -> None:
        with self._lock:
            setattr(self, name, getattr(self, name) + amount)

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return {f.name: getattr(self, f.name) for f in fields(self) if not f.name.startswith("_")}
