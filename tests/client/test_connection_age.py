"""Connections are retired at their age (``max_connection_age``, transport/aging.py): new calls
go to a new connection while the old one's streams finish there, and the old one is closed
once idle. Against the reference server, HTTP/2 and HTTP/1.1, on ``OpenAI`` and ``AsyncOpenAI``
(``drive``). The ages here are short so the tests are quick; no duration is asserted.
"""

from __future__ import annotations

import random
from typing import Any

import httpx
import pytest

import llmclient
from llmclient.transport import aging
from llmclient.transport.lanes import TransportSettings
from tests._both import Drive

MSG = [{"role": "user", "content": "hi"}]


@pytest.fixture(scope="module")
def model(ref_server: Any) -> str:
    return str(httpx.get(ref_server.base_url + "/models", timeout=10).json()["data"][0]["id"])


def test_retire_at_is_jittered_within_ten_percent() -> None:
    rng = random.Random(3)
    ends = [aging.retire_at(100.0, 300.0, rng.random()) - 100.0 for _ in range(2000)]
    assert min(ends) >= 270.0 and max(ends) <= 330.0
    assert max(ends) - min(ends) > 50.0  # spread, not one value
    assert aging.retire_at(5.0, None, 0.5) == float("inf")
    assert aging.retire_at(0.0, 10.0, 0.5) == 10.0


@pytest.mark.parametrize("bad", [0, -1, "300", True, float("nan")])
def test_a_bad_max_connection_age_is_refused_with_its_name(bad: object) -> None:
    with pytest.raises(ValueError, match="max_connection_age"):
        TransportSettings(max_connection_age=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_connection_age"):
        llmclient.OpenAI(api_key="k", max_connection_age=bad)  # type: ignore[arg-type]


def _age_case(drive: Drive, base_url: str, model: str) -> None:
    c = drive.client(base_url=base_url, api_key="k", max_retries=0, timeout=30, max_connection_age=1.0)
    first = drive(c.chat.completions.create(model=model, messages=MSG, max_tokens=2))
    # a stream opened on the first connection, its answer slowed: it is in flight across the age
    stream = drive(c.chat.completions.create(model=model, messages=MSG, max_tokens=8, stream=True,
                                             extra_headers={"x-fault": "slow_ms=100"}))
    drive.sleep(1.3)  # the first connection is past its age (1 s x 1.1 at most)
    later = drive(c.chat.completions.create(model=model, messages=MSG, max_tokens=2))
    again = drive(c.chat.completions.create(model=model, messages=MSG, max_tokens=2))
    chunks = drive.iterate(stream)
    assert first.timings.connection_reused is False
    assert later.timings.connection_reused is False  # a new connection for the new call
    assert again.timings.connection_reused is True  # ... which the lane keeps using
    text = "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)
    assert text and chunks[-1].choices[0].finish_reason is not None  # the old stream finished in full
    drive(c.chat.completions.create(model=model, messages=MSG, max_tokens=2))
    assert drive(_open_connections(drive, c, base_url)) == 1  # the drained one was closed


def _open_connections(drive: Drive, client: Any, base_url: str) -> Any:
    """How many open connections the client's transport holds to ``base_url`` (a coroutine for the
    async client: its transport belongs to the running loop)."""
    def count(transport: Any) -> int:
        rec = transport.origin_record(httpx.URL(base_url))
        lanes = [*rec.lanes, rec.h1_lane]
        held = [conn for lane in lanes if lane is not None
                for conn in getattr(lane.transport, "_conns", None) or getattr(lane.transport, "_idle", [])]
        return sum(1 for conn in held if not conn.closed)  # (an h2c probe's refused connection: closed)

    if not drive.is_async:
        return count(client._transport)

    async def on_loop() -> int:
        return count(client._transport)

    return on_loop()


def test_an_http2_connection_past_its_age_drains_while_new_calls_use_a_new_one(
        drive: Drive, ref_server: Any, model: str) -> None:
    _age_case(drive, ref_server.base_url, model)


def test_an_http1_connection_past_its_age_is_not_reused(drive: Drive, ref_server_h1: Any, model: str) -> None:
    _age_case(drive, ref_server_h1.base_url, model)


def test_no_age_keeps_one_connection(drive: Drive, ref_server: Any, model: str) -> None:
    c = drive.client(base_url=ref_server.base_url, api_key="k", max_retries=0, timeout=30,
                     max_connection_age=None, default_headers={"x-test": "no-age"})
    drive(c.chat.completions.create(model=model, messages=MSG, max_tokens=2))
    drive.sleep(0.4)
    later = drive(c.chat.completions.create(model=model, messages=MSG, max_tokens=2))
    assert later.timings.connection_reused is True
