"""Early resume of a silent background stream (issue 32, its last goal): a ``background=True``
Responses stream silent longer than its learned threshold gets its resume GET opened beside the
silent connection, before the idle limit; the first of the two to bring the next event wins.

The threshold is a pure function (``pipeline.resume.early_resume_after``), tested directly and
with hypothesis. The race runs against real reference-server processes whose run-wide faults hit
the first request only (the POST): it goes silent after 5 chunks (``stall_after``), for good or
for ``resume_ms``; the resume GET is served cleanly, or held back (``stall_ms``) so that the
silent connection speaks first. Assertions are on which path won and on the events (order, no
duplicate, no gap), never on time. ``OpenAI`` and ``AsyncOpenAI``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from llmclient.layers.options import CallOptions, split_options
from llmclient.pipeline.resume import (
    EARLY_RESUME_CAP,
    EARLY_RESUME_CAP_S,
    EARLY_RESUME_FLOOR_S,
    EARLY_RESUME_MIN_GAPS,
    EARLY_RESUME_SPARSE_FACTOR,
    check_early_resume,
    early_resume_after,
)
from tests._both import Drive
from tests.conftest import FAULT_HEADERS, RefServer, start_ref_server, stop_ref_server

ASK = {"model": "gpt-4o-mini", "input": "Tell a long story.", "max_output_tokens": 64,
       "temperature": 0}


# -- the threshold, pure --------------------------------------------------------------------

def test_no_gap_waits_the_cap_and_a_few_gaps_wait_longer_than_many() -> None:
    assert early_resume_after([], 60.0) == 60.0 * EARLY_RESUME_CAP
    assert early_resume_after([], None) == EARLY_RESUME_CAP_S
    few = [0.02] * (EARLY_RESUME_MIN_GAPS - 1)
    assert early_resume_after(few, 60.0) == pytest.approx(0.02 * EARLY_RESUME_SPARSE_FACTOR)
    assert early_resume_after(few, 60.0) > early_resume_after([0.02] * EARLY_RESUME_MIN_GAPS, 60.0)
    assert early_resume_after([30.0], 2.0) == 2.0 * EARLY_RESUME_CAP


def test_a_steady_stream_learns_a_short_threshold_floored() -> None:
    assert early_resume_after([0.001] * 20, 60.0) == EARLY_RESUME_FLOOR_S
    fast = early_resume_after([0.02] * 20, 60.0)
    assert EARLY_RESUME_FLOOR_S <= fast < 1.0
    assert early_resume_after([0.02] * 19 + [10.0], 60.0) >= fast  # one long gap raises it
    assert early_resume_after([5.0] * 20, 4.0) == 4.0 * EARLY_RESUME_CAP  # capped below the limit


@given(st.lists(st.floats(min_value=0.0, max_value=100.0), max_size=80),
       st.one_of(st.none(), st.floats(min_value=0.01, max_value=600.0)))
def test_the_threshold_stays_between_floor_and_cap(gaps: list[float], idle: float | None) -> None:
    cap = EARLY_RESUME_CAP_S if idle is None else idle * EARLY_RESUME_CAP
    wait = early_resume_after(gaps, idle)
    assert wait <= cap
    assert wait >= min(EARLY_RESUME_FLOOR_S, cap)
    if idle is not None:
        assert wait < idle  # always before the watchdog's own resume


@given(st.lists(st.floats(min_value=0.0, max_value=10.0), min_size=1, max_size=60),
       st.floats(min_value=1.0, max_value=5.0))
def test_slower_gaps_never_lower_the_threshold(gaps: list[float], factor: float) -> None:
    assert early_resume_after([g * factor for g in gaps], 60.0) >= early_resume_after(gaps, 60.0)


@pytest.mark.parametrize("bad", [None, 0, 1, "yes"])
def test_the_setting_is_a_bool_named_when_wrong(bad: object) -> None:
    with pytest.raises(ValueError, match="stream_early_resume"):
        check_early_resume(bad)
    with pytest.raises(ValueError, match="stream_early_resume"):
        split_options({"stream_early_resume": bad}, CallOptions())
    assert split_options({"stream_early_resume": False}, CallOptions())[1].stream_early_resume is False


# -- the race, against the reference server ---------------------------------------------------

def _server(*faults: str) -> Iterator[RefServer]:
    server = start_ref_server("--faults", ",".join(faults))
    try:
        yield server
    finally:
        stop_ref_server(server)


@pytest.fixture
def stall_once() -> Iterator[RefServer]:
    """The POST goes silent after 5 chunks and stays silent until the client leaves."""
    yield from _server("stall_after=5;times=1")


@pytest.fixture
def fault_headers() -> Iterator[RefServer]:
    server = start_ref_server(FAULT_HEADERS)
    try:
        yield server
    finally:
        stop_ref_server(server)


# Every request carrying it waits 6 s before its first byte; the POST then goes silent after 5
# chunks for 5 s and goes on. The early resume (the same header) opens within 4 s of the silence
# (the threshold's cap: half the idle limit of 8 s) and answers 6 s after it opens: the silent
# connection speaks first (at 5 s), before the watchdog (8 s).
PAUSE_THEN_SLOW_RESUME = "stall_ms=6000;stall_after=5;resume_ms=5000"


def _stream(drive: Drive, client, **extra) -> tuple[list, object]:
    stream = drive(client.responses.create(**ASK, background=True, stream=True, **extra))
    return drive.iterate(stream), stream


def _check_whole(drive: Drive, client, events: list) -> None:
    assert [e.sequence_number for e in events] == list(range(len(events)))  # no gap, no duplicate
    assert events[-1].type == "response.completed"
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    done = drive(client.responses.retrieve(events[0].response.id))
    assert text == done.output_text != ""


def _in_flight(server: RefServer) -> float:
    """The server's HTTP requests in flight, this /metrics request included."""
    text = httpx.get(server.url + "/metrics").text
    line = next(x for x in text.splitlines() if x.startswith("http_requests_in_flight "))
    return float(line.split()[1])


