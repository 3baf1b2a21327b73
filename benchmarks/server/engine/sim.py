"""The simulated GPU: the pure :class:`Scheduler` driven by one asyncio step loop.

Each iteration asks the scheduler for a step at the current time, sleeps that step's duration
once for the whole batch (that sleep *is* the GPU), and hands each sequence its token. No request
ever sleeps on its own, so queueing, batching and preemption behave as on a real server.

Sleeping is deadline-corrected: if the event loop woke late on the previous step, the next sleep
is shortened by the overshoot, so a run of steps averages the profile's step time even on a busy
machine (asyncio timers routinely wake late).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections import deque
from collections.abc import AsyncIterator

from ..profiles import Profile
from .base import EngineError, EngineNotReady, EngineRequest, EngineStats, TokenEvent
from .scheduler import Policy, Scheduler, StepPlan

__all__ = ["SimEngine"]

log = logging.getLogger("benchmarks.server.engine.sim")

# Overshoot beyond this is not caught up (a stall, not jitter): the next step simply starts late.
_MAX_CATCH_UP_S = 0.05


class SimEngine:
    """An :class:`~benchmarks.server.engine.base.Engine` backed by a profile's cost model."""

    name = "sim"

    def __init__(self, profile: Profile, *, cold_start_s: float | None = None,
                 rng: random.Random | None = None, scheduling_policy: Policy = "fcfs",
                 preempt_for_waiting: bool = True) -> None:
        if cold_start_s is not None and cold_start_s < 0:
            raise ValueError(f"cold_start_s must be >= 0, got {cold_start_s}")
        self.profile = profile
        self.device = f"simulated {profile.device}"
        self.context_window = profile.context_window
        self.model = profile.model
        self.cold_start_s = profile.cold_start_s if cold_start_s is None else cold_start_s
        self.scheduler = Scheduler(profile, rng=rng, policy=scheduling_policy,
                                   preempt_for_waiting=preempt_for_waiting)
        self._channels: dict[int, _Channel] = {}
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._ready = False
        self._stopped = False
        self.last_plan: StepPlan | None = None

    @property
    def ready(self) -> bool:
        return self._ready

    async def start(self) -> None:
        if self._task is not None:
            return
        if self.cold_start_s:
            await asyncio.sleep(self.cold_start_s)   # loading weights: /health says 503 meanwhile
        self._task = asyncio.create_task(self._step_loop(), name="sim-engine-steps")
        self._ready = True

    async def stop(self) -> None:
        self._ready = False
        self._stopped = True
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self.scheduler.abort_all()
        for chan in self._channels.values():
            chan.put(EngineError("the engine stopped before the request finished"))
        self._channels.clear()

    def submit(self, request: EngineRequest) -> AsyncIterator[TokenEvent]:
        """Queue ``request`` now (errors raise here, before any response is sent)."""
        if not self._ready:
            raise EngineNotReady("the model is still loading" if not self._stopped
                                 else "the engine is stopped")
        loop = asyncio.get_running_loop()
        sid = self.scheduler.add(request, loop.time())
        chan = _Channel(loop)
        self._channels[sid] = chan
        self._wake.set()
        return self._events(sid, chan)

    async def _events(self, sid: int, chan: _Channel) -> AsyncIterator[TokenEvent]:
        try:
            while True:
                event = chan.items.popleft() if chan.items else await chan.get()
                if isinstance(event, EngineError):
                    raise event
                yield event
                if event.finish_reason is not None:
                    return
        finally:
            if self._channels.pop(sid, None) is not None:   # closed early: free its slot
                self.scheduler.cancel(sid)
                self._wake.set()

    def stats(self) -> EngineStats:
        return self.scheduler.stats()

    async def _step_loop(self) -> None:
        while True:
            try:
                await self._steps()
            except Exception:                        # a bug must not hang every client
                log.exception("sim engine step failed; failing the requests in flight")
                self.scheduler.abort_all()
                for chan in self._channels.values():
                    chan.put(EngineError("internal engine error"))
                self._channels.clear()

    async def _steps(self) -> None:
        loop = asyncio.get_running_loop()
        sched = self.scheduler
        debt = 0.0                                   # how late the previous step ended
        while True:
            if not sched.has_work():
                self._wake.clear()
                await self._wake.wait()
                debt = 0.0
                continue
            now = loop.time()
            plan = sched.step(now)
            if plan.idle:
                self._wake.clear()
                timeout = None if plan.wake_at is None else max(0.0, plan.wake_at - now)
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), timeout)
                debt = 0.0
                continue
            self.last_plan = plan
            await asyncio.sleep(max(0.0, plan.duration_s - debt))
            # Lateness against the ideal timeline (this step ideally began `debt` before `now`).
            debt = min(_MAX_CATCH_UP_S, max(0.0, loop.time() - now - plan.duration_s + debt))
            self._deliver(plan)

    def _deliver(self, plan: StepPlan) -> None:
        channels = self._channels
        for out in plan.outputs:
            chan = channels.get(out.seq_id)
            if chan is None:
                continue                             # cancelled while the step ran
            if out.finish_reason is not None:
                del channels[out.seq_id]             # finished: nothing to cancel on close
            chan.put(TokenEvent(out.token_ids, out.finish_reason, out.timing, out.cached))


class _Channel:
    """One request's events: a buffer and at most one waiting reader. Several times cheaper
    than ``asyncio.Queue`` on the per-token path, which the ``zero`` profile makes hot."""

    __slots__ = ("_loop", "_waiter", "items")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self.items: deque[TokenEvent | EngineError] = deque()
        self._waiter: asyncio.Future[None] | None = None

    def put(self, item: TokenEvent | EngineError) -> None:
        self.items.append(item)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def get(self) -> TokenEvent | EngineError:
        while not self.items:
            self._waiter = self._loop.create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        return self.items.popleft()
