"""HTTP/1.1 pools (llmclient/transport/http1.py) against the reference server with --http1-only (granian):
they grow with concurrency up to their cap, keep connections warm for the next calls, survive
fork(), and a CancelToken ends a request in flight by closing its connection only.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

import llmclient
from llmclient import AsyncOpenAI, OpenAI
from llmclient.features.hedge import CancelToken
from llmclient.transport.connect import open_sync
from llmclient.transport.http1 import SyncPool
from llmclient.transport.lanes import SyncTransport, TransportSettings
from tests.conftest import RefServer

CHAT = "sim-zero"
MSG = [{"role": "user", "content": "hi"}]


def _pool(client: Any, base_url: str) -> Any:
    rec = client._transport.origin_record(httpx.URL(base_url))
    assert rec.h2 is False and rec.h1_lane is not None
    return rec.h1_lane.transport


def test_async_pool_grows_with_concurrency_then_reuses_warm_connections(ref_server_h1: RefServer) -> None:
    async def go() -> tuple[int, list[bool], int]:
        await llmclient.aclose_all()
        c = AsyncOpenAI(base_url=ref_server_h1.base_url, api_key="k", timeout=30, max_retries=0)
        await asyncio.gather(*(c.chat.completions.create(model=CHAT, messages=MSG, max_tokens=2)
                               for _ in range(16)))
        opened = _pool(c, ref_server_h1.base_url)._count
        reused = []
        for _ in range(20):
            r = await c.chat.completions.create(model=CHAT, messages=MSG, max_tokens=2)
            reused.append(r.timings.connection_reused)
        after = _pool(c, ref_server_h1.base_url)._count
        await llmclient.aclose_all()
        return opened, reused, after
    opened, reused, after = asyncio.run(go())
    assert 2 <= opened <= 16  # one connection per call in flight, opened on demand
    assert all(reused) and after == opened  # no new connection for sequential calls


def test_sync_pool_grows_with_threads_and_stays_within_its_cap(ref_server_h1: RefServer) -> None:
    seen: list[int] = []
    opened = 0
    lock = threading.Lock()

    def open_socket(request: httpx.Request) -> Any:
        nonlocal opened
        with lock:
            opened += 1
        return open_sync("127.0.0.1", ref_server_h1.port, None, request)

    pool = SyncPool(open_socket, max_connections=3, idle_expiry_s=30.0)
    url = ref_server_h1.base_url + "/models"

    def call(_: int) -> int:
        r = pool.handle_request(httpx.Request("GET", url, extensions={"timeout": {"read": 30, "pool": 30}}))
        body = b"".join(r.stream)
        r.stream.close()
        with lock:
            seen.append(pool._count)
        return len(body)

    with ThreadPoolExecutor(8) as ex:
        sizes = list(ex.map(call, range(64)))
    pool.close()
    assert all(sizes) and max(seen) <= 3 and 2 <= opened <= 3  # waited for a free one at the cap


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_a_client_warmed_before_fork_keeps_its_http1_connection(ref_server_h1: RefServer) -> None:
    client = OpenAI(base_url=ref_server_h1.base_url, api_key="k", timeout=30, max_retries=0)
    assert client.chat.completions.create(model=CHAT, messages=MSG, max_tokens=3).timings.http_version == "HTTP/1.1"
    pids = []
    for _ in range(3):
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                for _ in range(30):
                    client.chat.completions.create(model=CHAT, messages=MSG, max_tokens=3)
                code = 0
            except BaseException as exc:
                sys.stderr.write(f"child failed: {exc!r}\n")
            finally:
                os._exit(code)
        pids.append(pid)
    assert [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in pids] == [0, 0, 0]
    after = client.chat.completions.create(model=CHAT, messages=MSG, max_tokens=3)
    assert after.timings.connection_reused


def test_a_cancel_token_ends_a_waiting_http1_request_and_the_pool_goes_on(ref_server_h1: RefServer) -> None:
    transport = SyncTransport(TransportSettings(http2=False))
    url = ref_server_h1.base_url + "/chat/completions"
    body = b'{"model": "sim-zero", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}'
    token = CancelToken()
    stalled = httpx.Request("POST", url, content=body, headers={"x-fault": "stall_ms=20000"},
                            extensions={"timeout": {"read": 60}, "llmclient.cancel": token})
    outcome: list[BaseException] = []

    def send() -> None:
        try:
            transport.send(stalled)
        except BaseException as exc:
            outcome.append(exc)

    t = threading.Thread(target=send)
    t.start()
    t.join(0.5)
    token.cancel(httpx.ReadError("cancelled: the other copy won"))
    t.join(20)
    assert not t.is_alive() and outcome and "the other copy won" in str(outcome[0])
    ok = transport.send(httpx.Request("POST", url, content=body, extensions={"timeout": {"read": 30}}))
    assert ok.status_code == 200 and ok.read()
    ok.close()
    pool = transport.origin_record(httpx.URL(url)).h1_lane.transport
    assert pool._count == 1  # the cancelled request's connection was closed, not reused
    transport.close()
