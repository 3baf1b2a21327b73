"""Choosing the wire per origin, and falling back to JSON (pure decisions)."""

from __future__ import annotations

import pytest

from llmclient.wire.protobuf import (
    PROTOBUF_CONTENT_TYPE,
    WireObservation,
    WireState,
    accept_header,
    choose_wire,
    observe_response,
    server_accepts_protobuf,
)

UNKNOWN, ACCEPTS, REFUSED = WireState(), WireState(protobuf=True), WireState(protobuf=False)
ADVERTISES = {"x-llm-wire": "json, protobuf", "content-type": "application/json"}
PLAIN_JSON = {"content-type": "application/json"}
PB_ANSWER = {"content-type": PROTOBUF_CONTENT_TYPE}


@pytest.mark.parametrize(
    ("mode", "state", "wire"),
    [
        ("json", ACCEPTS, "json"),
        ("protobuf", UNKNOWN, "protobuf"),
        ("protobuf", ACCEPTS, "protobuf"),
        ("protobuf", REFUSED, "json"),
        ("auto", UNKNOWN, "json"),
        ("auto", ACCEPTS, "protobuf"),
        ("auto", REFUSED, "json"),
    ],
)
def test_choose_wire(mode: str, state: WireState, wire: str) -> None:
    assert choose_wire(mode, state) == wire  # type: ignore[arg-type]


def test_choose_wire_names_a_bad_mode() -> None:
    with pytest.raises(ValueError, match="'xml'"):
        choose_wire("xml", UNKNOWN)  # type: ignore[arg-type]


def test_auto_switches_to_protobuf_once_the_origin_advertises_it() -> None:
    seen = observe_response(UNKNOWN, "json", 200, ADVERTISES)
    assert seen.state == ACCEPTS and not seen.retry_as_json
    assert choose_wire("auto", seen.state) == "protobuf"


def test_accept_post_and_a_protobuf_answer_also_count_as_advertising() -> None:
    assert server_accepts_protobuf({"accept-post": "application/json, application/x-protobuf"})
    assert not server_accepts_protobuf(PLAIN_JSON)
    assert observe_response(UNKNOWN, "protobuf", 200, PB_ANSWER).state == ACCEPTS


def test_415_means_json_from_now_on_and_a_retry() -> None:
    seen = observe_response(UNKNOWN, "protobuf", 415, PLAIN_JSON)
    assert seen.state == REFUSED and seen.retry_as_json
    assert choose_wire("protobuf", seen.state) == "json"


def test_400_in_json_from_an_origin_that_never_advertised_is_an_ignored_protobuf() -> None:
    seen = observe_response(UNKNOWN, "protobuf", 400, PLAIN_JSON)
    assert seen.state == REFUSED and seen.retry_as_json


def test_400_from_a_protobuf_origin_is_a_real_bad_request() -> None:
    seen = observe_response(ACCEPTS, "protobuf", 400, PLAIN_JSON)
    assert seen.state == ACCEPTS and not seen.retry_as_json
    assert not observe_response(UNKNOWN, "protobuf", 400, ADVERTISES).retry_as_json


def test_a_json_answer_to_protobuf_is_used_but_switches_the_origin_to_json() -> None:
    seen = observe_response(UNKNOWN, "protobuf", 200, PLAIN_JSON)
    assert seen.state == REFUSED and not seen.retry_as_json


def test_other_failures_change_nothing() -> None:
    for status in (401, 429, 500, 503):
        assert observe_response(ACCEPTS, "protobuf", status, PLAIN_JSON) == WireObservation(ACCEPTS, False)
        assert observe_response(UNKNOWN, "json", status, PLAIN_JSON).state == UNKNOWN


def test_accept_header_per_wire() -> None:
    assert accept_header("json", stream=False) == "application/json"
    assert accept_header("json", stream=True) == "text/event-stream"
    assert accept_header("protobuf", stream=True).startswith(PROTOBUF_CONTENT_TYPE)


def test_the_codings_an_origin_reads_are_recorded_for_compression() -> None:
    from llmclient.wire.compression import choose_request_encoding

    seen = observe_response(UNKNOWN, "json", 200, {**PLAIN_JSON, "accept-encoding": "gzip"})
    assert seen.state.encodings == {"gzip"} and seen.state.protobuf is None
    assert choose_request_encoding(50_000, seen.state.encodings) == "gzip"
    assert choose_request_encoding(50_000, UNKNOWN.encodings) is None
    # a response without the header keeps what we knew
    assert observe_response(seen.state, "json", 200, PLAIN_JSON).state.encodings == {"gzip"}
