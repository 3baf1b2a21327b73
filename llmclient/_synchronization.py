"""The waits of the two clients: hand-written twice, because here the I/O itself differs.

A thread blocks in the operating system (``threading``, ``time.sleep``); a coroutine hands control
back to its event loop (``asyncio``). Everything the two clients share beyond these waits is
written once, async, in a package's ``_async/`` folder, and ``scripts/unasync.py`` writes its sync
twin by renaming each async primitive here onto the sync one beside it: ``AsyncEvent`` ->
``Event``, ``asleep`` -> ``sleep``, ``ashield`` -> ``shield``, ``AsyncBackground`` ->
``Background``, ``async_scope`` -> ``sync_scope``, ``AsyncWork`` -> ``Work``, ``aoff_loop`` ->
``off_loop``. The model is httpcore's ``_synchronization.py``.

asyncio is imported inside the async half only: ``import llmclient`` must not load it (a program
that uses the sync client never needs it); the first async wait does.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Hashable
from typing import Any, TypeVar

__all__ = [
    "AsyncBackground",
    "AsyncEvent",
    "AsyncWork",
    "Background",
    "Event",
    "Work",
    "aoff_loop",
    "ashield",
    "asleep",
    "async_scope",
    "off_loop",
    "shield",
    "sleep",
    "start_task",
    "sync_scope",
]

T = TypeVar("T")

# What a caller hands over to be run: a function of no arguments and its result.
Work = Callable[[], T]
AsyncWork = Callable[[], Awaitable[T]]


# -- a flag to wait on ----------------------------------------------------------------------------

class Event(threading.Event):
    """A flag threads wait on: ``set()``, ``is_set()``, ``wait(timeout)`` (False: it timed out)."""


class AsyncEvent:
    """A flag the coroutines of one event loop wait on: ``set()`` (from any thread: a sync
    callback, another thread's cancel), ``is_set()``, ``await wait(timeout)`` (False: it timed
    out). Made inside the loop that waits on it."""

    __slots__ = ("_event", "_loop", "_thread")

    def __init__(self) -> None:
        import asyncio  # the async client's: `import llmclient` does not load it

        self._loop = asyncio.get_running_loop()
        self._thread = threading.get_ident()
        self._event = asyncio.Event()

    def set(self) -> None:
        if threading.get_ident() == self._thread:
            self._event.set()
            return
        try:  # asyncio.Event is not thread-safe: the loop's own thread sets it
            self._loop.call_soon_threadsafe(self._event.set)
        except RuntimeError:  # the loop is closed: nothing waits on it any more
            pass

    def is_set(self) -> bool:
        return self._event.is_set()

    async def wait(self, timeout: float | None = None) -> bool:
        if self._event.is_set():
            return True
        if timeout is None:
            await self._event.wait()
            return True
        import asyncio  # loaded already: this event was made in a running loop

        try:
            await asyncio.wait_for(self._event.wait(), timeout)
        except asyncio.TimeoutError:
            return self._event.is_set()  # as threading.Event.wait: the flag when the wait ended
        return True


# -- a pause --------------------------------------------------------------------------------------

def sleep(seconds: float) -> None:
    time.sleep(seconds)


async def asleep(seconds: float) -> None:
    import asyncio  # the async client's: `import llmclient` does not load it

    await asyncio.sleep(seconds)


# -- work that must finish even if its caller is cancelled ----------------------------------------

_SHIELDED: set[Any] = set()  # the loop holds tasks weakly: these are held until they end


def shield(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)``, run to its end: a thread cannot be cancelled (the sync twin of
    :func:`ashield`)."""
    return fn(*args)


async def ashield(fn: Callable[..., Coroutine[Any, Any, T]], *args: Any) -> T:
    """``await fn(*args)`` as a task of its own: if the caller is cancelled meanwhile, it stops
    waiting but the task runs to its end."""
    import asyncio  # the async client's: `import llmclient` does not load it

    task = asyncio.get_running_loop().create_task(fn(*args))
    _SHIELDED.add(task)
    task.add_done_callback(_forget_shielded)
    return await asyncio.shield(task)


def _forget_shielded(task: Any) -> None:
    _SHIELDED.discard(task)
    if not task.cancelled():
        task.exception()  # retrieved: a caller cancelled meanwhile never reads it


# -- work in the background -----------------------------------------------------------------------

class Background:
    """``fn(*args)`` in a daemon thread of its own (it never holds the interpreter open)."""

    __slots__ = ("_thread",)

    def __init__(self, fn: Callable[..., Any], *args: Any, name: str) -> None:
        self._thread = threading.Thread(target=fn, args=args, name=name, daemon=True)
        self._thread.start()

    def close(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for it to end: a thread cannot be cancelled, so ``fn``
        must have been told to stop. From its own thread, returns at once."""
        if self._thread is not threading.current_thread():
            self._thread.join(timeout)


class AsyncBackground:
    """``await fn(*args)`` in a task of its own, in the running loop."""

    __slots__ = ("_task",)

    def __init__(self, fn: Callable[..., Coroutine[Any, Any, Any]], *args: Any, name: str) -> None:
        import asyncio  # the async client's: `import llmclient` does not load it

        self._task = asyncio.get_running_loop().create_task(fn(*args), name=name)

    async def aclose(self, timeout: float) -> None:
        """Cancel it and wait up to ``timeout`` seconds for it to end. From its own task,
        returns at once."""
        import asyncio  # loaded already: the task was made in a running loop

        task = self._task
        if task is asyncio.current_task():
            return
        if not task.done():
            task.cancel()
            await asyncio.wait({task}, timeout=timeout)
        if task.done() and not task.cancelled():
            task.exception()  # retrieved (a failure ends it quietly, as a thread's would)


# -- what a wait may share ------------------------------------------------------------------------

def sync_scope(key: Hashable) -> Hashable:
    """What threads waiting on ``key`` share: the key itself, across the process."""
    return key


def async_scope(key: Hashable) -> Hashable:
    """What coroutines waiting on ``key`` share: ``key`` within the running event loop only (a
    wait belongs to the loop that made it)."""
    import asyncio  # the async client's: `import llmclient` does not load it

    return (id(asyncio.get_running_loop()), key)


# -- CPU work, off the event loop -----------------------------------------------------------------

_A = TypeVar("_A")


def off_loop(fn: Callable[[_A], T], arg: _A) -> T:
    """``fn(arg)``: a sync client is on its caller's thread already."""
    return fn(arg)


async def aoff_loop(fn: Callable[[_A], T], arg: _A) -> T:
    """``fn(arg)`` in a worker thread: CPU work (an image's preparation, ~100 ms) off the loop."""
    import asyncio  # the async client's: `import llmclient` does not load it

    return await asyncio.to_thread(fn, arg)


def start_task(coro_fn: Callable[[], Any]) -> Any:
    """A task running ``coro_fn()`` on the running event loop, or None when no loop runs (then
    nothing is started)."""
    import asyncio  # the async client's: `import llmclient` does not load it

    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return None
    return loop.create_task(coro_fn())
