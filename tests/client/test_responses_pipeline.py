"""``client.responses.create`` through llmclient's own pipeline, against the reference server.

The differential suite (tests/dropin) holds the results to the official client's; this file
checks what only llmclient adds: the call went through our connections and carries our trace
id and timings, a cut stream is an error (never a silently short answer), the cache keeps only
whole deterministic answers, and the other Responses methods still reach the official client.
Through ``OpenAI`` and ``AsyncOpenAI`` (``drive``: each test runs on both).
"""

from __future__ import annotations

from typing import Any

import openai.types.responses as rt
import pytest

import llmclient
from llmclient.features.hedge import eligible
from tests._both import Drive
from tests.conftest import RefServer

MODEL = "sim-zero"


def _client(drive: Drive, server: RefServer, **kw: Any) -> Any:
    return drive.client(base_url=server.base_url, api_key="k", max_retries=0, **kw)


def _recording(stream: Any, seen: list[Any]) -> Any:
    """``stream``'s events as they come, each also put in ``seen`` (kept after an error)."""
    if hasattr(stream, "__aiter__"):
        async def agen() -> Any:
            async for event in stream:
                seen.append(event)
                yield event
        return agen()

    def gen() -> Any:
        for event in stream:
            seen.append(event)
            yield event
    return gen()


def _check_events(events: list[Any]) -> None:
    assert isinstance(events[0], rt.ResponseCreatedEvent)
    assert isinstance(events[-1], rt.ResponseCompletedEvent)
    text = "".join(e.delta for e in events if isinstance(e, rt.ResponseTextDeltaEvent))
    assert text and text == events[-1].response.output_text


def test_create_returns_the_official_response_with_our_trace_and_timings(drive: Drive, ref_server: RefServer) -> None:
    client = _client(drive, ref_server)
    raw = drive(client.responses.with_raw_response.create(model=MODEL, input="Say hi.", temperature=0))
    response = raw.parse()
    assert isinstance(response, rt.Response) and response.output_text
    assert raw.http_response.http_version == "HTTP/2"  # our connection, not the official client's
    traceparent = raw.http_request.headers["traceparent"]
    assert response.trace_id == traceparent.split("-")[1] and len(response.trace_id) == 32
    assert response.timings.total_ms is not None and response.timings.total_ms > 0
    # The methods llmclient does not accelerate are the official client's, on the same server.
    again = drive(client.responses.retrieve(response.id))
    assert isinstance(again, rt.Response) and again.id == response.id
    assert drive(drive(client.responses.with_raw_response.retrieve(response.id)).parse()).id == response.id


def test_stream_yields_the_official_events_and_ends_complete(drive: Drive, ref_server: RefServer) -> None:
    client = _client(drive, ref_server)
    with drive.enter(drive(client.responses.create(model=MODEL, input="Tell me about the sea.",
                                                   stream=True))) as stream:
        events = drive.iterate(stream)
    _check_events(events)
    assert stream.timings.first_token_ms is not None


def test_a_cut_stream_raises_instead_of_ending_short(drive: Drive, ref_server: RefServer) -> None:
    client = _client(drive, ref_server)
    stream = drive(client.responses.create(model=MODEL, input="Tell me about the sea.", stream=True,
                                           extra_headers={"x-fault": "cut_after=3"}))
    seen: list[Any] = []
    with pytest.raises(llmclient.IncompleteStreamError, match="Incomplete stream") as info:
        drive.iterate(_recording(stream, seen))
    assert isinstance(info.value, llmclient.APIConnectionError)  # what the official docs catch
    assert info.value.trace_id == stream.trace_id
    assert seen and not any(isinstance(e, rt.ResponseCompletedEvent) for e in seen)


def test_a_bad_request_is_the_official_error_with_the_trace_id(drive: Drive, ref_server: RefServer) -> None:
    client = _client(drive, ref_server)
    with pytest.raises(llmclient.BadRequestError) as info:
        drive(client.responses.create(model=MODEL, input="hi", max_output_tokens=-1))
    assert info.value.status_code == 400 and info.value.trace_id


def test_deterministic_answers_are_cached_and_streams_replayed(drive: Drive, ref_server: RefServer) -> None:
    client = _client(drive, ref_server, cache=True)
    params: dict[str, Any] = {"model": MODEL, "input": f"Cache me ({drive.kind}).", "temperature": 0,
                              "store": False}
    first = drive(client.responses.create(**params))
    second = drive(client.responses.create(**params))
    assert second.id == first.id and second.output_text == first.output_text
    assert second.timings.cache == "hit"
    events = drive.iterate(drive(client.responses.create(**params, stream=True)))  # replayed from the answer
    _check_events(events)
    assert events[-1].response.id == first.id
    sampled = {**params, "input": "Not cached.", "temperature": 1.0}
    assert drive(client.responses.create(**sampled)).id != drive(client.responses.create(**sampled)).id


def test_a_stream_is_cached_only_once_it_completed(drive: Drive, ref_server: RefServer) -> None:
    client = _client(drive, ref_server, cache=True)
    params: dict[str, Any] = {"model": MODEL, "input": f"A cut stream ({drive.kind}).", "temperature": 0,
                              "store": False}
    with pytest.raises(llmclient.IncompleteStreamError):
        drive.iterate(drive(client.responses.create(**params, stream=True,
                                                    extra_headers={"x-fault": "cut_after=2"})))
    whole = drive.iterate(drive(client.responses.create(**params, stream=True)))
    assert whole[-1].response.status == "completed"
    replay = drive(client.responses.create(**params))  # from the stored stream, merged
    assert replay.timings.cache == "hit" and replay.id == whole[-1].response.id


def test_only_responses_the_server_does_not_store_are_hedged() -> None:
    assert eligible("POST", "/responses", {"model": "m", "input": "x", "store": False})
    assert not eligible("POST", "/responses", {"model": "m", "input": "x"})  # store defaults to true
    assert not eligible("POST", "/responses", {"model": "m", "input": "x", "store": True})


def test_responses_go_as_json_even_where_protobuf_is_asked_for(drive: Drive, ref_server: RefServer) -> None:
    client = _client(drive, ref_server, wire="protobuf")
    raw = drive(client.responses.with_raw_response.create(model=MODEL, input="Say hi.", temperature=0))
    assert raw.http_request.headers["content-type"] == "application/json"
    assert raw.parse().output_text


def test_a_hedged_responses_stream_races_on_its_first_text_delta(drive: Drive, ref_server: RefServer) -> None:
    # hedge after 1 ms: the copy is sent; whichever copy's first delta comes first wins, the
    # other is cancelled, and the caller reads one whole, complete stream.
    client = _client(drive, ref_server,
                     hedge=llmclient.HedgeConfig(after_ms=1.0, min_delay_ms=0.0, max_ratio=1.0))
    stream = drive(client.responses.create(model=MODEL, input="Tell me about the sea.", stream=True,
                                           store=False, extra_headers={"x-fault": "stall_ms=50"}))
    _check_events(drive.iterate(stream))
    assert stream.timings.hedged
    assert sum(track["hedges"] for track in client.hedge_stats().values()) == 1
