"""The shared budget's two round trips to Redis (``SharedBudget`` mixes these in; the script,
its arguments and the fallback are ``admit/shared.py``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["AsyncSharedBudgetIO"]


class AsyncSharedBudgetIO:
    if TYPE_CHECKING:  # SharedBudget's own, used here
        @property
        def healthy(self) -> bool: ...
        def _async_redis(self) -> Any: ...
        def _async_script(self) -> Any: ...
        def _policy_keys(self, key: tuple[str, str]) -> list[str]: ...
        @staticmethod
        def _policies(reply: Any) -> dict[str, tuple[int, float]]: ...
        def _args(self, key: tuple[str, str], state: Any, cost: int, timeout_s: float | None,
                  low: bool) -> tuple[list[str], list[Any]]: ...
        def _answer(self, reply: Any) -> float: ...
        def _failed(self, exc: BaseException) -> None: ...

    async def alearned(self, key: tuple[str, str]) -> dict[str, tuple[int, float]]:
        """The budgets other processes paced this credential with: kind -> (limit, window_s);
        empty when none or when Redis cannot answer."""
        if not self.healthy:
            return {}
        try:
            return self._policies(await self._async_redis().mget(self._policy_keys(key)))
        except Exception as exc:  # Redis must never fail a call
            self._failed(exc)
            return {}

    async def areserve(
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
            return self._answer(await self._async_script()(keys=keys, args=argv))
        except Exception as exc:  # Redis must never fail a call
            self._failed(exc)
            return None
