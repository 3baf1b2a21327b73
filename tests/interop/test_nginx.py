"""llmclient through nginx 1.22 (HTTP/2: TLS 1.2, TLS 1.3 and h2c listeners; HTTP/1.1 ones; a
per-connection request limit, an idle timeout, a body-size limit, a reload under load, a dead
upstream), sync and async. The upstream is the reference server with its access log on, so the
tests can count what reached it: a request id seen twice upstream is a generation run twice.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

import llmclient
from llmclient import AsyncOpenAI, OpenAI
from llmclient.transport.lanes import close_all
from tests.conftest import RefServer, start_ref_server, stop_ref_server

from .nginx import Nginx, running_nginx

CHAT = "sim-zero"
MSG = [{"role": "user", "content": "hello"}]
_POST = re.compile(r"request_id=(\S+) .* POST /v1/chat/completions (\d+)")


@pytest.fixture(scope="module")
def upstream() -> Iterator[RefServer]:
    server = start_ref_server("--access-log", "--allow-fault-headers")
    yield server
    stop_ref_server(server)


@pytest.fixture(scope="module")
def nginx(upstream: RefServer) -> Iterator[Nginx]:
    with running_nginx(upstream.port) as proxy:
        yield proxy


def upstream_requests(upstream: RefServer) -> Counter[str]:
    """How many times each chat request id reached the upstream."""
    assert upstream.log_path is not None
    return Counter(m.group(1) for m in _POST.finditer(upstream.log_path.read_text()))


def _kw(nginx: Nginx, listener: str, **extra: Any) -> dict[str, Any]:
    return {"base_url": nginx.base_url(listener), "api_key": "k", "verify": nginx.ca_path,
            "timeout": 20, "max_retries": 0, **extra}


def _fresh_async(kw: dict[str, Any], call: Callable[[AsyncOpenAI], Any]) -> Any:
    """One call on a new event loop: a new async transport, so a fresh connection (and, over
    TLS, a fresh handshake)."""
    async def go() -> Any:
        client = AsyncOpenAI(**kw)
        try:
            return await call(client)
        finally:
            await client.close()
    return asyncio.run(go())


EXPECTED_VERSION = {"tls12": "HTTP/2", "tls13": "HTTP/2", "h2c": "HTTP/2", "h1_tls": "HTTP/1.1", "h1": "HTTP/1.1"}


@pytest.mark.parametrize("listener", sorted(EXPECTED_VERSION))
def test_async_fresh_connections_through_every_listener(nginx: Nginx, listener: str) -> None:
    # nginx's SETTINGS arrive with the end of the TLS handshake: a client that answers them
    # before its preface, or on the TCP transport under TLS, failed every fresh connection.
    kw = _kw(nginx, listener)
    for _ in range(8):
        r = _fresh_async(kw, lambda c: c.chat.completions.create(model=CHAT, messages=MSG, max_tokens=4))
        assert r.choices[0].message.content and r.timings.http_version == EXPECTED_VERSION[listener]

    async def stream(c: AsyncOpenAI) -> list[Any]:
        s = await c.chat.completions.create(model=CHAT, messages=MSG, max_tokens=6, stream=True)
        return [chunk async for chunk in s]

    chunks = _fresh_async(kw, stream)
    assert any(ch.choices and ch.choices[0].finish_reason for ch in chunks)


@pytest.mark.parametrize("listener", sorted(EXPECTED_VERSION))
def test_sync_fresh_connections_through_every_listener(nginx: Nginx, listener: str) -> None:
    c = OpenAI(**_kw(nginx, listener))
    for _ in range(4):
        close_all()  # the next call opens a fresh connection
        r = c.chat.completions.create(model=CHAT, messages=MSG, max_tokens=4)
        assert r.choices[0].message.content and r.timings.http_version == EXPECTED_VERSION[listener]
    chunks = list(c.chat.completions.create(model=CHAT, messages=MSG, max_tokens=6, stream=True))
    assert any(ch.choices and ch.choices[0].finish_reason for ch in chunks)


@pytest.mark.parametrize("listener", ["tls12", "tls13"])
def test_sync_threads_share_one_tls_connection(nginx: Nginx, listener: str) -> None:
    """32 threads at once on each of 20 fresh HTTP/2 connections over TLS: one thread reads the
    connection for all while the others write. Over an ``ssl.SSLSocket`` (an OpenSSL object
    two threads must not use at once) this failed calls now and then; the TLS state now lives
    in memory under a lock (llmclient/transport/tls.py)."""
    c = OpenAI(**_kw(nginx, listener))
    for _ in range(20):
        close_all()
        with ThreadPoolExecutor(32) as pool:
            rs = list(pool.map(lambda _: c.chat.completions.create(model=CHAT, messages=MSG, max_tokens=2),
                               range(32)))
        assert all(r.choices[0].message.content and r.timings.http_version == "HTTP/2" for r in rs)


CALLS, CONCURRENCY = 350, 16


def _many_sync(kw: dict[str, Any], during: Callable[[], None] | None = None) -> list[Any]:
    c = OpenAI(**kw)

    def one(_: int) -> Any:
        try:
            return c.chat.completions.create(model=CHAT, messages=MSG, max_tokens=2)
        except llmclient.APIError as exc:
            return exc

    with ThreadPoolExecutor(CONCURRENCY) as pool:
        futures = [pool.submit(one, i) for i in range(CALLS)]
        if during is not None:
            during()
        return [f.result() for f in futures]


def _many_async(kw: dict[str, Any], during: Callable[[], None] | None = None) -> list[Any]:
    async def go() -> list[Any]:
        c = AsyncOpenAI(**kw)
        gate = asyncio.Semaphore(CONCURRENCY)

        async def one() -> Any:
            async with gate:
                try:
                    return await c.chat.completions.create(model=CHAT, messages=MSG, max_tokens=2)
                except llmclient.APIError as exc:
                    return exc

        tasks = [asyncio.ensure_future(one()) for _ in range(CALLS)]
        if during is not None:
            await asyncio.get_running_loop().run_in_executor(None, during)
        try:
            return await asyncio.gather(*tasks)
        finally:
            await c.close()
    return asyncio.run(go())


MANY = {"sync": _many_sync, "async": _many_async}


def _check_once_each(results: list[Any], upstream: RefServer) -> None:
    failures = [r for r in results if isinstance(r, BaseException)]
    assert not failures, failures[:3]
    ids = [r.trace_id for r in results]
    assert len(set(ids)) == CALLS
    deadline = time.monotonic() + 5.0  # the upstream logs a request just after answering it
    while True:
        seen = upstream_requests(upstream)
        if all(seen[_uuid(i)] for i in ids) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    twice = {i: seen[_uuid(i)] for i in ids if seen[_uuid(i)] != 1}
    assert not twice, f"requests that reached the upstream other than once: {twice}"


def _uuid(trace_id: str) -> str:
    return f"{trace_id[:8]}-{trace_id[8:12]}-{trace_id[12:16]}-{trace_id[16:20]}-{trace_id[20:]}"


@pytest.mark.parametrize("mode", sorted(MANY))
def test_goaway_at_the_request_limit_runs_no_request_twice(nginx: Nginx, upstream: RefServer, mode: str) -> None:
    # keepalive_requests 50: nginx sends GOAWAY every 50 streams and answers every stream up
    # to its last-stream-id. max_retries=0: only the streams above it may be sent again.
    results = MANY[mode](_kw(nginx, "request_limit"))
    _check_once_each(results, upstream)


@pytest.mark.parametrize("mode", sorted(MANY))
def test_reload_under_load_loses_and_repeats_nothing(nginx: Nginx, upstream: RefServer, mode: str) -> None:
    def reload_twice() -> None:
        for _ in range(2):
            time.sleep(0.2)
            nginx.reload()

    results = MANY[mode](_kw(nginx, "h2c"), reload_twice)
    _check_once_each(results, upstream)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_idle_timeout_closes_quietly_and_the_next_call_works(nginx: Nginx, mode: str) -> None:
    kw = _kw(nginx, "idle_timeout")
    if mode == "sync":
        c = OpenAI(**kw)
        first = c.chat.completions.create(model=CHAT, messages=MSG, max_tokens=2)
        time.sleep(2.5)  # nginx's keepalive_timeout is 1 s
        second = c.chat.completions.create(model=CHAT, messages=MSG, max_tokens=2)
    else:
        async def go() -> tuple[Any, Any]:
            c = AsyncOpenAI(**kw)
            a = await c.chat.completions.create(model=CHAT, messages=MSG, max_tokens=2)
            await asyncio.sleep(2.5)
            b = await c.chat.completions.create(model=CHAT, messages=MSG, max_tokens=2)
            await c.close()
            return a, b
        first, second = asyncio.run(go())
    assert first.choices[0].message.content and second.choices[0].message.content
    assert not second.timings.connection_reused


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_proxy_413_does_not_turn_request_compression_off(nginx: Nginx, mode: str) -> None:
    # The first body (codings not yet known, so sent as it is) is over client_max_body_size:
    # nginx answers 413 with its own page and no Accept-Encoding. That says nothing about the
    # upstream, which does read zstd/gzip: once a success says so, the same body goes
    # compressed and passes.
    big = [{"role": "user", "content": "tell me about the weather " * 2000}]  # ~52 KB
    kw = _kw(nginx, "small_body")
    if mode == "async":  # another name for the same listener: an origin nothing was learned of
        kw["base_url"] = kw["base_url"].replace("127.0.0.1", "localhost")

    async def calls(c: AsyncOpenAI) -> list[Any]:
        out: list[Any] = []
        for messages in (big, MSG, big):
            try:
                out.append(await c.chat.completions.create(model=CHAT, messages=messages, max_tokens=2))
            except llmclient.APIStatusError as exc:
                out.append(exc)
        return out

    if mode == "async":
        results = _fresh_async(kw, calls)
    else:
        c = OpenAI(**kw)
        results = []
        for messages in (big, MSG, big):
            try:
                results.append(c.chat.completions.create(model=CHAT, messages=messages, max_tokens=2))
            except llmclient.APIStatusError as exc:
                results.append(exc)
    refused = results[0]
    assert isinstance(refused, llmclient.APIStatusError) and refused.status_code == 413
    assert refused.trace_id
    assert results[1].choices[0].message.content
    assert results[2].choices[0].message.content  # compressed under the limit
    assert results[2].timings.request_encoding in ("zstd", "gzip")


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_dead_upstream_is_a_clear_502(nginx: Nginx, mode: str) -> None:
    kw = _kw(nginx, "dead_upstream")
    with pytest.raises(llmclient.InternalServerError) as info:
        if mode == "sync":
            OpenAI(**kw).chat.completions.create(model=CHAT, messages=MSG, max_tokens=2)
        else:
            _fresh_async(kw, lambda c: c.chat.completions.create(model=CHAT, messages=MSG, max_tokens=2))
    assert info.value.status_code == 502 and info.value.trace_id


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("stream", [False, True])
def test_an_upstream_reset_mid_answer_is_a_clear_error_and_runs_once(
        nginx: Nginx, upstream: RefServer, mode: str, stream: bool) -> None:
    # The upstream aborts its connection after the response headers: nginx has already sent
    # them, so it can only cut the HTTP/2 stream. The call fails at once (no read timeout),
    # is not sent again (max_retries=0, and it ran), and the next call works.
    kw = _kw(nginx, "h2c")
    fault = {"x-fault": "reset"}

    async def go_async() -> tuple[Any, Any]:
        c = AsyncOpenAI(**kw)
        try:
            try:
                if stream:
                    s = await c.chat.completions.create(model=CHAT, messages=MSG, max_tokens=8,
                                                        stream=True, extra_headers=fault)
                    first: Any = [chunk async for chunk in s]
                else:
                    first = await c.chat.completions.create(model=CHAT, messages=MSG, max_tokens=8,
                                                            extra_headers=fault)
            except llmclient.APIError as exc:
                first = exc
            return first, await c.chat.completions.create(model=CHAT, messages=MSG, max_tokens=2)
        finally:
            await c.close()

    def go_sync() -> tuple[Any, Any]:
        c = OpenAI(**kw)
        try:
            if stream:
                first: Any = list(c.chat.completions.create(model=CHAT, messages=MSG, max_tokens=8,
                                                            stream=True, extra_headers=fault))
            else:
                first = c.chat.completions.create(model=CHAT, messages=MSG, max_tokens=8, extra_headers=fault)
        except llmclient.APIError as exc:
            first = exc
        return first, c.chat.completions.create(model=CHAT, messages=MSG, max_tokens=2)

    first, second = asyncio.run(go_async()) if mode == "async" else go_sync()
    assert isinstance(first, llmclient.APIError), first
    assert not isinstance(first, llmclient.APITimeoutError)
    assert first.trace_id and second.choices[0].message.content
    deadline = time.monotonic() + 5.0
    while upstream_requests(upstream)[_uuid(first.trace_id)] == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert upstream_requests(upstream)[_uuid(first.trace_id)] == 1


def test_nginx_version_is_recorded(nginx: Nginx) -> None:
    assert nginx.version().startswith("nginx/")
    assert "emerg" not in nginx.error_log()

