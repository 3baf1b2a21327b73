"""The reference server's structured outputs: answers to a strict json_schema (as the official
client generates it from a pydantic model: $defs, $ref, anyOf for optionals) parse into the model."""

from __future__ import annotations

from typing import Literal

import pydantic
import pytest

from benchmarks.server._textstream import tool_arguments
from benchmarks.server._validate import InvalidRequest, parse_chat


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
