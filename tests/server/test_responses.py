"""The reference server's Responses API: objects and stream events that validate against the
official SDK's types, the same text as chat for the same conversation, stored responses
(retrieve, delete, input items, previous_response_id, store=false), errors naming the field."""

from __future__ import annotations

import httpx
import openai
import pydantic
import pytest
from openai.types.responses import Response, ResponseItemList, ResponseStreamEvent

from benchmarks.server._validate import InvalidRequest
from benchmarks.server.responses import (
    ResponseStore,
    StoredResponse,
    _page,
    parse_response_request,
)

MODEL = "gpt-4o-mini"
EVENTS = pydantic.TypeAdapter(ResponseStreamEvent)


def _http(server) -> httpx.Client:
    return httpx.Client(base_url=server.base_url, headers={"authorization": "Bearer sk-test"},
                        timeout=30)


def _sse(text: str) -> list[tuple[str, str]]:
    out = []
    for block in text.split("\n\n"):
        lines = [ln for ln in block.split("\n") if ln and not ln.startswith(":")]
        if lines:
            fields = dict(ln.split(": ", 1) for ln in lines)
            out.append((fields["event"], fields["data"]))
    return out


def test_create_validates_as_the_official_type_and_matches_chat(ref_server) -> None:
    with _http(ref_server) as http:
        body = {"model": MODEL, "instructions": "Be brief.", "input": "Tell me about the sea.",
                "max_output_tokens": 16, "temperature": 0}
        r = http.post("/responses", json=body)
        assert r.status_code == 200, r.text
        response = Response.model_validate(r.json())  # strict validation, not construct
        chat = http.post("/chat/completions", json={
            "model": MODEL, "max_tokens": 16, "temperature": 0,
            "messages": [{"role": "developer", "content": "Be brief."},
                         {"role": "user", "content": "Tell me about the sea."}]}).json()
    assert response.id.startswith("resp_") and response.object == "response"
    assert response.status == "incomplete" and response.incomplete_details is not None
    assert response.incomplete_details.reason == "max_output_tokens"
    assert response.output[0].type == "message" and response.output[0].role == "assistant"
    assert response.output_text == chat["choices"][0]["message"]["content"]
    assert response.usage is not None
    assert response.usage.input_tokens == chat["usage"]["prompt_tokens"]
    assert response.usage.output_tokens == 16
    assert response.usage.total_tokens == response.usage.input_tokens + 16


def test_stream_events_validate_and_add_up(ref_server) -> None:
    with _http(ref_server) as http:
        body = {"model": MODEL, "input": "Write a haiku.", "temperature": 0, "max_output_tokens": 40}
        plain = Response.model_validate(http.post("/responses", json=body).json())
        r = http.post("/responses", json={**body, "stream": True})
        assert r.headers["content-type"].startswith("text/event-stream")
        raw = _sse(r.text)
    events = [EVENTS.validate_json(data) for _, data in raw]
    assert [name for name, _ in raw] == [e.type for e in events]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    kinds = [e.type for e in events]
    assert kinds[:4] == ["response.created", "response.in_progress", "response.output_item.added",
                         "response.content_part.added"]
    assert kinds[-4:-1] == ["response.output_text.done", "response.content_part.done",
                            "response.output_item.done"]
    assert kinds[-1] == ("response.completed" if plain.status == "completed" else "response.incomplete")
    deltas = [e.delta for e in events if e.type == "response.output_text.delta"]
    assert len(deltas) > 1
    final = events[-1].response  # type: ignore[union-attr]
    assert "".join(deltas) == final.output_text == plain.output_text
    assert final.usage == plain.usage


