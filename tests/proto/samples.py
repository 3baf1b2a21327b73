"""Bodies in the OpenAI JSON shapes, one or more per message type of the wire schema."""

from __future__ import annotations

import base64
import struct
from typing import Any

CHAT_REQUEST: dict[str, Any] = {
    "model": "gpt-4o",
    "messages": [
        {"role": "system", "content": "You are terse."},
        {"role": "developer", "content": "Answer in French.", "name": "ops"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is in this picture?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo=", "detail": "low"}},
                {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
                {"type": "file", "file": {"file_id": "file-1", "filename": "a.pdf"}},
            ],
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": "{\"q\": \"x\"}"}}
            ],
            "refusal": None,
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "42"},
        {"role": "assistant", "content": [{"type": "refusal", "refusal": "no"}], "audio": {"id": "a1"}},
    ],
    "temperature": 0,
    "top_p": 0.95,
    "max_tokens": 256,
    "max_completion_tokens": 300,
    "n": 2,
    "stop": ["\n\n", "END"],
    "presence_penalty": -0.5,
    "frequency_penalty": 1.25,
    "seed": -7,
    "user": "u-1",
    "stream": True,
    "stream_options": {"include_usage": True},
    "tools": [
        {
            "type": "function",
            "function": {
                "name": "lookup",
                "description": "Look a thing up.",
                "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
                "strict": True,
            },
        }
    ],
    "tool_choice": {"type": "function", "function": {"name": "lookup"}},
    "parallel_tool_calls": False,
    "response_format": {
        "type": "json_schema",
        "json_schema": {"name": "answer", "schema": {"type": "object"}, "strict": True},
    },
    "logprobs": True,
    "top_logprobs": 3,
    "logit_bias": {"50256": -100},
    "metadata": {"team": "a"},
    "store": False,
    "service_tier": "auto",
    "reasoning_effort": "low",
    "modalities": ["text"],
    "prediction": {"type": "content", "content": "x"},
    "prompt_cache_key": "k",
    "verbosity": "low",
}

COMPLETION_REQUESTS: list[dict[str, Any]] = [
    {"model": "m", "prompt": "Once upon", "max_tokens": 5, "echo": True, "logprobs": 2, "suffix": "end",
     "best_of": 1, "stop": "\n", "logit_bias": {}, "stream": False},
    {"model": "m", "prompt": ["a", "b"], "temperature": 1.5},
    {"model": "m", "prompt": [1, 2, 3]},
    {"model": "m", "prompt": [[1, 2], [3]]},
    {"model": "m", "prompt": []},
]

EMBEDDING_REQUESTS: list[dict[str, Any]] = [
    {"model": "text-embedding-3-small", "input": "hello", "encoding_format": "float", "dimensions": 256},
    {"model": "text-embedding-3-small", "input": ["a", "b"], "user": "u"},
    {"model": "text-embedding-3-small", "input": [5, 6, 7]},
    {"model": "text-embedding-3-small", "input": [[5, 6], [7]], "encoding_format": "base64"},
]

CHAT_COMPLETION: dict[str, Any] = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1764633600,
    "model": "gpt-4o-2024-08-06",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "Bonjour.", "refusal": None, "annotations": []},
            "logprobs": {"content": [{"token": "Bon", "logprob": -0.1, "bytes": [66, 111, 110], "top_logprobs": []}]},
            "finish_reason": "stop",
        },
        {
            "index": 1,
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "call_9", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
            },
            "logprobs": None,
            "finish_reason": "tool_calls",
        },
    ],
    "usage": {
        "prompt_tokens": 20,
        "completion_tokens": 5,
        "total_tokens": 25,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0},
    },
    "system_fingerprint": None,
    "service_tier": "default",
}

COMPLETION: dict[str, Any] = {
    "id": "cmpl-1",
    "object": "text_completion",
    "created": 1,
    "model": "m",
    "choices": [{"text": " there", "index": 0, "logprobs": None, "finish_reason": "length"}],
    "usage": {"prompt_tokens": 2, "completion_tokens": 1, "total_tokens": 3},
}


def f32(x: float) -> float:
    return float(struct.unpack("<f", struct.pack("<f", x))[0])


EMBEDDINGS: dict[str, Any] = {
    "object": "list",
    "data": [
        {"object": "embedding", "index": 0, "embedding": [f32(0.1), f32(-0.25), 0.0, f32(3e-8)]},
        {"object": "embedding", "index": 1, "embedding": []},
    ],
    "model": "text-embedding-3-small",
    "usage": {"prompt_tokens": 2, "total_tokens": 2},
}

EMBEDDINGS_BASE64: dict[str, Any] = {
    "object": "list",
    "data": [{"object": "embedding", "index": 0,
              "embedding": base64.b64encode(struct.pack("<3f", 0.5, -1.0, 2.0)).decode()}],
    "model": "text-embedding-3-small",
    "usage": {"prompt_tokens": 2, "total_tokens": 2},
}

MODELS: dict[str, Any] = {
    "object": "list",
    "data": [{"id": "sim-small", "object": "model", "created": 0, "owned_by": "llmclient"}],
}
MODEL: dict[str, Any] = {"id": "sim-small", "object": "model", "created": 0, "owned_by": "llmclient"}
ERRORS: list[dict[str, Any]] = [
    {"error": {"message": "Bad.", "type": "invalid_request_error", "param": "messages", "code": None}},
    {"error": {"message": "Slow down.", "type": "rate_limit", "param": None, "code": 429}},
]


def chunks(words: list[str], *, usage: bool = True) -> list[dict[str, Any]]:
    """A streamed chat answer as the OpenAI API sends it."""
    head = {"id": "chatcmpl-s", "object": "chat.completion.chunk", "created": 5, "model": "m",
            "system_fingerprint": None}
    out = [{**head, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""},
                                 "logprobs": None, "finish_reason": None}]}]
    for w in words:
        out.append({**head, "choices": [{"index": 0, "delta": {"content": w}, "logprobs": None,
                                         "finish_reason": None}]})
    out.append({**head, "choices": [{"index": 0, "delta": {}, "logprobs": None, "finish_reason": "stop"}]})
    if usage:
        out.append({**head, "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": len(words),
                                                      "total_tokens": 3 + len(words)}})
    return out
