"""The I/O of hedged requests: race two copies of a call, keep the first answer, drop the other.

The decisions (which calls, when, how many) are in ``features/hedge.py``; the hedge layer imports this module
only for a call that has a hedge plan, so ``import llmclient`` loads neither asyncio nor a
thread pool for it.

The first copy runs where the call was made (the caller's thread, or its task), as an unhedged
call would: most calls answer before the delay, and for them hedging costs one timer entry.
When the delay passes, the copy starts (a worker thread, or a task) and whichever answers first
wins. A copy that wins cancels the first through the first's CancelToken: over HTTP/2 its stream
is reset and the caller's wait ends with HedgeLost, which is turned into the copy's answer here.
Over HTTP/1.1 (httpcore's connections) a request cannot be cancelled from outside, so the client
does not hedge origins known to speak only that (the hedge layer's plan); should a race run
there anyway (an origin's first call), the first copy's answer is used when it comes.
"""

from __future__ import annotations

import contextvars
import heapq
import itertools
import os
import threading
import time
from collections.abc import Callable, Coroutine
from concurrent import futures
from typing import Any

import httpx

from .._logging import logger
from . import otel as _otel
from .hedge import HedgeLost, HedgeTrack

__all__ = ["race_async", "race_sync"]


def _ms(t0: float) -> float:
    return (time.perf_counter() - t0) * 1000.0


def _lost() -> HedgeLost:
    return HedgeLost("the other copy of this hedged call answered first")


class _Race:
    """Who won, under a lock: the first copy's thread and the copy's completion both ask."""

    __slots__ = ("copy", "hedge", "lock", "winner")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.winner: str | None = None  # "primary" | "hedge" | "over" (the first failed)
        self.copy: Any = None  # the copy's Call, once sent
        self.hedge: Any = None  # its Future or Task

    def decide(self, who: str) -> bool:
        with self.lock:
            if self.winner is None:
                self.winner = who
                return True
            return False

    def copy_answered(self) -> str:
        """The copy has an answer: ``won`` (cancel the first copy), ``taken`` (the first copy
        failed and the caller waits for this one) or ``lost`` (close it)."""
        with self.lock:
            if self.winner is None:
                self.winner = "hedge"
                return "won"
            return "taken" if self.winner == "over" else "lost"


# --------------------------------------------------------------------------- sync


