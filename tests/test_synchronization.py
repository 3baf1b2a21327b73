"""llmclient/_synchronization.py: the waits the generated twins share, each kind with its own
primitive (threads for the sync client, the event loop for the async one)."""

from __future__ import annotations

import asyncio
import threading
import time

from llmclient._synchronization import (
    AsyncBackground,
    AsyncEvent,
    Background,
    Event,
    ashield,
    async_scope,
    shield,
    sync_scope,
)

# Deadlines below only bound a hang; no test asserts how long anything took.
HANG_GUARD_S = 10.0


def test_an_event_wakes_its_waiter_and_a_wait_that_times_out_says_so() -> None:
    event = Event()
    assert event.wait(0.01) is False
    woken: list[bool] = []
    waiter = threading.Thread(target=lambda: woken.append(event.wait(HANG_GUARD_S)))
    waiter.start()
    event.set()
    waiter.join(HANG_GUARD_S)
    assert woken == [True] and event.is_set()


def test_an_async_event_wakes_its_waiter_and_a_wait_that_times_out_says_so() -> None:
    async def go() -> tuple[bool, bool, bool]:
        event = AsyncEvent()
        timed_out = await event.wait(0.01)
        waiter = asyncio.get_running_loop().create_task(event.wait(HANG_GUARD_S))
        await asyncio.sleep(0)
        event.set()
        return timed_out, await waiter, event.is_set()

    assert asyncio.run(go()) == (False, True, True)


def test_an_async_event_set_from_another_thread_wakes_the_loop() -> None:
    async def go() -> bool:
        event = AsyncEvent()
        setter = threading.Thread(target=event.set)  # a sync callback, another thread's cancel
        setter.start()
        woken = await event.wait(HANG_GUARD_S)
        setter.join(HANG_GUARD_S)
        return woken

    assert asyncio.run(go()) is True


def test_shielded_work_runs_to_its_end_when_its_caller_is_cancelled() -> None:
    async def go() -> list[str]:
        done: list[str] = []
        started = asyncio.Event()

        async def work(tag: str) -> str:
            started.set()
            await asyncio.sleep(0.05)
            done.append(tag)
            return tag

        caller = asyncio.get_running_loop().create_task(ashield(work, "batch"))
        await started.wait()
        caller.cancel()
        await asyncio.gather(caller, return_exceptions=True)
        assert caller.cancelled()
        deadline = time.monotonic() + HANG_GUARD_S
        while not done and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        return done

    assert asyncio.run(go()) == ["batch"]
    assert shield(lambda tag: tag * 2, "ab") == "abab"  # the sync twin: run now, in this thread


def test_a_background_thread_is_waited_for_once_told_to_stop() -> None:
    stop = Event()
    runs: list[int] = []

    def loop() -> None:
        while not stop.wait(0.01):
            runs.append(1)

    runner = Background(loop, name="test-background")
    stop.set()
    runner.close(HANG_GUARD_S)
    assert not runner._thread.is_alive()


def test_a_background_task_is_cancelled_on_close() -> None:
    async def go() -> bool:
        cancelled = asyncio.Event()

        async def forever() -> None:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                cancelled.set()
                raise

        runner = AsyncBackground(forever, name="test-background")
        await asyncio.sleep(0)
        await runner.aclose(HANG_GUARD_S)
        return cancelled.is_set() and runner._task.cancelled()

    assert asyncio.run(go()) is True


def test_threads_share_a_scope_and_each_event_loop_has_its_own() -> None:
    assert sync_scope("k") == sync_scope("k")

    async def scope() -> object:
        return async_scope("k")

    loop_a, loop_b = asyncio.new_event_loop(), asyncio.new_event_loop()
    try:
        a1, a2 = loop_a.run_until_complete(scope()), loop_a.run_until_complete(scope())
        b = loop_b.run_until_complete(scope())
    finally:
        loop_a.close()
        loop_b.close()
    assert a1 == a2 and a1 != b
