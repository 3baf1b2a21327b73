# Generated from llmclient/features/admit/_async/pacer.py by scripts/unasync.py: do not edit here, edit that
# file and run `python scripts/unasync.py` (make lint checks that this file is current).
"""The pacer's reservation before each attempt (``Pacer`` mixes this in; what it learns and
decides is ``admit/pacer.py``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..pacer import Ticket, _State

__all__ = ["PacerIO"]


class PacerIO:
    shared: Any

    if TYPE_CHECKING:  # Pacer's own, used here
        def _first_sight(self, key: tuple[str, str]) -> bool: ...
        def _adopt(self, key: tuple[str, str], found: dict[str, tuple[int, float]]) -> None: ...
        def _begin(self, key: tuple[str, str], body: Any) -> tuple[_State | None, int, Ticket | None]: ...
        def _book(self, key: tuple[str, str], state: _State, cost: int, shared_wait: float | None,
                  timeout_s: float | None, low: bool) -> Ticket: ...

    def admit(
            self, base_url: str, scope: str, body: Any, timeout_s: float | None, low: bool = False) -> Ticket | None:
        """Reserve one attempt's budget: a Ticket (its ``wait_s`` is the caller's sleep), or
        None when nothing is known of this origin's limits. Raises BudgetTooSmallError when
        the call can never fit, APITimeoutError when its slot is past ``timeout_s`` (then
        nothing is reserved). ``low``: a low-priority call (``budget.LOW_PRIORITY_SHARE``).
        With a shared budget the reservation is made in Redis (``shared.py``)."""
        key = (base_url, scope)
        if self._first_sight(key):
            self._adopt(key, self.shared.learned(key))
        state, cost, early = self._begin(key, body)
        if state is None:
            return early
        shared_wait = self.shared.reserve(key, state, cost, timeout_s, low) if self.shared is not None else None
        return self._book(key, state, cost, shared_wait, timeout_s, low)
