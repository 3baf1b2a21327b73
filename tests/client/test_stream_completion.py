"""A stream is complete only when every choice it carried got a finish_reason.

``[DONE]`` alone is not completion: llama-cpp-python's server ends a stream it interrupts
with ``[DONE]`` and no finish_reason (tests/interop has that against the real server). Here
the exact shapes come from the fake server, through ``OpenAI`` and ``AsyncOpenAI`` (``drive``),
chat and completions; a cut stream is never stored in the response cache, and the next call on
the client works.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

import llmclient
from llmclient.api.streaming import unfinished_message
from llmclient.cache import ResponseCache
from tests._both import Drive

from .fakeserver import HypercornServer

MSG = [{"role": "user", "content": "hi"}]


def fault(spec: str) -> dict[str, str]:
    return {"x-test-fault": spec}


def create(c: Any, kind: str, spec: str, **kw: Any) -> Any:
    """The stream of a chat or completions call carrying fault ``spec`` (sync or async)."""
    headers = fault(spec) if spec else None
    if kind == "chat":
        kw.setdefault("messages", MSG)
        return c.chat.completions.create(model="m", stream=True, extra_headers=headers, **kw)
    return c.completions.create(model="m", prompt="hi", stream=True, extra_headers=headers, **kw)


def drain(drive: Drive, c: Any, kind: str, spec: str, **kw: Any) -> tuple[Any, list[Any], BaseException | None]:
    """(stream, chunks got, error raised) for one stream read to its end by ``c``."""
    got: list[Any] = []
    stream = drive(create(c, kind, spec, **kw))
    if not drive.is_async:
        try:
            for ch in stream:
                got.append(ch)
        except llmclient.APIError as exc:
            return stream, got, exc
        return stream, got, None

    async def read() -> BaseException | None:
        try:
            async for ch in stream:
                got.append(ch)
        except llmclient.APIError as exc:
            return exc
        return None

    return stream, got, drive(read())


def make_client(drive: Drive, fake: HypercornServer, **kw: Any) -> Any:
    return drive.client(base_url=fake.base_url, api_key="sk-test", max_retries=0, **kw)


# -- the rule, pure ------------------------------------------------------------------------------

def test_every_choice_finished_is_complete_with_or_without_done() -> None:
    assert unfinished_message({0: True}, done=True) is None
    assert unfinished_message({0: True, 1: True}, done=False) is None


def test_done_without_finish_reason_names_the_choice() -> None:
    assert unfinished_message({0: False}, done=True) == (
        "Incomplete stream: the stream ended with [DONE] but choice 0 has no finish_reason")
    assert unfinished_message({0: True, 1: False, 2: False}, done=False) == (
        "Incomplete stream: the stream ended without [DONE] but choices 1, 2 have no finish_reason")


def test_done_before_any_choice_is_incomplete() -> None:
    assert unfinished_message({}, done=True) == (
        "Incomplete stream: the stream ended with [DONE] before any choice")


# -- against a server that sends exactly these shapes --------------------------------------------

@pytest.mark.parametrize("kind", ["chat", "completions"])
def test_done_without_finish_reason_raises_with_trace_id(drive: Drive, fake: HypercornServer, kind: str) -> None:
    c = make_client(drive, fake)
    stream, got, err = drain(drive, c, kind, "no_finish;chunks=3")
    assert isinstance(err, llmclient.IncompleteStreamError)
    assert "stream ended with [DONE] but choice 0 has no finish_reason" in str(err)
    assert err.trace_id == stream.trace_id and stream.trace_id in str(err)
    assert err.timings is not None and err.request is not None
    assert len(got) == (4 if kind == "chat" else 3)  # every chunk was handed over before it
    # The connection and the client stay usable: the next stream on it completes.
    _, chunks, err2 = drain(drive, c, kind, "chunks=2")
    assert err2 is None and chunks[-1].choices[0].finish_reason == "stop"


@pytest.mark.parametrize("spec", ["open_choice=1", "open_choice=1;no_done"])
def test_one_choice_left_open_raises_naming_it(drive: Drive, fake: HypercornServer, spec: str) -> None:
    _, got, err = drain(drive, make_client(drive, fake), "chat", spec)
    assert isinstance(err, llmclient.IncompleteStreamError)
    end = "without [DONE]" if "no_done" in spec else "with [DONE]"
    assert f"stream ended {end} but choice 1 has no finish_reason" in str(err)
    assert any(ch.choices[0].finish_reason == "stop" for ch in got)  # choice 0 did finish


def test_finish_reason_without_done_is_still_complete(drive: Drive, fake: HypercornServer) -> None:
    _, got, err = drain(drive, make_client(drive, fake), "chat", "no_done")
    assert err is None and got[-1].choices[0].finish_reason == "stop"


def test_cut_stream_is_not_cached_and_a_complete_one_is(drive: Drive, fake: HypercornServer) -> None:
    cache = ResponseCache("memory")
    c = make_client(drive, fake, cache=cache)
    # A fresh question per run: the fake server is shared by the session.
    kw: dict[str, Any] = {"messages": [{"role": "user", "content": f"q {uuid.uuid4().hex}"}],
                          "temperature": 0}
    before = len(fake.app.seen)
    stream, _, err = drain(drive, c, "chat", "no_finish", **kw)
    assert isinstance(err, llmclient.IncompleteStreamError)
    assert stream.timings.cache == "miss" and cache.stats()["stores"] == 0
    # Asked again, the server answers again (nothing was stored), and this time completely.
    stream, chunks, err = drain(drive, c, "chat", "", **kw)
    assert err is None and stream.timings.cache == "miss" and cache.stats()["stores"] == 1
    assert len(fake.app.seen) - before == 2
    replay, again, err = drain(drive, c, "chat", "no_finish", **kw)  # a hit never reaches the server
    assert err is None and replay.timings.cache == "hit" and len(fake.app.seen) - before == 2
    assert [ch.choices[0].delta.content for ch in again] == [ch.choices[0].delta.content for ch in chunks]
