"""End to end against the live reference server (``python -m benchmarks.server --profile zero``).

Through ``OpenAI`` and ``AsyncOpenAI`` (``drive``: each test runs on both), but for the
cancellation of an asyncio task, which has no sync counterpart.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import time
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

import httpx
import pytest

import llmclient
from llmclient.transport.lanes import close_all
from tests._both import Drive
from tests.conftest import start_ref_server, stop_ref_server

CHAT = "sim-zero"
EMBED = "text-embedding-3-small"
MSG = [{"role": "user", "content": "Tell me about the sea"}]
T = TypeVar("T")
SERVERS = [("ref_server", "HTTP/2"), ("ref_server_tls", "HTTP/2"), ("ref_server_h1", "HTTP/1.1")]


def make(drive: Drive, server: Any, **kw: Any) -> Any:
    kw.setdefault("max_retries", 0)
    return drive.client(base_url=server.base_url, verify=server.ca_path or True, **kw)


@pytest.mark.parametrize(("fixture", "version"), SERVERS)
def test_every_resource(drive: Drive, request: pytest.FixtureRequest, fixture: str, version: str) -> None:
    server = request.getfixturevalue(fixture)
    c = make(drive, server)
    assert CHAT in [m.id for m in drive.iterate(c.models.list())]
    assert drive(c.models.retrieve(CHAT)).id == CHAT
    r = drive(c.chat.completions.create(model=CHAT, messages=MSG, max_tokens=8))
    assert r.choices[0].message.content and r.choices[0].finish_reason in ("stop", "length")
    assert r.usage.completion_tokens > 0 and r.timings.http_version == version
    assert r._request_id == str(uuid.UUID(r.trace_id))
    rs = drive.gather([lambda: c.chat.completions.create(model=CHAT, messages=MSG, max_tokens=4)] * 8, workers=8)
    assert all(r.timings.http_version == version for r in rs)
    stream = drive(c.chat.completions.create(model=CHAT, messages=MSG, max_tokens=8, stream=True,
                                             stream_options={"include_usage": True}))
    chunks = drive.iterate(stream)
    assert chunks[-1].usage is not None and stream.timings.http_version == version
    assert "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)
    stream = drive(c.chat.completions.create(model=CHAT, messages=MSG, max_tokens=6, stream=True))
    assert len(drive.iterate(stream)) >= 2
    assert drive(c.completions.create(model=CHAT, prompt="Once", max_tokens=4)).choices[0].text
    floats = drive(c.embeddings.create(model=EMBED, input=["a", "b"]))
    assert len(floats.data) == 2 and isinstance(floats.data[0].embedding[0], float)
    b64 = drive(c.embeddings.create(model=EMBED, input="a", encoding_format="base64"))
    assert isinstance(b64.data[0].embedding, str)
    assert drive(c.embeddings.create(model=EMBED, input="x")).data[0].embedding


def test_many_callers_share_one_tls_connection(drive: Drive, ref_server_tls: Any) -> None:
    """32 calls at once on each of 30 fresh HTTP/2 connections over TLS. With the sync client
    one thread reads the connection for every stream while others write their requests; over
    an ``ssl.SSLSocket`` (no lock in OpenSSL's SSL object) that failed a few rounds in 40 with
    "Server disconnected without sending a response" or an SSL internal error, and once crashed
    the interpreter. The TLS state now lives in memory under a lock (llmclient/transport/tls.py)."""
    c = make(drive, ref_server_tls)
    for _ in range(30):
        close_all()  # each round opens a fresh connection: its first reads race its writes
        rs = drive.gather([lambda: c.chat.completions.create(model=CHAT, messages=MSG, max_tokens=4)] * 32,
                          workers=32)
        assert all(r.choices[0].message.content and r.timings.http_version == "HTTP/2" for r in rs)


@pytest.mark.parametrize("wire", ["json", "protobuf"])
def test_embeddings_as_the_official_client_decodes_them(drive: Drive, ref_server: Any, wire: str) -> None:
    """No encoding_format: both clients ask for base64 and hand back floats. The same floats, in
    the official types; the vectors go in after the response object is built (validating them
    one by one cost more than decoding them)."""
    import openai

    inputs = [f"passage {i}" for i in range(64)]
    ours = drive(make(drive, ref_server, wire=wire).embeddings.create(model=EMBED, input=inputs))
    theirs = openai.OpenAI(base_url=ref_server.base_url, api_key="k").embeddings.create(model=EMBED, input=inputs)
    assert type(ours).__name__ == "CreateEmbeddingResponse" and type(ours.data[0]).__name__ == "Embedding"
    assert [d.embedding for d in ours.data] == [d.embedding for d in theirs.data]
    assert all(type(x) is float for x in ours.data[-1].embedding) and len(ours.data[-1].embedding) == 1536
    assert [d.index for d in ours.data] == list(range(64)) and ours.usage.total_tokens == theirs.usage.total_tokens
    if wire == "protobuf":
        assert ours.timings.wire == "protobuf"


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.parametrize("http1", [False, True], ids=["HTTP/2", "HTTP/1.1"])
def test_an_ipv6_origin(drive: Drive, http1: bool) -> None:
    """``http://[::1]:PORT/v1``: the server announces its URL with the brackets (it printed
    ``http://::1:PORT``, which no client parses), and both protocols work over IPv6."""
    if not _ipv6_loopback():
        pytest.skip("no IPv6 loopback on this machine")
    server = start_ref_server("--host", "::1", *(["--http1-only"] if http1 else []))
    try:
        assert server.url.startswith("http://[::1]:")
        c = make(drive, server)
        r = drive(c.chat.completions.create(model=CHAT, messages=MSG, max_tokens=4))
        assert r.choices[0].message.content and r.timings.http_version == ("HTTP/1.1" if http1 else "HTTP/2")
        assert len(drive.iterate(drive(c.chat.completions.create(model=CHAT, messages=MSG, max_tokens=4,
                                                                 stream=True)))) >= 2
    finally:
        stop_ref_server(server)


def test_server_saw_our_request_id(drive: Drive, ref_server: Any) -> None:
    r = drive(make(drive, ref_server).chat.completions.create(model=CHAT, messages=MSG, max_tokens=2))
    assert r._request_id == str(uuid.UUID(r.trace_id))  # the server echoes X-Request-ID
    assert r.timings.server_timing.get("total") is not None


def test_unknown_model(drive: Drive, ref_server: Any) -> None:
    with pytest.raises(llmclient.NotFoundError, match="does not exist") as info:
        drive(make(drive, ref_server).chat.completions.create(model="no-such-model", messages=MSG))
    assert info.value.trace_id in str(info.value)


def test_wrong_base_url_path(drive: Drive, ref_server: Any) -> None:
    c = drive.client(base_url=ref_server.url + "/nope", max_retries=0)
    with pytest.raises(llmclient.NotFoundError, match="not a route"):
        drive(c.chat.completions.create(model=CHAT, messages=MSG))


@pytest.mark.parametrize(("spec", "cls"), [("status=503", llmclient.InternalServerError),
                                           ("oom", llmclient.InternalServerError),
                                           ("status=500", llmclient.InternalServerError)])
def test_injected_status_faults(drive: Drive, ref_server: Any, spec: str, cls: type) -> None:
    with pytest.raises(cls):
        drive(make(drive, ref_server).chat.completions.create(model=CHAT, messages=MSG,
                                                              extra_headers={"x-fault": spec}))


def test_rate_limit_retries_honour_retry_after(drive: Drive, ref_server: Any) -> None:
    c = make(drive, ref_server, max_retries=1)
    with pytest.raises(llmclient.RateLimitError) as info:
        drive(c.chat.completions.create(model=CHAT, messages=MSG,
                                        extra_headers={"x-fault": "status=429;retry_after=0.2"}))
    assert info.value.timings is not None and info.value.timings.retries == 1


@pytest.mark.parametrize("fixture", ["ref_server", "ref_server_h1"])
def test_cut_stream_raises_incomplete(drive: Drive, request: pytest.FixtureRequest, fixture: str) -> None:
    c = make(drive, request.getfixturevalue(fixture))
    stream = drive(c.chat.completions.create(model=CHAT, messages=MSG, max_tokens=20, stream=True,
                                             extra_headers={"x-fault": "cut_after=3"}))
    with pytest.raises(llmclient.IncompleteStreamError):
        drive.iterate(stream)
    assert drive(c.chat.completions.create(model=CHAT, messages=MSG, max_tokens=2)).choices


def test_malformed_sse_raises(drive: Drive, ref_server: Any) -> None:
    stream = drive(make(drive, ref_server).chat.completions.create(
        model=CHAT, messages=MSG, max_tokens=10, stream=True, extra_headers={"x-fault": "malformed_sse"}))
    with pytest.raises(llmclient.MalformedResponseError):
        drive.iterate(stream)


def test_reset_raises_a_public_error(drive: Drive, ref_server: Any) -> None:
    c = make(drive, ref_server)
    with pytest.raises(llmclient.APIError):
        drive.iterate(drive(c.chat.completions.create(model=CHAT, messages=MSG, max_tokens=10, stream=True,
                                                      extra_headers={"x-fault": "reset"})))
    assert drive(c.chat.completions.create(model=CHAT, messages=MSG, max_tokens=2)).choices


@pytest.mark.parametrize("fixture", ["ref_server", "ref_server_tls"])
def test_early_close_keeps_the_h2_connection(drive: Drive, request: pytest.FixtureRequest, fixture: str) -> None:
    c = make(drive, request.getfixturevalue(fixture))
    drive(c.models.list())
    stream = drive(c.chat.completions.create(model=CHAT, messages=MSG, max_tokens=500, stream=True,
                                             extra_headers={"x-fault": "slow_ms=10"}))
    assert len(drive.iterate(stream, limit=1)) == 1
    drive(stream.close())
    closed = time.monotonic()
    for _ in range(5):
        r = drive(c.chat.completions.create(model=CHAT, messages=MSG, max_tokens=2))
        assert r.timings.connection_reused is True and r.timings.http_version == "HTTP/2"
    # The server was told (RST_STREAM) and stopped generating: the stream had 500 tokens at
    # 10 ms each (5 s) to go.
    server = request.getfixturevalue(fixture)
    cancelled = f"request_id={uuid.UUID(stream.trace_id)}"
    while not any(cancelled in line and "client disconnected" in line
                  for line in server.log_path.read_text().splitlines()):
        assert time.monotonic() - closed < 3.0, "the server never heard of the cancelled stream"
        drive.sleep(0.02)
    while _in_flight(server) > 1:  # the /metrics GET itself
        assert time.monotonic() - closed < 3.0, "the server kept generating a cancelled stream"
        drive.sleep(0.02)


def _in_flight(server: Any) -> float:
    verify = ssl.create_default_context(cafile=server.ca_path) if server.ca_path else True
    text = httpx.get(server.url + "/metrics", verify=verify).text
    (line,) = [ln for ln in text.splitlines() if ln.startswith("http_requests_in_flight")]
    return float(line.split()[-1])


def test_cancelled_async_calls_give_their_lane_slots_back(ref_server: Any) -> None:
    """A task cancelled mid-call (asyncio.wait_for, a UI that gave up) must not keep its
    stream slot: otherwise every cancellation shrinks the connection until calls queue.
    Async only: a sync call cannot be cancelled from outside."""
    async def main() -> list[int]:
        c = llmclient.AsyncOpenAI(base_url=ref_server.base_url, max_retries=0)
        await c.chat.completions.create(model=CHAT, messages=MSG, max_tokens=2)
        for _ in range(20):
            task = asyncio.create_task(c.chat.completions.create(model=CHAT, messages=MSG, max_tokens=50))
            await asyncio.sleep(0.001)
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
        transport = c._transport
        slots = [lane.inflight for rec in transport._origins.values() for lane in rec.lanes]
        await llmclient.aclose_all()
        return slots

    assert asyncio.run(main()) == [0]


def test_a_stream_dropped_unclosed_gives_its_slot_back(drive: Drive, ref_server: Any) -> None:
    import gc

    c = make(drive, ref_server)
    for read_one in (True, False):  # a started iteration is finalised; __del__ the rest
        s = drive(c.chat.completions.create(model=CHAT, messages=MSG, max_tokens=500, stream=True))
        if read_one:
            assert len(drive.iterate(s, limit=1)) == 1
        del s
        gc.collect()
        drive.sleep(0.01)
    r = drive(c.chat.completions.create(model=CHAT, messages=MSG, max_tokens=2))
    assert r.timings.connection_reused is True
    slots = _on_the_loop(drive, lambda: [lane.inflight for lane in c._transport._origins[ref_server.url].lanes])
    assert slots == [0]


def _on_the_loop(drive: Drive, read: Callable[[], T]) -> T:
    """``read()``, run on the test's loop for the async kind (its transport is per loop)."""
    async def on_loop() -> T:
        return read()

    return drive(on_loop()) if drive.is_async else read()
