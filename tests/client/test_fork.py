"""A client warmed before ``fork()`` (gunicorn --preload, Celery's prefork pool,
multiprocessing): the children must not touch the parent's connection, and the parent's
connection must stay intact.

Each child makes 50 calls with a 30 s read timeout; a child that shared the parent's HTTP/2
connection interleaved frames with it and sat out that timeout.
"""

from __future__ import annotations

import asyncio
import os
import sys

import pytest

from llmclient import AsyncOpenAI, OpenAI
from tests.conftest import RefServer

CHAT = "sim-zero"
MSG = [{"role": "user", "content": "hi"}]
CHILDREN, CALLS = 3, 50

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")


def _in_children(work: object) -> list[int]:
    """Fork CHILDREN processes running ``work()``; their exit codes."""
    pids = []
    for _ in range(CHILDREN):
        pid = os.fork()
        if pid == 0:  # the child: never return into pytest
            code = 1
            try:
                work()  # type: ignore[operator]
                code = 0
            except BaseException as exc:
                sys.stderr.write(f"child failed: {exc!r}\n")
            finally:
                os._exit(code)
        pids.append(pid)
    return [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in pids]


def test_sync_client_warmed_before_fork(ref_server: RefServer) -> None:
    client = OpenAI(base_url=ref_server.base_url, api_key="k", timeout=30, max_retries=0)
    assert client.chat.completions.create(model=CHAT, messages=MSG, max_tokens=3).timings.http_version == "HTTP/2"

    def child() -> None:
        for _ in range(CALLS):
            client.chat.completions.create(model=CHAT, messages=MSG, max_tokens=3)

    assert _in_children(child) == [0] * CHILDREN
    after = client.chat.completions.create(model=CHAT, messages=MSG, max_tokens=3)
    assert after.timings.connection_reused  # the parent's own connection survived its children


def test_async_client_warmed_before_fork(ref_server: RefServer) -> None:
    client = AsyncOpenAI(base_url=ref_server.base_url, api_key="k", timeout=30, max_retries=0)

    async def some(n: int) -> None:
        for _ in range(n):
            await client.chat.completions.create(model=CHAT, messages=MSG, max_tokens=3)

    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(some(1))  # the parent's loop and connection stay open over fork

        def child() -> None:
            asyncio.run(some(CALLS))

        assert _in_children(child) == [0] * CHILDREN
        loop.run_until_complete(some(3))
    finally:
        loop.close()