class _Timer:
    """One daemon thread running every sync client's hedge deadlines (a heap of them)."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._heap: list[list[Any]] = []
        self._cond = threading.Condition()
        self._seq = itertools.count()
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()

    def schedule(self, delay_s: float, fn: Callable[[], None]) -> list[Any]:
        """An entry; setting its last item to None cancels it."""
        if self._pid != os.getpid():  # a forked child: the parent's thread does not exist here
            self._reset()
        entry = [time.monotonic() + delay_s, next(self._seq), fn]
        with self._cond:
            heapq.heappush(self._heap, entry)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="llmclient-hedge-timer",
                                                daemon=True)
                self._thread.start()
            elif self._heap[0] is entry:
                self._cond.notify()
        return entry

    def _run(self) -> None:
        while True:
            with self._cond:
                while True:
                    if not self._heap:
                        self._cond.wait()
                        continue
                    wait = self._heap[0][0] - time.monotonic()
                    if wait <= 0:
                        entry = heapq.heappop(self._heap)
                        break
                    self._cond.wait(wait)
            fn = entry[2]
            if fn is not None:
                try:
                    fn()
                except Exception:  # pragma: no cover - fire() does not raise; never kill the timer
                    logger.exception("hedge timer callback failed")


_timer = _Timer()
_pool: futures.ThreadPoolExecutor | None = None
_pool_pid = 0
_pool_lock = threading.Lock()


def _executor() -> futures.ThreadPoolExecutor:
    global _pool, _pool_pid
    if _pool is None or _pool_pid != os.getpid():  # none yet, or the parent's (after a fork)
        with _pool_lock:
            if _pool is None or _pool_pid != os.getpid():
                _pool_pid = os.getpid()
                # Only copies run here (threads start on demand); the first copy of every call
                # stays in the caller's thread.
                _pool = futures.ThreadPoolExecutor(max_workers=256,
                                                   thread_name_prefix="llmclient-hedge")
    return _pool


def race_sync(
    send: Callable[[Any], httpx.Response], call: Any, twin: Callable[[], Any],
    track: HedgeTrack, delay_s: float, adopt: Callable[[Any], None],
) -> httpx.Response:
    """``send(call)`` here; after ``delay_s`` without an answer, ``send(twin())`` in a worker.

    The first answer is returned (``adopt(copy)`` first when it is the copy's); when the first
    copy fails, the other's answer, else the first copy's error.
    """
    t0 = time.perf_counter()
    race = _Race()
    ctx = contextvars.copy_context()

    def fire() -> None:
        with race.lock:
            if race.winner is not None or not track.take():
                return
            race.copy = twin()
            race.hedge = _executor().submit(ctx.run, send, race.copy)
        race.hedge.add_done_callback(copy_done)

    def copy_done(fut: futures.Future[httpx.Response]) -> None:
        if fut.exception() is not None:
            _otel.hedge_copy_done(race.copy, fut.exception())
            return  # the first copy goes on; if it fails too, its error is the answer
        outcome = race.copy_answered()
        _otel.hedge_copy_done(race.copy, outcome)  # the copy's span ends (llmclient.features.otel)
        if outcome == "won":
            call.cancel.cancel(_lost())  # the caller's wait ends with HedgeLost
        elif outcome == "lost":
            _close(fut.result())

    # The call's clock starts before the timer: the copy's record counts from it (twin()), and
    # on a loaded machine the timer may fire before this thread reaches the send loop.
    call.record.begin()
    entry = _timer.schedule(delay_s, fire)
    try:
        response = send(call)
    except HedgeLost:
        return _copy_answer(race, adopt, track, t0)
    except BaseException as exc:
        entry[2] = None
        hedge = _end(race, "over")
        if hedge is not None:
            if not isinstance(exc, Exception):  # KeyboardInterrupt and the like: stop the copy
                race.copy.cancel.cancel(_lost())
                raise
            try:
                answer = hedge.result()  # the first copy failed: the other may yet answer
            except Exception:
                pass
            else:
                return _copy_answer(race, adopt, track, t0, answer)
        raise
    entry[2] = None
    hedge = _end(race, "primary")
    if race.winner == "hedge":  # it won as this answer came (and reset ours): take the copy's
        _close(response)
        return _copy_answer(race, adopt, track, t0)
    if hedge is not None:  # the copy lost: reset its stream (its answer, if any, is closed)
        race.copy.cancel.cancel(_lost())
    track.observe(_ms(t0))
    return response


def _end(race: _Race, who: str) -> Any:
    """The first copy is done (``who``: it answered, or ``over``: it failed); the copy, if one
    was sent."""
    race.decide(who)
    with race.lock:
        return race.hedge


def _copy_answer(race: _Race, adopt: Callable[[Any], None], track: HedgeTrack, t0: float,
                 answer: httpx.Response | None = None) -> httpx.Response:
    if answer is None:
        answer = race.hedge.result()
    adopt(race.copy)
    track.observe(_ms(t0), hedge_won=True)
    return answer


def _close(response: httpx.Response) -> None:
    try:
        response.close()  # an unread HTTP/2 stream is reset, an HTTP/1.1 connection dropped
    except Exception:
        pass


# --------------------------------------------------------------------------- async


async def race_async(
    send: Callable[[Any], Coroutine[Any, Any, httpx.Response]], call: Any, twin: Callable[[], Any],
    track: HedgeTrack, delay_s: float, adopt: Callable[[Any], None],
) -> httpx.Response:
    """As :func:`race_sync`, on the running loop: the first copy is awaited here, the second is
    a task started by a ``call_later`` timer."""
    import asyncio  # asyncio is heavy: the async client's first use loads it, not `import llmclient`

    t0 = time.perf_counter()
    loop = asyncio.get_running_loop()
    race = _Race()

    def fire() -> None:
        if race.winner is not None or not track.take():
            return
        race.copy = twin()
        race.hedge = loop.create_task(send(race.copy))
        race.hedge.add_done_callback(copy_done)

    def copy_done(task: asyncio.Task[httpx.Response]) -> None:
        if task.cancelled() or task.exception() is not None:
            _otel.hedge_copy_done(race.copy, "lost" if task.cancelled() else task.exception())
            return
        outcome = race.copy_answered()
        _otel.hedge_copy_done(race.copy, outcome)  # the copy's span ends (llmclient.features.otel)
        if outcome == "won":
            call.cancel.cancel(_lost())
        elif outcome == "lost":
            closing = loop.create_task(task.result().aclose())
            closing.add_done_callback(lambda t: t.cancelled() or t.exception())

    timer = loop.call_later(delay_s, fire)
    try:
        response = await send(call)
    except HedgeLost:
        return _copy_answer(race, adopt, track, t0)
    except BaseException as exc:
        timer.cancel()
        hedge = _end(race, "over")
        if hedge is not None:
            if isinstance(exc, Exception):  # the first copy failed: the other may yet answer
                try:
                    answer = await hedge
                except Exception:
                    pass
                else:
                    return _copy_answer(race, adopt, track, t0, answer)
            else:  # cancelled by the caller: leave no copy behind
                hedge.cancel()
        raise
    timer.cancel()
    hedge = _end(race, "primary")
    if race.winner == "hedge":  # it won as this answer came (and reset ours): take the copy's
        await response.aclose()
        return _copy_answer(race, adopt, track, t0)
    if hedge is not None and not hedge.done():
        hedge.cancel()  # its stream is reset as the task unwinds
    track.observe(_ms(t0))
    return response