def test_stored_responses_chain_retrieve_delete(ref_server) -> None:
    client = openai.OpenAI(base_url=ref_server.base_url, api_key="sk-test", max_retries=0)
    first = client.responses.create(model=MODEL, input="Name a river.", temperature=0, max_output_tokens=16)
    second = client.responses.create(model=MODEL, input="Another one?", previous_response_id=first.id,
                                     temperature=0, max_output_tokens=16)
    alone = client.responses.create(model=MODEL, input="Another one?", temperature=0, max_output_tokens=16)
    assert first.usage is not None and second.usage is not None and alone.usage is not None
    # The earlier input and output are in the prompt.
    assert second.usage.input_tokens > alone.usage.input_tokens + first.usage.output_tokens
    assert client.responses.retrieve(second.id).model_dump() == second.model_dump()
    items = client.responses.input_items.list(second.id)
    assert isinstance(items, openai.pagination.SyncCursorPage)
    assert [i.content[0].text for i in items.data] == ["Another one?"]  # type: ignore[union-attr]
    with _http(ref_server) as http:
        listed = ResponseItemList.model_validate(http.get(f"/responses/{second.id}/input_items").json())
        assert listed.object == "list" and listed.has_more is False
        assert http.delete(f"/responses/{first.id}").json() == {"id": first.id, "object": "response",
                                                               "deleted": True}
        missing = http.get(f"/responses/{first.id}")
        assert missing.status_code == 404
        assert missing.json()["error"]["type"] == "invalid_request_error"
        chained = http.post("/responses", json={"model": MODEL, "input": "x", "previous_response_id": first.id})
        assert chained.status_code == 404 and chained.json()["error"]["param"] == "previous_response_id"
        unstored = http.post("/responses", json={"model": MODEL, "input": "x", "store": False,
                                                 "max_output_tokens": 16}).json()
        assert unstored["store"] is False
        assert http.get(f"/responses/{unstored['id']}").status_code == 404


@pytest.mark.parametrize(("body", "param"), [
    ({"model": MODEL}, "input"),
    ({"model": MODEL, "input": []}, "input"),
    ({"model": MODEL, "input": "x", "max_output_tokens": 5}, "max_output_tokens"),
    ({"model": MODEL, "input": "x", "temperature": 3}, "temperature"),
    ({"model": MODEL, "input": "x", "stream": "yes"}, "stream"),
    ({"model": MODEL, "input": "x", "store": 1}, "store"),
    ({"model": MODEL, "input": "x", "instructions": 1}, "instructions"),
    ({"model": MODEL, "input": [{"role": "robot", "content": "x"}]}, "input[0].role"),
    ({"model": MODEL, "input": [{"role": "user", "content": [{"type": "input_image"}]}]},
     "input[0].content[0].type"),
    ({"model": MODEL, "input": [{"role": "user", "content": [{"type": "input_text"}]}]},
     "input[0].content[0].text"),
])
def test_bad_requests_name_the_field(body, param) -> None:
    with pytest.raises(InvalidRequest) as info:
        parse_response_request(body, 4096)
    assert info.value.param == param and info.value.status == 400


def test_bad_request_on_the_wire(ref_server) -> None:
    with _http(ref_server) as http:
        r = http.post("/responses", json={"model": MODEL, "input": [{"role": "user", "content": 3}]})
        assert r.status_code == 400
        assert r.json()["error"]["param"] == "input[0].content"
        assert http.get("/responses/resp_x/other").status_code == 404
        assert http.post("/responses", json={"model": "nope", "input": "x"}).status_code == 404


def test_store_is_bounded_and_pages() -> None:
    store = ResponseStore(limit=3)
    for i in range(5):
        store.put(f"resp_{i}", StoredResponse({}, [{"id": f"msg_{j}"} for j in range(i)], ""))
    assert len(store) == 3 and store.get("resp_1") is None and store.get("resp_4") is not None
    items = store.get("resp_4").input_items  # type: ignore[union-attr]
    page = _page(items, "limit=2")
    assert [i["id"] for i in page["data"]] == ["msg_3", "msg_2"] and page["has_more"] is True
    page = _page(items, "order=asc&after=msg_1")
    assert [i["id"] for i in page["data"]] == ["msg_2", "msg_3"] and page["has_more"] is False
    with pytest.raises(InvalidRequest):
        _page(items, "limit=0")
