"""One worker process of the shared-budget tests: ``python -m tests.admit._worker BASE_URL KEY
REDIS CALLS KIND`` makes CALLS chat calls of 200 tokens each (KIND: sync or async; REDIS: a URL or "-") and prints
one JSON line: calls answered, 429s seen, calls paced, whether the budget was shared."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import llmclient

PROMPT = "abcd" * 10


def _summary(client: Any, answered: int) -> str:
    limits: dict[str, Any] = next(iter(client.rate_limits.values()), {})
    return json.dumps({"answered": answered, "refused_429": limits.get("refused_429", 0),
                       "paced_calls": limits.get("paced_calls", 0), "shared": limits.get("shared", False)})


def run_sync(base_url: str, key: str, redis: str | None, calls: int) -> str:
    with llmclient.OpenAI(base_url=base_url, api_key=key, pacing=True, redis=redis, max_retries=8) as client:
        for _ in range(calls):
            client.chat.completions.create(model="gpt-4o-mini", max_tokens=190,
                                           messages=[{"role": "user", "content": PROMPT}])
        return _summary(client, calls)


async def run_async(base_url: str, key: str, redis: str | None, calls: int) -> str:
    async with llmclient.AsyncOpenAI(base_url=base_url, api_key=key, pacing=True, redis=redis,
                                     max_retries=8) as client:
        for _ in range(calls):
            await client.chat.completions.create(model="gpt-4o-mini", max_tokens=190,
                                                 messages=[{"role": "user", "content": PROMPT}])
        return _summary(client, calls)


if __name__ == "__main__":
    base_url, key, redis_arg, n, kind = sys.argv[1:6]
    redis_url = None if redis_arg == "-" else redis_arg
    if kind == "sync":
        print(run_sync(base_url, key, redis_url, int(n)))
    else:
        print(asyncio.run(run_async(base_url, key, redis_url, int(n))))
