# Generated from llmclient/features/admit/_async/shared.py by scripts/unasync.py: do not edit here, edit that
# file and run `python scripts/unasync.py` (make lint checks that this file is current).
"""The shared budget's two round trips to Redis (``SharedBudget`` mixes these in; the script,
its arguments and the fallback are ``admit/shared.py``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["SharedBudgetIO"]


class SharedBudgetIO:
    if TYPE_CHECKING:  # SharedBudget's own, used here
        @property
        def healthy(self) -> bool: ...
        def _sync_redis(self) -> Any: ...
        def _sync_script(self) -> Any: ...
        def _policy_keys(self, key: tuple[str, str]) -> list[str]: ...
        @staticmethod
        def _policies(reply: Any) -> dict[str, tuple[int, float]]: ...
        def _args(self, key: tuple[str, str], state: Any, cost: int, timeout_s: float | None,
                  low: bool) -> tuple[list[str], list[Any]]: ...
        def _answer(self, reply: Any) -> float: ...
        def _failed(self, exc: BaseException) -> None: ...

    def learned(self, key: tuple[str, str]) -> dict[str, tuple[int, float]]:
        """The budgets other processes paced this credential with: kind -> (limit, window_s);
        empty when none or when Redis cannot answer."""
        if not self.healthy:
            return {}
        try:
            return self._policies(self._sync_redis().mget(self._policy_keys(key)))
        except Exception as exc:  # Redis must never fail a call
            self._failed(exc)
            return {}

    def reserve(
            self, key: tuple[str, str], state: Any, cost: int, timeout_s: float | None, low: bool = False,
    ) -> float | None:
        """The wait for this reservation (past ``timeout_s``: refused, nothing reserved), or None
        when Redis cannot answer (the caller paces locally)."""
        if not self.healthy:
            return None
        keys, argv = self._args(key, state, cost, timeout_s, low)
        if not keys:
            return None
        try:
            return self._answer(self._sync_script()(keys=keys, args=argv))
        except Exception as exc:  # Redis must never fail a call
            self._failed(exc)
            return None
