"""Background responses of the reference server (benchmarks/server/background.py): runs that
outlive their connection, streams resumed with ``starting_after``, cancel, and the retention and
memory bounds, driven with the official client and raw HTTP against real server processes."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import openai
import pydantic
import pytest
from hypothesis import given
from hypothesis import strategies as st
from openai.types.responses import Response, ResponseStreamEvent

from benchmarks.server.background import admit, evictions, expired, resume_start
from tests.conftest import FAULT_HEADERS, RefServer, start_ref_server, stop_ref_server

MODEL = "gpt-4o-mini"
EVENTS = pydantic.TypeAdapter(ResponseStreamEvent)
# Long enough that a cut or a stall lands mid-answer, short enough to stay quick.
ASK = {"model": MODEL, "input": "Tell a long story.", "temperature": 0, "max_output_tokens": 64}


# -- the pure decisions -----------------------------------------------------------------------
def test_resume_starts_after_the_given_sequence_number() -> None:
    assert resume_start(None) == 0
    assert resume_start(0) == 1
    assert resume_start(41) == 42


def test_a_log_expires_only_after_its_run_finished_and_its_retention_passed() -> None:
    assert not expired(None, now=1e9, retention_s=1)  # still running
    assert not expired(100.0, now=100.5, retention_s=1)
    assert expired(100.0, now=101.5, retention_s=1)


@given(st.lists(st.integers(0, 1000), max_size=20), st.integers(0, 5000), st.integers(0, 5000))
def test_evictions_drop_the_oldest_finished_logs_no_more_than_needed(
        sizes: list[int], live: int, max_bytes: int) -> None:
    finished = [(f"r{i}", n) for i, n in enumerate(sizes)]
    total = live + sum(sizes)
    out = evictions(finished, total, max_bytes)
    assert out == [rid for rid, _ in finished[:len(out)]]  # a prefix: the oldest first
    left = total - sum(sizes[:len(out)])
    if left > max_bytes:
        assert len(out) == len(sizes)  # over even with every finished log gone: live runs' bytes
    if out:
        assert left + sizes[len(out) - 1] > max_bytes  # the last one dropped was needed


def test_admission_refuses_only_when_live_logs_fill_the_bound() -> None:
    assert admit(0, 1)
    assert admit(99, 100)
    assert not admit(100, 100)


# -- against the server -----------------------------------------------------------------------
def _http(server: RefServer, **headers: str) -> httpx.Client:
    return httpx.Client(base_url=server.base_url, timeout=30,
                        headers={"authorization": "Bearer sk-test", **headers})


def _events(r: httpx.Response) -> list[dict]:
    out = []
    for block in r.text.split("\n\n"):
        data = [ln[6:] for ln in block.split("\n") if ln.startswith("data: ")]
        if data:
            out.append(EVENTS.validate_json(data[0]).model_dump())
    return out


def _text(events: list[dict]) -> str:
    return "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")


def _wait_final(client: openai.OpenAI, rid: str) -> Response:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        r = client.responses.retrieve(rid)
        if r.status not in ("queued", "in_progress"):
            return r
        time.sleep(0.02)
    raise AssertionError(f"response {rid} still {r.status} after 30 s")


def _started(client: openai.OpenAI, **extra: object) -> str:
    """Start a streamed background response, read its first event, hang up; its id."""
    stream = client.responses.create(**ASK, background=True, stream=True, **extra)  # type: ignore[call-overload]
    first = next(iter(stream))
    stream.close()  # the client leaves: a background run goes on
    assert first.type == "response.created"
    return str(first.response.id)


@pytest.fixture
def client(ref_server: RefServer) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=ref_server.base_url, api_key="sk-test", max_retries=0) as c:
        yield c


def test_a_background_response_answers_at_once_and_completes_with_the_foreground_text(
        client: openai.OpenAI) -> None:
    queued = client.responses.create(**ASK, background=True)
    assert queued.background is True
    assert queued.status in ("queued", "in_progress")
    done = _wait_final(client, queued.id)
    foreground = client.responses.create(**ASK)
    assert done.status == foreground.status
    assert done.output_text == foreground.output_text != ""
    assert done.background is True


def test_a_cut_stream_resumes_after_its_last_event_with_no_gap_and_no_duplicate(
        ref_server: RefServer, client: openai.OpenAI) -> None:
    with _http(ref_server, **{"x-fault": "cut_after=5"}) as http:
        first = _events(http.post("/responses", json={**ASK, "background": True, "stream": True}))
    assert [e["sequence_number"] for e in first] == list(range(5))  # cut: no final event
    rid = first[0]["response"]["id"]
    assert first[0]["response"]["status"] == "queued"
    # The next connection is cut too, then the third reads to the end.
    with _http(ref_server, **{"x-fault": "cut_after=3"}) as http:
        second = _events(http.get(f"/responses/{rid}", params={"stream": "true", "starting_after": 4}))
    assert [e["sequence_number"] for e in second] == [5, 6, 7]
    rest = list(client.responses.retrieve(rid, stream=True, starting_after=7))
    events = first + second + [e.model_dump() for e in rest]
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert events[-1]["type"] == "response.completed"
    assert _text(events) == events[-1]["response"]["output"][0]["content"][0]["text"] != ""
    assert _wait_final(client, rid).output_text == _text(events)


def test_a_stream_that_stalls_is_left_and_the_run_goes_on(ref_server: RefServer,
                                                          client: openai.OpenAI) -> None:
    seen: list[dict] = []
    body = {**ASK, "background": True, "stream": True}
    with _http(ref_server, **{"x-fault": "stall_after=4"}) as http, pytest.raises(httpx.ReadTimeout), \
            http.stream("POST", "/responses", json=body, timeout=httpx.Timeout(30, read=3.0)) as r:
        buf = b""
        for raw in r.iter_bytes():
            buf += raw
            *blocks, buf = buf.split(b"\n\n")
            seen += [EVENTS.validate_json(b.split(b"data: ", 1)[1]).model_dump()
                     for b in blocks if b"data: " in b]
    assert [e["sequence_number"] for e in seen] == list(range(4))
    rid = seen[0]["response"]["id"]
    done = _wait_final(client, rid)  # generated while nobody read it
    assert done.status == "completed"
    rest = [e.model_dump() for e in client.responses.retrieve(rid, stream=True, starting_after=3)]
    assert [e["sequence_number"] for e in seen + rest] == list(range(len(seen) + len(rest)))
    assert _text(seen + rest) == done.output_text


def test_starting_after_past_the_end_sends_only_what_is_left(client: openai.OpenAI) -> None:
    rid = _started(client)
    done = _wait_final(client, rid)
    assert done.status == "completed"
    assert list(client.responses.retrieve(rid, stream=True, starting_after=10_000)) == []
    whole = list(client.responses.retrieve(rid, stream=True))
    assert whole[0].type == "response.created"
    assert whole[-1].type == "response.completed"


def test_what_cannot_be_streamed_again_is_refused_by_name(ref_server: RefServer,
                                                          client: openai.OpenAI) -> None:
    foreground = client.responses.create(**ASK)
    quiet = client.responses.create(**ASK, background=True)  # no stream=true
    with _http(ref_server) as http:
        r = http.get(f"/responses/{foreground.id}", params={"stream": "true"})
        assert r.status_code == 400
        assert "background" in r.json()["error"]["message"]
        r = http.get(f"/responses/{quiet.id}", params={"stream": "true"})
        assert r.status_code == 400
        assert "stream=true" in r.json()["error"]["message"]
        r = http.get(f"/responses/{quiet.id}", params={"stream": "true", "starting_after": "-1"})
        assert r.status_code == 400
        assert r.json()["error"]["param"] == "starting_after"
        r = http.get("/responses/resp_nope", params={"stream": "true"})
        assert r.status_code == 404
        r = http.post("/responses", json={**ASK, "background": True, "store": False})
        assert r.status_code == 400
        assert r.json()["error"]["param"] == "background"
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve("resp_nope", stream=True)


def test_cancel_stops_a_background_run(ref_server: RefServer, client: openai.OpenAI) -> None:
    slow = _started(client, extra_headers={"x-fault": "slow_ms=200"})
    cancelled = client.responses.cancel(slow)
    assert cancelled.status == "cancelled"
    assert client.responses.cancel(slow).status == "cancelled"  # idempotent
    assert client.responses.retrieve(slow).status == "cancelled"
    events = list(client.responses.retrieve(slow, stream=True))
    assert all(e.type not in ("response.completed", "response.incomplete") for e in events)
    done = _wait_final(client, client.responses.create(**ASK, background=True).id)
    with pytest.raises(openai.BadRequestError, match="already completed"):
        client.responses.cancel(done.id)
    with pytest.raises(openai.BadRequestError, match="background=true"):
        client.responses.cancel(client.responses.create(**ASK).id)
    with pytest.raises(openai.NotFoundError):
        client.responses.cancel("resp_nope")


def test_a_deleted_background_response_is_gone_with_its_events(client: openai.OpenAI) -> None:
    rid = _started(client)
    client.responses.delete(rid)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(rid)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(rid, stream=True)


@pytest.fixture
def bounded_server() -> Iterator[RefServer]:
    """A server whose background logs expire at once and fit in one byte."""
    server = start_ref_server(FAULT_HEADERS, "--background-retention-s", "0.001",
                              "--background-max-bytes", "1")
    try:
        yield server
    finally:
        stop_ref_server(server)


def test_retention_and_memory_bounds_answer_in_openais_error_shape(bounded_server: RefServer) -> None:
    with openai.OpenAI(base_url=bounded_server.base_url, api_key="sk-test", max_retries=0) as client:
        rid = _started(client, extra_headers={"x-fault": "slow_ms=100"})
        with pytest.raises(openai.InternalServerError) as refused:  # its log is over the bound
            client.responses.create(**ASK, background=True)
        assert refused.value.status_code == 503
        assert refused.value.code == "background_capacity"
        client.responses.cancel(rid)
        # Finished runs' logs are dropped past their retention; the response stays.
        done = _wait_final(client, _started(client))
        assert done.status == "completed"
        time.sleep(0.05)
        with pytest.raises(openai.NotFoundError) as gone:
            client.responses.retrieve(done.id, stream=True)
        assert gone.value.code == "events_expired"
        assert client.responses.retrieve(done.id).output_text == done.output_text
