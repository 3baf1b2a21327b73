"""Sample answers in the OpenAI JSON shape, shared by the cache tests."""

from __future__ import annotations

from typing import Any

CHAT_RESPONSE: dict[str, Any] = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1764700000,
    "model": "m",
    "system_fingerprint": "fp_1",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "The quick brown fox jumps over the lazy dog."},
            "logprobs": None,
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 5, "completion_tokens": 10, "total_tokens": 15},
}


def chat_chunks(text: str = "Hello there, friend.", finish: str | None = "stop",
                usage: bool = True) -> list[dict[str, Any]]:
    head = {"id": "chatcmpl-2", "object": "chat.completion.chunk", "created": 1764700001, "model": "m"}
    chunks = [{**head, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""},
                                    "finish_reason": None}]}]
    for word in text.split(" "):
        chunks.append({**head, "choices": [{"index": 0, "delta": {"content": word + " "},
                                            "finish_reason": None}]})
    if finish is not None:
        chunks.append({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
        if usage:
            chunks.append({**head, "choices": [],
                           "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}})
    return chunks
