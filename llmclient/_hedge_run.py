"""The I/O of hedged requests: race two copies of a call, keep the first answer, drop the other.

The decisions (which calls, when, how many) are in ``_hedge``; the clients import this module
only for a call that has a hedge plan, so ``import llmclient`` loads neither asyncio nor a
thread pool for it.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent import futures
from typing import Any

import httpx

from ._hedge import HedgeLost, HedgeTrack

__all__ = ["race_async", "race_sync"]

_pool: futures.ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _executor() -> futures.ThreadPoolExecutor:
    global _pool
    if _pool is None:
        with _pool_lock:
            if _pool is None:
                _pool = futures.ThreadPoolExecutor(max_workers=64, thread_name_prefix="llmclient-hedge")
    return _pool


def _ms(t0: float) -> float:
    return (time.perf_counter() - t0) * 1000.0


# --------------------------------------------------------------------------- sync


def race_sync(
    send: Callable[[Any], httpx.Response], call: Any, twin: Callable[[], Any],
    track: HedgeTrack, delay_s: float, adopt: Callable[[Any], None],
) -> httpx.Response:
    """``send(call)`` in a worker; after ``delay_s`` without an answer, ``send(twin())`` too.

    The first copy to answer (a response, or the primary's error when both fail) is returned;
    ``adopt(copy)`` is called first when the copy won. The loser is cancelled through its
    Call's CancelToken (HTTP/2: its stream is reset and its thread raises HedgeLost); over
    HTTP/1.1, where that cannot be done, its response is closed as soon as it arrives.
    """
    t0 = time.perf_counter()
    pool = _executor()
    primary = pool.submit(contextvars.copy_context().run, send, call)
    done, _ = futures.wait([primary], timeout=delay_s)
    if done or not track.take():
        response = primary.result()
        track.observe(_ms(t0))
        return response
    copy = twin()
    hedge = pool.submit(contextvars.copy_context().run, send, copy)
    pending = {primary, hedge}
    while pending:
        done, pending = futures.wait(pending, return_when=futures.FIRST_COMPLETED)
        fut = _answered(done, primary)
        if fut is not None:
            loser = copy if fut is primary else call
            loser.cancel.cancel(HedgeLost("the other copy of this hedged call answered first"))
            for other in pending:
                other.add_done_callback(_close_sync)
            _settle(fut is hedge, copy, adopt, track, t0)
            answer: httpx.Response = fut.result()
            return answer
    track.observe(_ms(t0))
    raise primary.exception()  # type: ignore[misc]  # both failed: the primary's error


def _answered(done: set[Any], primary: Any) -> Any:
    """The copy that answered among ``done`` (the primary on a tie), or None if they failed."""
    for fut in sorted(done, key=lambda f: f is not primary):
        if fut.exception() is None:
            return fut
    return None


def _settle(won: bool, copy: Any, adopt: Callable[[Any], None], track: HedgeTrack,
            t0: float) -> None:
    if won:
        adopt(copy)
    track.observe(_ms(t0), hedge_won=won)


def _close_sync(fut: futures.Future[httpx.Response]) -> None:
    if fut.cancelled() or fut.exception() is not None:
        return
    try:
        fut.result().close()  # an unread HTTP/2 stream is reset, an HTTP/1.1 connection dropped
    except Exception:
        pass


# --------------------------------------------------------------------------- async


async def race_async(
    send: Callable[[Any], Awaitable[httpx.Response]], call: Any, twin: Callable[[], Any],
    track: HedgeTrack, delay_s: float, adopt: Callable[[Any], None],
) -> httpx.Response:
    """As :func:`race_sync`, on the running loop; the loser is cancelled (its HTTP/2 stream is
    reset, so the server stops working on it)."""
    t0 = time.perf_counter()
    primary = asyncio.ensure_future(send(call))
    tasks = [primary]
    try:
        done, _ = await asyncio.wait(tasks, timeout=delay_s)
        if done or not track.take():
            response = await primary
            track.observe(_ms(t0))
            return response
        copy = twin()
        hedge = asyncio.ensure_future(send(copy))
        tasks.append(hedge)
        pending = set(tasks)
        while pending:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            task = _answered(done, primary)
            if task is not None:
                for other in pending:
                    _drop(other)
                _settle(task is hedge, copy, adopt, track, t0)
                result: httpx.Response = task.result()
                return result
        track.observe(_ms(t0))
        exc = primary.exception()
        assert exc is not None
        raise exc
    except BaseException:  # cancelled by the caller, or an error above: no copy is left behind
        for task in tasks:
            if not task.done():
                _drop(task)
        raise


def _drop(task: asyncio.Future[httpx.Response]) -> None:
    task.cancel()
    task.add_done_callback(_close_async)


def _close_async(task: asyncio.Future[httpx.Response]) -> None:
    if task.cancelled() or task.exception() is not None:
        return
    response = task.result()  # it answered before the cancel reached it
    closing = asyncio.ensure_future(response.aclose())
    closing.add_done_callback(lambda t: t.cancelled() or t.exception())
