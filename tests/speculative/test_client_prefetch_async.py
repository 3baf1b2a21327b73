"""Speculative prefetch through ``AsyncOpenAI`` (prefetches are tasks), against the live server."""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from llmclient import AsyncOpenAI
from llmclient._prefetch import SpeculationConfig
from llmclient.speculative import BudgetConfig

MODEL = "sim-zero"
ROOMY = BudgetConfig(max_in_flight=4, max_load_share=4.0, burst=8.0, max_candidates=3)


async def served(origin: str) -> float:
    async with httpx.AsyncClient() as http:
        text = (await http.get(origin + "/metrics", timeout=10)).text
    found = re.search(r'^http_requests_total\{status="200"\} (\S+)$', text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


async def wait_until(check: Callable[[], bool], deadline_s: float = 15.0) -> None:
    end = time.monotonic() + deadline_s
    while not check():
        if time.monotonic() > end:
            raise AssertionError("background speculation did not settle in time")
        await asyncio.sleep(0.02)


async def idle(client: AsyncOpenAI) -> None:
    await wait_until(lambda: client.speculation_stats()["in_flight"] == 0)


def conversation() -> list[dict[str, Any]]:
    return [{"role": "user", "content": f"Tell me about herons {uuid.uuid4().hex[:8]}"}]


def followup(messages: list[dict[str, Any]], answer: Any, text: str) -> list[dict[str, Any]]:
    return [*messages, {"role": "assistant", "content": answer.choices[0].message.content},
            {"role": "user", "content": text}]


def make_client(ref_server: Any, **config: Any) -> AsyncOpenAI:
    return AsyncOpenAI(base_url=ref_server.base_url, api_key="k",
                       speculation=SpeculationConfig(budget=config.pop("budget", ROOMY), **config))


def test_async_predicted_followup_is_a_hit(ref_server: Any) -> None:
    async def main() -> None:
        client = make_client(ref_server)
        messages = conversation()
        first = await client.chat.completions.create(model=MODEL, messages=messages, temperature=0,
                                                     max_tokens=8, prefetch=["continue"])
        await idle(client)
        before = await served(ref_server.url)
        second = await client.chat.completions.create(
            model=MODEL, messages=followup(messages, first, "continue"), temperature=0, max_tokens=8)
        assert second.timings.cache == "hit"
        assert await served(ref_server.url) - before == 1  # the /metrics GET only
        assert client.speculation_stats()["hits"] == 1
        await client.close()

    asyncio.run(main())


def test_async_app_call_joins_the_prefetch_task(ref_server: Any) -> None:
    async def main() -> None:
        client = make_client(ref_server, headers={"x-fault": "slow_ms=150"})
        messages = conversation()
        first = await client.chat.completions.create(model=MODEL, messages=messages, temperature=0,
                                                     max_tokens=6, prefetch=["continue"])
        second = await client.chat.completions.create(
            model=MODEL, messages=followup(messages, first, "continue"), temperature=0, max_tokens=6)
        assert second.timings.cache == "join"
        assert client.speculation_stats()["joins"] == 1
        await client.close()

    asyncio.run(main())


def test_async_stale_prefetch_tasks_are_cancelled(ref_server: Any) -> None:
    async def main() -> None:
        client = make_client(ref_server, headers={"x-fault": "slow_ms=200"})
        messages = conversation()
        first = await client.chat.completions.create(model=MODEL, messages=messages, temperature=0,
                                                     max_tokens=40, prefetch=["continue", "why?"])
        await asyncio.sleep(0.3)
        await client.chat.completions.create(model=MODEL, messages=followup(messages, first, "stop"),
                                             temperature=0, max_tokens=4)
        await idle(client)  # the tasks were cancelled, not run to their 8 s end
        stats = client.speculation_stats()
        assert stats["cancelled"] == 2 and stats["errors"] == 0 and stats["wasted_tokens"] < 2 * 40
        await client.close()

    asyncio.run(main())


def test_async_prefetch_failures_never_fail_the_call(ref_server: Any) -> None:
    async def main() -> None:
        client = make_client(ref_server, headers={"x-fault": "status=429;retry_after=30"})
        # Junk first: once the 429 arrives, the client stops planning (backs off) for 30 s.
        ok = await client.chat.completions.create(
            model=MODEL, messages=conversation(), temperature=0, max_tokens=4,
            prefetch=lambda request, answer: [None])
        assert ok.choices[0].message.content
        ok = await client.chat.completions.create(model=MODEL, messages=conversation(), temperature=0,
                                                  max_tokens=4, prefetch=["continue"])
        assert ok.choices[0].message.content
        await idle(client)
        stats = client.speculation_stats()
        assert stats["errors"] == 2  # the 429 and the junk prediction
        await client.close()

    asyncio.run(main())


def test_async_keep_warm_stops_on_close(ref_server: Any) -> None:
    async def main() -> None:
        client = AsyncOpenAI(base_url=ref_server.base_url, api_key="k")
        warm = await client.warm(messages=conversation(), model=MODEL, keep_warm=0.2)
        assert warm.usage.completion_tokens == 1
        await wait_until(lambda: client.speculation_stats()["warmups"] >= 3)
        await client.close()
        settled = client.speculation_stats()["warmups"]
        await asyncio.sleep(0.4)
        assert client.speculation_stats()["warmups"] == settled
        assert client.speculation_stats()["keep_warm"] == 0

    asyncio.run(main())


@pytest.mark.parametrize("bad", [0, -2.5])
def test_async_warm_refuses_a_bad_keep_warm(ref_server: Any, bad: float) -> None:
    async def main() -> None:
        client = AsyncOpenAI(base_url=ref_server.base_url, api_key="k")
        with pytest.raises(ValueError, match="keep_warm"):
            await client.warm(messages=conversation(), model=MODEL, keep_warm=bad)

    asyncio.run(main())
