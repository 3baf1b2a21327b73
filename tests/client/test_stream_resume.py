"""Cut background streams resume by themselves (issue 32): a ``background=True`` Responses stream
that is cut, or stalls, goes on from its last event through ``GET /responses/{id}?stream=true&
starting_after=N``, in the same iterator, with no gap and no event twice.

Against real reference-server processes whose run-wide faults hit the first request only (the
POST), so the resume is served cleanly; on ``OpenAI`` and ``AsyncOpenAI``.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

import llmclient
from llmclient.pipeline.resume import MAX_RESUMES, next_step, out_of_order, resumable, resume_delay
from tests._both import Drive
from tests.conftest import FAULT_HEADERS, RefServer, start_ref_server, stop_ref_server

ASK = {"model": "gpt-4o-mini", "input": "Tell a long story.", "max_output_tokens": 64,
       "temperature": 0}


def test_only_background_response_streams_are_resumable() -> None:
    assert resumable("POST", "/responses", {"background": True}, True)
    assert not resumable("POST", "/responses", {"background": True}, False)
    assert not resumable("POST", "/responses", {}, True)
    assert not resumable("POST", "/chat/completions", {"background": True}, True)


def test_resumes_back_off_and_are_bounded() -> None:
    assert [resume_delay(i) for i in range(3)] == [0.1, 0.2, 0.4]
    assert resume_delay(30) == 2.0
    assert MAX_RESUMES >= 1


def test_an_event_out_of_order_is_named() -> None:
    assert out_of_order(7, 7) is None
    assert "repeated an event" in (out_of_order(7, 6) or "")
    assert "skipped events" in (out_of_order(7, 9) or "")
    assert "without a sequence_number" in (out_of_order(7, None) or "")


def _server(fault: str) -> Iterator[RefServer]:
    server = start_ref_server(FAULT_HEADERS, "--faults", f"{fault};times=1")
    try:
        yield server
    finally:
        stop_ref_server(server)


@pytest.fixture
def cut_once() -> Iterator[RefServer]:
    yield from _server("cut_after=6")


@pytest.fixture
def stall_once() -> Iterator[RefServer]:
    yield from _server("stall_after=5")


def _events(drive: Drive, client, **extra) -> list:
    stream = drive(client.responses.create(**ASK, background=True, stream=True, **extra))
    events = drive.iterate(stream)
    return [events, stream]


def _check_whole(drive: Drive, client, events: list) -> None:
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert events[-1].type == "response.completed"
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    done = drive(client.responses.retrieve(events[0].response.id))
    assert text == done.output_text != ""


def test_a_cut_background_stream_goes_on_where_it_was(drive: Drive, cut_once: RefServer) -> None:
    client = drive.client(base_url=cut_once.base_url, api_key="k", max_retries=0)
    events, stream = _events(drive, client)
    _check_whole(drive, client, events)
    assert stream.timings.resumes == 1


def test_a_stalled_background_stream_goes_on_where_it_was(drive: Drive, stall_once: RefServer) -> None:
    client = drive.client(base_url=stall_once.base_url, api_key="k", max_retries=0,
                          stream_idle_timeout=1.0)
    events, stream = _events(drive, client)
    _check_whole(drive, client, events)
    assert stream.timings.resumes == 1


def test_a_foreground_stream_is_not_resumed(drive: Drive, cut_once: RefServer) -> None:
    client = drive.client(base_url=cut_once.base_url, api_key="k", max_retries=0)
    stream = drive(client.responses.create(**ASK, stream=True))
    with pytest.raises(llmclient.IncompleteStreamError) as caught:
        drive.iterate(stream)
    assert caught.value.partial.events == 6
    assert stream.timings.resumes == 0


def test_a_resume_the_server_refuses_is_an_error_with_the_partial_answer(
        drive: Drive, cut_once: RefServer) -> None:
    client = drive.client(base_url=cut_once.base_url, api_key="k", max_retries=0)
    stream = drive(client.responses.create(**ASK, background=True, stream=True))

    def step():
        return drive(stream.__anext__()) if drive.is_async else next(stream)

    seen = [step()]  # response.created: then the response is deleted, and the cut comes
    with httpx.Client(base_url=cut_once.base_url) as http:
        assert http.delete(f"/responses/{seen[0].response.id}").status_code == 200
    with pytest.raises(llmclient.IncompleteStreamError) as caught:
        while True:
            seen.append(step())
    err = caught.value
    assert "resuming response" in err.message
    assert "404" in err.message or "not found" in err.message
    assert err.partial.last_sequence_number == 5
    assert [e.sequence_number for e in seen] == list(range(6))


# -- Chat Completions: sent again when nothing was shown ----------------------------------------------
CHAT = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Tell a long story."}],
        "max_tokens": 30, "temperature": 0, "seed": 3}


@pytest.fixture
def cut_at_opening() -> Iterator[RefServer]:
    yield from _server("cut_after=1")  # the role chunk, then the end


@pytest.fixture
def stall_at_opening() -> Iterator[RefServer]:
    yield from _server("stall_after=1")


@pytest.fixture
def cut_in_content() -> Iterator[RefServer]:
    yield from _server("cut_after=4")


def _chat(drive: Drive, client, **extra) -> tuple[list, object]:
    stream = drive(client.chat.completions.create(**CHAT, stream=True, **extra))
    return drive.iterate(stream), stream


def _text(chunks: list) -> str:
    return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)


@pytest.mark.parametrize("fixture", ["cut_at_opening", "stall_at_opening"])
def test_a_chat_stream_that_failed_before_content_is_sent_again(
        drive: Drive, fixture: str, request: pytest.FixtureRequest) -> None:
    server = request.getfixturevalue(fixture)
    client = drive.client(base_url=server.base_url, api_key="k", max_retries=2,
                          stream_idle_timeout=1.0)
    chunks, stream = _chat(drive, client)
    assert stream.timings.resumes == 1
    assert stream.timings.retries == 1  # a re-send is one of the call's retries
    openings = [c for c in chunks if c.choices and c.choices[0].delta.role == "assistant"]
    assert len(openings) == 1  # the re-sent stream's role chunk is not delivered twice
    assert chunks[-1].choices[0].finish_reason is not None
    clean, _ = _chat(drive, client)  # the fault fired once: this one runs whole
    assert _text(chunks) == _text(clean) != ""


def test_max_retries_0_never_sends_a_stream_twice(drive: Drive, cut_at_opening: RefServer) -> None:
    client = drive.client(base_url=cut_at_opening.base_url, api_key="k", max_retries=0)
    stream = drive(client.chat.completions.create(**CHAT, stream=True))
    with pytest.raises(llmclient.IncompleteStreamError) as caught:
        drive.iterate(stream)
    assert stream.timings.resumes == 0
    assert caught.value.partial.events == 1


def test_a_chat_stream_cut_after_content_raises_with_its_partial_answer(
        drive: Drive, cut_in_content: RefServer) -> None:
    client = drive.client(base_url=cut_in_content.base_url, api_key="k", max_retries=2)
    stream = drive(client.chat.completions.create(**CHAT, stream=True))
    with pytest.raises(llmclient.IncompleteStreamError) as caught:
        drive.iterate(stream)
    assert stream.timings.resumes == 0  # content was shown: never sent twice
    assert caught.value.partial.events == 4
    clean, _ = _chat(drive, client)
    assert _text(clean).startswith(caught.value.partial.text)


def test_what_a_failed_stream_does_next() -> None:
    base = {"resumes": 0, "final": False, "resume_from": None, "can_resend": True,
            "content_seen": False}
    assert next_step(**base) == "resend"
    assert next_step(**{**base, "content_seen": True}) is None
    assert next_step(**{**base, "resume_from": ("resp_1", 4), "content_seen": True}) == "resume"
    assert next_step(**{**base, "resumes": MAX_RESUMES}) is None
    assert next_step(**{**base, "final": True, "resume_from": ("resp_1", 4)}) is None
    assert next_step(**{**base, "can_resend": False}) is None
