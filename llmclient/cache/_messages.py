"""Anthropic's Messages API in the cache (pure): a stored stream of events merged into the
``Message`` a whole call gets, and a stored ``Message`` told again as the events a stream gets,
so that one entry answers either shape (as chat completions' entries do, ``_entry.py``).

The event grammar is Anthropic's (https://docs.anthropic.com/en/docs/build-with-claude/streaming,
read 2026-12-07): ``message_start``, per block ``content_block_start`` / ``_delta`` / ``_stop``
(text, ``input_json_delta`` for tool input, thinking and its signature), ``message_delta`` (stop
reason, output usage), ``message_stop``; ``ping`` is a keep-alive and is not stored.
"""

from __future__ import annotations

from typing import Any

import orjson

__all__ = ["MESSAGES_ENDPOINT", "merge_message_events", "message_events"]

MESSAGES_ENDPOINT = "messages"
_PIECE_CHARS = 16  # the text of a replayed stream, in word-sized pieces as a server sends it


class MessagesEntryError(ValueError):
    pass


def merge_message_events(events: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``Message`` the server would have answered a whole call with."""
    message: dict[str, Any] | None = None
    blocks: dict[int, dict[str, Any]] = {}
    inputs: dict[int, list[str]] = {}
    for event in events:
        kind = event.get("type")
        if kind == "message_start":
            message = dict(event.get("message") or {})
        elif kind == "content_block_start":
            blocks[event.get("index", 0)] = dict(event.get("content_block") or {})
        elif kind == "content_block_delta":
            index = event.get("index", 0)
            block = blocks.setdefault(index, {})
            delta = event.get("delta") or {}
            dtype = delta.get("type")
            if dtype == "text_delta":
                block["text"] = block.get("text", "") + delta.get("text", "")
            elif dtype == "input_json_delta":
                inputs.setdefault(index, []).append(delta.get("partial_json", ""))
            elif dtype == "thinking_delta":
                block["thinking"] = block.get("thinking", "") + delta.get("thinking", "")
            elif dtype == "signature_delta":
                block["signature"] = delta.get("signature", "")
            elif dtype == "citations_delta":
                block.setdefault("citations", []).append(delta.get("citation"))
        elif kind == "content_block_stop":
            index = event.get("index", 0)
            if index in inputs:
                text = "".join(inputs.pop(index))
                blocks.setdefault(index, {})["input"] = orjson.loads(text) if text else {}
        elif kind == "message_delta" and message is not None:
            message.update(event.get("delta") or {})
            usage = event.get("usage")
            if isinstance(usage, dict):
                message["usage"] = {**(message.get("usage") or {}),
                                    **{k: v for k, v in usage.items() if v is not None}}
    if message is None:
        raise MessagesEntryError("a Messages stream without message_start")
    message["content"] = [blocks[i] for i in sorted(blocks)]
    return message


def _pieces(text: str) -> list[str]:
    return [text[i:i + _PIECE_CHARS] for i in range(0, len(text), _PIECE_CHARS)] or [""]


def message_events(message: dict[str, Any]) -> list[dict[str, Any]]:
    """The events a server streams for ``message``."""
    usage = dict(message.get("usage") or {})
    head = {**message, "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": {**usage, "output_tokens": 0}}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": head}]
    for index, block in enumerate(message.get("content") or ()):
        kind = block.get("type")
        at = {"index": index}
        if kind == "text":
            events.append({"type": "content_block_start", **at, "content_block": {**block, "text": ""}})
            events += [{"type": "content_block_delta", **at, "delta": {"type": "text_delta", "text": piece}}
                       for piece in _pieces(block.get("text") or "")]
        elif kind == "tool_use":
            events.append({"type": "content_block_start", **at, "content_block": {**block, "input": {}}})
            events.append({"type": "content_block_delta", **at, "delta": {
                "type": "input_json_delta", "partial_json": orjson.dumps(block.get("input") or {}).decode()}})
        elif kind == "thinking":
            events.append({"type": "content_block_start", **at,
                           "content_block": {**block, "thinking": "", "signature": ""}})
            events.append({"type": "content_block_delta", **at,
                           "delta": {"type": "thinking_delta", "thinking": block.get("thinking") or ""}})
            events.append({"type": "content_block_delta", **at,
                           "delta": {"type": "signature_delta", "signature": block.get("signature") or ""}})
        else:  # a block with no deltas (redacted thinking, server tool results): whole at its start
            events.append({"type": "content_block_start", **at, "content_block": block})
        events.append({"type": "content_block_stop", **at})
    events.append({"type": "message_delta",
                   "delta": {"stop_reason": message.get("stop_reason"), "stop_sequence": message.get("stop_sequence")},
                   "usage": {"output_tokens": usage.get("output_tokens", 0)}})
    events.append({"type": "message_stop"})
    return events
