"""Every message type through the protobuf codec gives the same dict as the JSON path."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import orjson
import pytest

from llmclient._errors import MalformedResponseError
from llmclient.wire.codec import JSON_CODEC
from llmclient.wire.protobuf import (
    PROTOBUF_CODEC,
    PROTOBUF_CONTENT_TYPE,
    decode_body,
    encode_body,
    encode_response,
    request_kind,
    response_kind,
)

from . import samples as s

PB = PROTOBUF_CONTENT_TYPE


def _via_json(path: str, body: dict[str, Any]) -> dict[str, Any]:
    return JSON_CODEC.decode(path, JSON_CODEC.encode(path, body), "application/json")


def _request_roundtrip(path: str, body: dict[str, Any]) -> dict[str, Any]:
    kind, out, _ = decode_body(PROTOBUF_CODEC.encode(path, body))
    assert kind == request_kind(path) != "json"
    assert out is not None
    return out


@pytest.mark.parametrize(
    ("path", "body"),
    [("/v1/chat/completions", s.CHAT_REQUEST)]
    + [("/v1/completions", b) for b in s.COMPLETION_REQUESTS]
    + [("/v1/embeddings", b) for b in s.EMBEDDING_REQUESTS],
)
def test_requests_round_trip_to_the_json_dict(path: str, body: dict[str, Any]) -> None:
    assert _request_roundtrip(path, body) == _via_json(path, body)


@pytest.mark.parametrize(
    "body",
    [s.CHAT_COMPLETION, s.COMPLETION, s.EMBEDDINGS, s.EMBEDDINGS_BASE64, s.MODELS, s.MODEL, *s.ERRORS],
    ids=["chat", "completion", "embeddings", "embeddings_b64", "models", "model", "error_str", "error_int"],
)
def test_responses_decode_to_the_json_dict(body: dict[str, Any]) -> None:
    data = encode_response(body)
    assert response_kind(body) != "json"
    assert PROTOBUF_CODEC.decode("/v1/x", data, PB) == _via_json("/v1/x", body)


def test_types_survive_exactly() -> None:
    out = _request_roundtrip("/v1/chat/completions", s.CHAT_REQUEST)
    assert out["parallel_tool_calls"] is False
    assert type(out["max_tokens"]) is int and type(out["seed"]) is int
    assert out["messages"][3]["content"] is None and out["messages"][3]["refusal"] is None
    assert type(out["logit_bias"]["50256"]) is int


def test_unknown_parameters_and_misfit_values_are_preserved() -> None:
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": "hi", "x_new_field": {"a": [1, None]}}],
        "brand_new_param": [1, 2.5, "x", None, True],
        "temperature": "hot",  # wrong type: carried as is for the server to reject
        "n": True,             # a bool where an int goes: stays a bool
        "stream": 1,           # an int where a bool goes: stays an int
        "stop": 7,
        "max_tokens": 2**63,   # outside int64 (JSON still carries it)
    }
    out = _request_roundtrip("/v1/chat/completions", body)
    assert out == body
    assert out["n"] is True and out["stream"] == 1 and out["stream"] is not True


def test_null_and_empty_list_are_kept_apart_from_absent() -> None:
    body = {"model": None, "messages": [], "tools": [], "stop": [], "user": ""}
    out = _request_roundtrip("/v1/chat/completions", body)
    assert out == body
    assert "temperature" not in out


def test_any_other_body_travels_as_json() -> None:
    body = {"object": "something.new", "value": [1, 2]}
    assert response_kind(body) == "json"
    assert PROTOBUF_CODEC.decode("/v1/x", encode_response(body), PB) == body
    assert PROTOBUF_CODEC.encode("/v1/responses", body) == encode_body("json", body)


def test_protobuf_is_smaller_than_json_for_structured_bodies() -> None:
    for body in (s.CHAT_COMPLETION, s.EMBEDDINGS, s.MODELS):
        assert len(encode_response(body)) < len(orjson.dumps(body))


def test_codec_decodes_json_answers_by_content_type() -> None:
    data = orjson.dumps(s.CHAT_COMPLETION)
    assert PROTOBUF_CODEC.decode("/v1/chat/completions", data, "application/json; charset=utf-8") == s.CHAT_COMPLETION


@pytest.mark.parametrize(
    "data",
    [b"\xff\xff\xff", b"", b"\x0a\x05abc", b"\x5a\x02{x", b"\x22\x03\x12\x01\xff"],
    ids=["garbage", "empty", "truncated", "bad_json_kind", "bad_utf8"],
)
def test_bad_bodies_raise_a_decode_error_naming_the_problem(data: bytes) -> None:
    with pytest.raises(MalformedResponseError, match="protobuf body"):
        PROTOBUF_CODEC.decode("/v1/chat/completions", data, PB)


def test_a_done_marker_is_not_a_body() -> None:
    from llmclient.wire.protobuf import StreamEncoder

    frame = StreamEncoder().done()
    with pytest.raises(MalformedResponseError, match="end marker"):
        PROTOBUF_CODEC.decode("/v1/chat/completions", frame[1:], PB)


def test_import_llmclient_does_not_import_protobuf() -> None:
    code = "import sys, llmclient, llmclient.wire.protobuf; print('google.protobuf' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_float32_embeddings_are_carried_at_float32_precision() -> None:
    body = {"object": "list", "data": [{"object": "embedding", "index": 0, "embedding": [0.1, 1e300]}]}
    out = PROTOBUF_CODEC.decode("/v1/embeddings", encode_response(body), PB)
    # 1e300 does not fit a float32: the vector travels exactly, as JSON, in `extra`.
    assert out == body
    body["data"][0]["embedding"] = [0.1, 0.2]
    out = PROTOBUF_CODEC.decode("/v1/embeddings", encode_response(body), PB)
    assert out["data"][0]["embedding"] == [s.f32(0.1), s.f32(0.2)]
