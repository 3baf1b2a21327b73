"""The in-flight layer (layers/_async/inflight.py): each attempt's record says how many of the
client's attempts to its origin awaited an answer when it was sent, itself included."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from tests._both import Drive

MSG = [{"role": "user", "content": "hi"}]


def test_a_lone_call_is_one_in_flight(drive: Drive, ref_server: Any) -> None:
    client = drive.client(base_url=ref_server.base_url, api_key="k")
    first = drive(client.chat.completions.create(model="sim-zero", messages=MSG, max_tokens=2))
    second = drive(client.chat.completions.create(model="sim-zero", messages=MSG, max_tokens=2))
    assert first.timings.in_flight == 1 and second.timings.in_flight == 1
    assert client._ctx.own("inflight", dict).now() == {}  # nothing counted once they answered


def test_a_call_sent_while_another_waits_counts_it(drive: Drive, ref_server: Any) -> None:
    client = drive.client(base_url=ref_server.base_url, api_key="k")
    counts = client._ctx.own("inflight", dict)  # made by the layer: dict is never called
    slow = {"x-fault": "stall_ms=4000"}  # its first byte waits on the server, far longer than a send takes

    def first() -> Any:
        return client.chat.completions.create(model="sim-zero", messages=MSG, max_tokens=2, extra_headers=slow)

    def second() -> Any:  # sent once the first is counted (a hang guard, not a timing)
        if drive.is_async:
            async def when_counted() -> Any:
                for _ in range(2000):
                    if counts.now():
                        break
                    await asyncio.sleep(0.005)
                return await client.chat.completions.create(model="sim-zero", messages=MSG, max_tokens=2)
            return when_counted()
        deadline = time.monotonic() + 10
        while not counts.now() and time.monotonic() < deadline:
            time.sleep(0.005)
        return client.chat.completions.create(model="sim-zero", messages=MSG, max_tokens=2)

    slow_answer, quick_answer = drive.gather([first, second], workers=2)
    assert slow_answer.timings.in_flight == 1
    assert quick_answer.timings.in_flight == 2  # the slow one was still waiting for its answer
    assert counts.now() == {}
    assert "inflight" in client._chain.layers()


def test_a_failed_attempt_is_counted_out(drive: Drive) -> None:
    client = drive.client(base_url="http://127.0.0.1:9/v1", api_key="k", max_retries=0)
    try:
        drive(client.models.list())
    except Exception:
        pass
    assert client._ctx.own("inflight", dict).now() == {}
