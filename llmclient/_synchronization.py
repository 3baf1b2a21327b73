"""The few waits whose I/O really differs between the sync and the async client, written by hand
twice, side by side; everything written once as coroutines (``_async`` folders) calls these by
their async names and ``scripts/unasync.py`` turns them into the sync ones (``asleep`` ->
``sleep``, ``aoff_loop`` -> ``off_loop``), as httpcore's ``_synchronization.py`` does.

asyncio is imported on first use, not here: ``import llmclient`` does not load it (a sync client
never does).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["aoff_loop", "asleep", "off_loop", "sleep", "start_task"]

_T = TypeVar("_T")
_A = TypeVar("_A")


def sleep(delay: float) -> None:
    time.sleep(delay)


async def asleep(delay: float) -> None:
    import asyncio  # heavy: the async client's first use loads it, not `import llmclient`

    await asyncio.sleep(delay)


def off_loop(fn: Callable[[_A], _T], arg: _A) -> _T:
    """``fn(arg)``: a sync client is on its caller's thread already."""
    return fn(arg)


async def aoff_loop(fn: Callable[[_A], _T], arg: _A) -> _T:
    """``fn(arg)`` in a worker thread: CPU work (an image's preparation, ~100 ms) off the loop."""
    import asyncio  # heavy: the async client's first use loads it, not `import llmclient`

    return await asyncio.to_thread(fn, arg)


def start_task(coro_fn: Callable[[], Any]) -> Any:
    """A task running ``coro_fn()`` on the running event loop, or None when no loop runs (then
    nothing is started)."""
    import asyncio  # heavy: the async client's first use loads it, not `import llmclient`

    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return None
    return loop.create_task(coro_fn())
