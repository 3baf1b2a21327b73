"""The Anthropic face's cheaper ways of building the official types (``api/anthropic.py``:
``content_block_delta`` events built without the validator, a ``Message``'s content blocks by
their tag) give what the official client gives: the same classes, fields, fields set, extras and
``model_dump()``, on the same server's answers (a real reference-server process, greedy, so that
both clients get the same text), and what the official validator gives for each shape, the
shapes the fast path declines included.
"""

from __future__ import annotations

from typing import Any

import anthropic
import pydantic
import pytest
from anthropic.types import RawContentBlockDeltaEvent

import llmclient
from llmclient.api import anthropic as anth
from tests.conftest import RefServer
from tests.server.test_anthropic_api import ASK, GREEDY, KEY, MODEL, WEATHER, server  # noqa: F401  (fixture)


def _validated(data: dict[str, Any]) -> Any:
    """What the factory made before the fast path: the validator's object, or for data it
    refuses the loose ``construct`` (as sent)."""
    RawContentBlockDeltaEvent.model_rebuild()
    try:
        return RawContentBlockDeltaEvent.__pydantic_validator__.validate_python(data)
    except pydantic.ValidationError:
        return RawContentBlockDeltaEvent.construct(**data)


@pytest.mark.parametrize("delta", [
    {"type": "text_delta", "text": "Hello"},
    {"type": "text_delta", "text": ""},
    {"type": "text_delta", "text": "caf\u00e9 \u2603 \U0001f30a"},
    {"type": "input_json_delta", "partial_json": '{"city": "Par'},
    {"type": "thinking_delta", "thinking": "Let me see"},
    {"type": "signature_delta", "signature": "EqQBCgIYAhIM"},
])
def test_a_plain_delta_event_is_what_the_validator_makes(delta: dict[str, Any]) -> None:
    data = {"type": "content_block_delta", "index": 2, "delta": delta}
    built = anth.stream_event(data)
    assert anth._same(built, _validated(data))
    assert type(built.delta) is type(_validated(data).delta)
    assert built.to_json() == _validated(data).to_json() and built == _validated(data)


@pytest.mark.parametrize("data", [
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "a", "more": 1}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta"}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "a"}, "extra": True},
    {"type": "content_block_delta", "index": "0", "delta": {"type": "text_delta", "text": "a"}},
    {"type": "content_block_delta", "index": True, "delta": {"type": "text_delta", "text": "a"}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "citations_delta", "citation": {
        "type": "char_location", "cited_text": "x", "document_index": 0, "document_title": None,
        "start_char_index": 0, "end_char_index": 1}}},
])
def test_another_shape_goes_to_the_validator(data: dict[str, Any]) -> None:
    """An extra field, a missing one, a string or bool index, a delta whose field is an object:
    the fast builder declines (None) and the event is the validator's."""
    assert anth.delta_builder(RawContentBlockDeltaEvent)(data) is None  # type: ignore[misc]
    assert anth._same(anth.stream_event(data), _validated(data))


def test_the_check_keeps_a_delta_type_the_builder_would_get_wrong() -> None:
    """The builder checks itself against the validator once per delta type: a class whose
    fields it would not fill as the validator does is left out (here: extras not allowed, so the
    validator's ``__pydantic_extra__`` is None, not {})."""
    from typing import Literal, Union

    class Strict(pydantic.BaseModel):
        text: str
        type: Literal["strict_delta"]

    class Event(pydantic.BaseModel):
        model_config = pydantic.ConfigDict(extra="allow")
        delta: Union[Strict]  # noqa: UP007 (the shape of the official annotation)
        index: int
        type: Literal["content_block_delta"]

    assert anth.delta_builder(Event) is None


def _dumps(events: list[Any]) -> list[tuple[type, dict[str, Any]]]:
    def blank(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: ("<id>" if k == "id" else blank(v)) for k, v in value.items()}
        if isinstance(value, list):
            return [blank(v) for v in value]
        return value

    return [(type(e), blank(e.model_dump())) for e in events]


REQUESTS = {
    "text": {"max_tokens": 40},
    "tool use": {"max_tokens": 30, "tools": [WEATHER], "tool_choice": {"type": "any"}},
    # (thinking takes no temperature 0, so its text differs between two answers: its deltas are
    # compared with the validator's above)
}


@pytest.mark.parametrize("name", REQUESTS)
def test_the_face_gives_the_official_clients_objects(name: str, server: RefServer) -> None:  # noqa: F811
    """The same requests through the official client and llmclient's face: every streamed event
    and the whole message are of the same class with the same ``model_dump()`` (ids aside: the
    server makes new ones each answer), the delta events with the same fields set, and the
    stream helper accumulates the same final message."""
    params = {"model": MODEL, "messages": ASK, "extra_body": GREEDY, **REQUESTS[name]}
    official = anthropic.Anthropic(base_url=server.url, api_key=KEY, max_retries=0)
    ours = llmclient.Anthropic(base_url=server.url, api_key=KEY, max_retries=0)
    try:
        theirs = list(official.messages.create(stream=True, **params))
        mine = list(ours.messages.create(stream=True, **params))
        assert _dumps(mine) == _dumps(theirs)
        deltas = [(e, t) for e, t in zip(mine, theirs, strict=True) if e.type == "content_block_delta"]
        assert deltas and all(e.__pydantic_fields_set__ == t.__pydantic_fields_set__
                              and e.delta.__pydantic_fields_set__ == t.delta.__pydantic_fields_set__
                              and e.__pydantic_extra__ == t.__pydantic_extra__ for e, t in deltas)
        whole_theirs = official.messages.create(**params)
        whole_mine = ours.messages.create(**params)
        assert _dumps([whole_mine]) == _dumps([whole_theirs])
        assert [type(b) for b in whole_mine.content] == [type(b) for b in whole_theirs.content]
        assert whole_mine._request_id and whole_mine.timings.total_ms is not None
        with official.messages.stream(**params) as s:
            final_theirs = s.get_final_message()
        with ours.messages.stream(**params) as s:
            final_mine = s.get_final_message()
        assert _dumps([final_mine]) == _dumps([final_theirs])
    finally:
        official.close()
        ours.close()