def _until_only_this_request(server: RefServer) -> float:
    """Waits (up to 20 s) for the server to have only the /metrics request in flight: the silent
    stream's handler ended because the client closed its connection or stream."""
    deadline = time.monotonic() + 20.0
    while (left := _in_flight(server)) > 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def test_a_silent_background_stream_is_resumed_early_and_the_silent_connection_closed(
        drive: Drive, stall_once: RefServer) -> None:
    # The idle limit (10 s) is far beyond the cap of the threshold (5 s): only the early resume
    # can finish this stream before the watchdog.
    client = drive.client(base_url=stall_once.base_url, api_key="k", max_retries=0,
                          stream_idle_timeout=10.0)
    events, stream = _stream(drive, client)
    _check_whole(drive, client, events)
    record = stream.timings
    assert (record.early_resumes, record.early_resumes_won, record.resumes) == (1, 1, 1)
    assert _until_only_this_request(stall_once) == 1  # the silent POST's handler was cancelled


@pytest.mark.interop  # waits out a 20 s stall on purpose: the slow suite (.ci/run runs it)
def test_a_stream_that_speaks_first_keeps_its_order_and_the_resume_is_dropped(
        drive: Drive, fault_headers: RefServer) -> None:
    client = drive.client(base_url=fault_headers.base_url, api_key="k", max_retries=0,
                          stream_idle_timeout=8.0)
    events, stream = _stream(drive, client, extra_headers={"x-fault": PAUSE_THEN_SLOW_RESUME})
    _check_whole(drive, client, events)
    record = stream.timings
    assert (record.early_resumes, record.early_resumes_won, record.resumes) == (1, 0, 0)
    assert _until_only_this_request(fault_headers) == 1  # the held-back GET was closed


def test_early_resume_can_be_turned_off(drive: Drive, stall_once: RefServer) -> None:
    client = drive.client(base_url=stall_once.base_url, api_key="k", max_retries=0,
                          stream_idle_timeout=1.0, stream_early_resume=False)
    events, stream = _stream(drive, client)
    _check_whole(drive, client, events)
    record = stream.timings
    assert (record.early_resumes, record.early_resumes_won, record.resumes) == (0, 0, 1)  # the watchdog's


@pytest.fixture
def clean_server() -> Iterator[RefServer]:
    server = start_ref_server(profile="tiny-fast")  # tokens paced: the events trickle
    try:
        yield server
    finally:
        stop_ref_server(server)


def test_an_app_slow_to_read_is_no_silence_of_the_server(drive: Drive, clean_server: RefServer) -> None:
    # The app holds the third event for 1.5 s, three times the threshold's cap (0.5 s): the
    # events wait in the connection, so no early resume opens.
    client = drive.client(base_url=clean_server.base_url, api_key="k", max_retries=0,
                          stream_idle_timeout=1.0)
    stream = drive(client.responses.create(**ASK, background=True, stream=True))
    events = []
    while True:
        try:
            events.append(drive(stream.__anext__()) if drive.is_async else next(stream))
        except (StopIteration, StopAsyncIteration):
            break
        if len(events) == 3:
            drive.sleep(1.5)
    _check_whole(drive, client, events)
    assert (stream.timings.early_resumes, stream.timings.resumes) == (0, 0)
