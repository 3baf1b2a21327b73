from __future__ import annotations

import copy

import orjson
import pytest

from llmclient.cache import (
    CachedEntry,
    EntryError,
    decode_entry,
    encode_entry,
    merge_chunks,
    replay_chunks,
    replay_response,
    stream_finished,
)

from ._samples import CHAT_RESPONSE, chat_chunks


def test_entry_round_trips_as_versioned_orjson() -> None:
    entry = CachedEntry.from_response("chat.completions", CHAT_RESPONSE)
    data = encode_entry(entry)
    raw = orjson.loads(data)
    assert raw["v"] == 1 and raw["endpoint"] == "chat.completions" and raw["chunks"] is None
    assert decode_entry(data) == entry


@pytest.mark.parametrize(
    "data",
    [
        b"\x80\x04\x95pickle",
        b"[1, 2]",
        orjson.dumps({"v": 0, "created": 1, "endpoint": "chat.completions", "response": {}, "chunks": None}),
        orjson.dumps({"v": 1, "created": 1, "endpoint": "chat.completions", "response": None, "chunks": None}),
        orjson.dumps({"v": 1, "created": 1, "endpoint": 5, "response": {}, "chunks": None}),
        orjson.dumps({"v": 1, "created": 1, "endpoint": "completions", "response": None, "chunks": [1]}),
    ],
)
def test_unreadable_entries_raise_entry_error(data: bytes) -> None:
    with pytest.raises(EntryError):
        decode_entry(data)


def test_cached_response_replays_as_a_faithful_stream() -> None:
    entry = CachedEntry.from_response("chat.completions", CHAT_RESPONSE)
    chunks = replay_chunks(entry, include_usage=True)
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    content_chunks = [c for c in chunks if c["choices"] and c["choices"][0]["delta"].get("content")]
    assert len(content_chunks) > 3  # split into several pieces, not one blob
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"] == CHAT_RESPONSE["usage"]
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"
    merged = merge_chunks("chat.completions", chunks)
    assert merged["choices"][0]["message"] == CHAT_RESPONSE["choices"][0]["message"]
    assert merged["usage"] == CHAT_RESPONSE["usage"]
    assert stream_finished(chunks)


def test_usage_chunk_only_when_asked_for() -> None:
    entry = CachedEntry.from_response("chat.completions", CHAT_RESPONSE)
    assert all(c["choices"] for c in replay_chunks(entry, include_usage=False))
    stored = CachedEntry.from_chunks("chat.completions", chat_chunks())
    assert all(c["choices"] for c in replay_chunks(stored, include_usage=False))
    assert replay_chunks(stored, include_usage=True) == chat_chunks()


def test_cached_stream_answers_a_non_stream_call() -> None:
    entry = CachedEntry.from_chunks("chat.completions", chat_chunks("a b c"))
    response = replay_response(entry)
    assert response["object"] == "chat.completion"
    assert response["choices"][0]["message"] == {"role": "assistant", "content": "a b c "}
    assert response["choices"][0]["finish_reason"] == "stop"
    assert response["usage"]["total_tokens"] == 7


def test_tool_calls_survive_both_directions() -> None:
    response = copy.deepcopy(CHAT_RESPONSE)
    response["choices"][0]["message"] = {
        "role": "assistant", "content": None,
        "tool_calls": [{"id": "call_1", "type": "function",
                        "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}],
    }
    response["choices"][0]["finish_reason"] = "tool_calls"
    entry = CachedEntry.from_response("chat.completions", response)
    merged = merge_chunks("chat.completions", replay_chunks(entry, include_usage=True))
    assert merged["choices"][0]["message"]["tool_calls"] == response["choices"][0]["message"]["tool_calls"]
    assert merged["choices"][0]["finish_reason"] == "tool_calls"


def test_completions_replay() -> None:
    response = {"id": "cmpl-1", "object": "text_completion", "created": 1, "model": "m",
                "choices": [{"index": 0, "text": "one two three", "logprobs": None, "finish_reason": "length"}]}
    entry = CachedEntry.from_response("completions", response)
    chunks = replay_chunks(entry)
    assert len(chunks) >= 3 and stream_finished(chunks)
    assert merge_chunks("completions", chunks)["choices"][0]["text"] == "one two three"


def test_cut_stream_is_not_finished() -> None:
    assert not stream_finished(chat_chunks(finish=None))
    assert not stream_finished([])
    assert stream_finished(chat_chunks())


def test_embeddings_cannot_be_streamed() -> None:
    entry = CachedEntry.from_response("embeddings", {"object": "list", "data": []})
    with pytest.raises(EntryError):
        replay_chunks(entry)


def test_replay_returns_copies() -> None:
    entry = CachedEntry.from_response("chat.completions", CHAT_RESPONSE)
    replay_response(entry)["choices"].clear()
    assert replay_response(entry)["choices"]
