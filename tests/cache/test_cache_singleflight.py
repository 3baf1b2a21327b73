from __future__ import annotations

import asyncio
import threading
import time

import pytest

from llmclient.cache import AsyncSingleFlight, SingleFlight


def test_threads_share_one_upstream_call() -> None:
    group: SingleFlight[str] = SingleFlight()
    calls = 0
    release = threading.Event()
    lock = threading.Lock()

    def upstream() -> str:
        nonlocal calls
        with lock:
            calls += 1
        release.wait(5)
        return "answer"

    results: list[tuple[str, bool]] = []

    def worker() -> None:
        results.append(group.do("k", upstream, timeout=5))

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 5
    while group.in_flight() == 0 and time.monotonic() < deadline:
        time.sleep(0.005)
    time.sleep(0.1)  # let the others reach the wait; a late one simply leads a new flight
    release.set()
    for t in threads:
        t.join(5)
    assert len(results) == 8 and all(r == "answer" for r, _ in results)
    joined = sum(1 for _, j in results if j)
    assert calls == 8 - joined and calls < 8
    assert group.in_flight() == 0


def test_waiters_go_upstream_themselves_when_the_leader_fails() -> None:
    group: SingleFlight[str] = SingleFlight()
    leader = group.begin("k")
    waiter = group.begin("k")
    assert leader.leader and not waiter.leader
    out: list[tuple[bool, str | None]] = []
    t = threading.Thread(target=lambda: out.append(waiter.wait(5)))
    t.start()
    leader.fail()
    t.join(5)
    assert out == [(False, None)]
    assert group.begin("k").leader  # a failed flight is forgotten


def test_leader_exception_propagates_and_releases_waiters() -> None:
    group: SingleFlight[str] = SingleFlight()

    def boom() -> str:
        raise RuntimeError("upstream down")

    with pytest.raises(RuntimeError):
        group.do("k", boom)
    assert group.in_flight() == 0
    assert group.do("k", lambda: "ok") == ("ok", False)


def test_waiter_timeout_returns_no_result() -> None:
    group: SingleFlight[str] = SingleFlight()
    group.begin("k")
    assert group.begin("k").wait(0.05) == (False, None)


def test_asyncio_tasks_share_one_upstream_call() -> None:
    async def go() -> tuple[int, list[tuple[str, bool]]]:
        group: AsyncSingleFlight[str] = AsyncSingleFlight()
        calls = 0

        async def upstream() -> str:
            nonlocal calls
            calls += 1
            await asyncio.sleep(0.05)
            return "answer"

        results = await asyncio.gather(*(group.do("k", upstream) for _ in range(10)))
        return calls, list(results)

    calls, results = asyncio.run(go())
    assert calls == 1
    assert [r for r, _ in results] == ["answer"] * 10
    assert sum(1 for _, joined in results if joined) == 9


def test_asyncio_leader_cancelled_waiters_go_upstream() -> None:
    async def go() -> list[tuple[str, bool]]:
        group: AsyncSingleFlight[str] = AsyncSingleFlight()
        started = asyncio.Event()

        async def slow() -> str:
            started.set()
            await asyncio.sleep(10)
            return "never"

        async def fast() -> str:
            return "own"

        leader = asyncio.create_task(group.do("k", slow))
        await started.wait()
        waiters = [asyncio.create_task(group.do("k", fast)) for _ in range(3)]
        await asyncio.sleep(0.01)
        leader.cancel()
        return list(await asyncio.gather(*waiters))

    assert asyncio.run(go()) == [("own", False)] * 3
