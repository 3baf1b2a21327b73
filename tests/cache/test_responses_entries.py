"""The cache's pure rules for the Responses API: which streams are whole, stream <-> answer."""

from __future__ import annotations

from typing import Any

import pytest

from llmclient.cache import CachedEntry, merge_chunks, replay_chunks, stream_finished
from llmclient.cache._entry import EntryError
from llmclient.cache._policy import cache_policy

ANSWER: dict[str, Any] = {
    "id": "resp_1", "object": "response", "created_at": 1, "model": "m", "status": "completed",
    "error": None, "output": [{"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
                               "content": [{"type": "output_text", "text": "Calm seas tonight.",
                                            "annotations": [], "logprobs": []}]}],
    "usage": {"input_tokens": 3, "output_tokens": 4, "total_tokens": 7},
}


def test_a_stream_is_whole_only_when_it_ended_with_response_completed() -> None:
    created = {"type": "response.created", "response": {**ANSWER, "status": "in_progress"}}
    delta = {"type": "response.output_text.delta", "delta": "Calm"}
    assert stream_finished([created, delta, {"type": "response.completed", "response": ANSWER}])
    assert not stream_finished([created, delta])  # cut
    assert not stream_finished([created, {"type": "response.failed", "response": ANSWER}])
    assert not stream_finished([created, {"type": "error", "message": "boom"}])


def test_an_answer_replays_as_the_events_a_server_streams_and_merges_back() -> None:
    events = replay_chunks(CachedEntry.from_response("responses", ANSWER))
    kinds = [e["type"] for e in events]
    assert kinds[:4] == ["response.created", "response.in_progress", "response.output_item.added",
                         "response.content_part.added"]
    assert kinds[-4:] == ["response.output_text.done", "response.content_part.done",
                          "response.output_item.done", "response.completed"]
    assert "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta") == "Calm seas tonight."
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert events[0]["response"]["output"] == [] and events[0]["response"]["status"] == "in_progress"
    assert stream_finished(events)
    assert merge_chunks("responses", events) == ANSWER


def test_merging_a_stream_without_its_final_event_is_refused() -> None:
    with pytest.raises(EntryError, match=r"response\.completed"):
        merge_chunks("responses", [{"type": "response.created", "response": ANSWER}])


def test_responses_are_cached_under_chat_rules_but_never_in_the_background() -> None:
    assert cache_policy({"input": "x", "temperature": 0}, None, "responses").read
    assert not cache_policy({"input": "x", "temperature": 0.7}, None, "responses").read
    assert not cache_policy({"input": "x", "temperature": 0, "background": True}, None, "responses").read
