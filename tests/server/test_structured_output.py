"""The reference server's structured outputs: answers to a strict json_schema (as the official
client generates it from a pydantic model: $defs, $ref, anyOf for optionals) parse into the model."""

from __future__ import annotations

import json
from typing import Literal

import pydantic
import pytest

from benchmarks.server._textstream import tool_arguments
from benchmarks.server._validate import InvalidRequest, parse_chat
from tests.conftest import RefServer


class Inner(pydantic.BaseModel):
    label: str
    weight: float


class Outer(pydantic.BaseModel):
    items: list[Inner]
    best: Inner
    note: str | None
    mode: Literal["a", "b"]
    count: int
    ok: bool


def test_arguments_for_a_strict_schema_validate_against_the_model() -> None:
    to_strict = pytest.importorskip("openai.lib._pydantic").to_strict_json_schema
    schema = to_strict(Outer)
    assert "$defs" in schema  # the shape this test is about
    value = tool_arguments(schema, ["alpha", "beta", "gamma"])
    assert Outer.model_validate(value).mode == "a"


def test_response_format_is_read_and_checked() -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
    assert parse_chat(body, 4096).json_schema is None
    p = parse_chat({**body, "response_format": {"type": "json_object"}}, 4096)
    assert p.json_schema is not None and p.json_schema["type"] == "object"
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    p = parse_chat({**body, "response_format": {"type": "json_schema", "json_schema": {"name": "n", "schema": schema}}},
                   4096)
    assert p.json_schema == schema
    with pytest.raises(InvalidRequest):
        parse_chat({**body, "response_format": {"type": "xml"}}, 4096)


@pytest.mark.parametrize("stream", [False, True])
def test_the_server_answers_a_strict_schema_with_a_document_that_validates(ref_server: RefServer, stream: bool) -> None:
    """End to end, as a guided-decoding server answers: the official client's strict schema for
    ``Outer`` in, a document that validates against ``Outer`` out, whole or streamed."""
    openai = pytest.importorskip("openai")
    to_strict = pytest.importorskip("openai.lib._pydantic").to_strict_json_schema
    client = openai.OpenAI(base_url=ref_server.base_url, api_key="k", max_retries=0)
    response_format = {"type": "json_schema",
                       "json_schema": {"name": "Outer", "schema": to_strict(Outer), "strict": True}}
    messages = [{"role": "user", "content": "Describe the inventory."}]
    if stream:
        text = "".join(chunk.choices[0].delta.content or "" for chunk in client.chat.completions.create(
            model="sim-zero", messages=messages, response_format=response_format, stream=True) if chunk.choices)
    else:
        text = client.chat.completions.create(model="sim-zero", messages=messages,
                                              response_format=response_format).choices[0].message.content or ""
    Outer.model_validate_json(text)
    loose = client.chat.completions.create(model="sim-zero", messages=messages,
                                           response_format={"type": "json_object"}, stream=stream)
    if stream:
        body = "".join(c.choices[0].delta.content or "" for c in loose if c.choices)
    else:
        body = loose.choices[0].message.content or ""
    assert isinstance(json.loads(body), dict)
