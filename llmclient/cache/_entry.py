"""Stored entries and replay: orjson bytes with a format version, never pickle.

Format (version 1)::

    {"v": 1, "created": <unix seconds>, "endpoint": "chat.completions",
     "response": {...} | null, "chunks": [{...}, ...] | null}

Exactly one of ``response`` (a non-streamed answer) and ``chunks`` (the chunks of a stream
that finished with a finish_reason) is set. Either can answer either kind of call: a stream
call replays ``chunks`` (or a faithful chunking of ``response``), a non-stream call gets
``response`` (or the chunks merged). Everything here is pure.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from ._messages import MESSAGES_ENDPOINT, merge_message_events, message_events

__all__ = [
    "ENTRY_VERSION",
    "CachedEntry",
    "EntryError",
    "decode_entry",
    "encode_entry",
    "merge_chunks",
    "replay_chunks",
    "replay_response",
    "stream_finished",
]

ENTRY_VERSION = 1

# Content is re-chunked at word boundaries (a word and its trailing space per chunk), which
# is how token streams look to a reader; a fixed cap keeps one chunk from holding a page.
_WORD_RE = re.compile(r"\S+\s*|\s+")
_MAX_CHUNK_CHARS = 64


class EntryError(ValueError):
    """A stored value is not a readable entry of this version (treated as a miss)."""


@dataclass(frozen=True)
class CachedEntry:
    endpoint: str
    response: dict[str, Any] | None = None
    chunks: list[dict[str, Any]] | None = None
    created: float = 0.0

    def __post_init__(self) -> None:
        if (self.response is None) == (self.chunks is None):
            raise EntryError("an entry holds exactly one of response and chunks")

    # Entries own a deep copy: the caller goes on to build (and may mutate) objects from the
    # same dicts, and single-flight waiters replay this entry later.
    @classmethod
    def from_response(cls, endpoint: str, response: Mapping[str, Any]) -> CachedEntry:
        return cls(endpoint, response=_copy(response), created=time.time())

    @classmethod
    def from_chunks(cls, endpoint: str, chunks: Iterable[Mapping[str, Any]]) -> CachedEntry:
        return cls(endpoint, chunks=_copy(list(chunks)), created=time.time())


def encode_entry(entry: CachedEntry) -> bytes:
    return orjson.dumps(
        {
            "v": ENTRY_VERSION,
            "created": entry.created,
            "endpoint": entry.endpoint,
            "response": entry.response,
            "chunks": entry.chunks,
        }
    )


def decode_entry(data: bytes) -> CachedEntry:
    """Parse stored bytes; raise :class:`EntryError` naming the problem."""
    try:
        raw = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise EntryError(f"entry is not JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise EntryError(f"entry is a JSON {type(raw).__name__}, not an object")
    if raw.get("v") != ENTRY_VERSION:
        raise EntryError(f"entry format version {raw.get('v')!r}, expected {ENTRY_VERSION}")
    endpoint, response, chunks = raw.get("endpoint"), raw.get("response"), raw.get("chunks")
    if not isinstance(endpoint, str):
        raise EntryError("entry has no endpoint")
    if response is not None and not isinstance(response, dict):
        raise EntryError("entry response is not an object")
    if chunks is not None and not (
        isinstance(chunks, list) and all(isinstance(c, dict) for c in chunks)
    ):
        raise EntryError("entry chunks are not a list of objects")
    created = raw.get("created")
    if not isinstance(created, (int, float)):
        raise EntryError("entry has no creation time")
    return CachedEntry(endpoint, response=response, chunks=chunks, created=float(created))


def stream_finished(chunks: Iterable[Mapping[str, Any]]) -> bool:
    """True when every choice seen in the stream ended with a finish_reason (a Responses API
    stream: when it ended with ``response.completed``).

    A cut or cancelled stream has at least one choice without one (or none at all) and must
    not be stored: replaying it would present a truncated answer as complete.
    """
    seen: set[int] = set()
    finished: set[int] = set()
    last_event: Any = None
    for chunk in chunks:
        if "type" in chunk:
            last_event = chunk["type"]
            continue
        for choice in chunk.get("choices") or ():
            index = choice.get("index", 0)
            seen.add(index)
            if choice.get("finish_reason"):
                finished.add(index)
    if last_event is not None:  # typed events: the Responses API's, or Anthropic's Messages stream
        return not seen and last_event in ("response.completed", "message_stop")
    return bool(seen) and seen == finished


# -- stream -> response ------------------------------------------------------------------


def _merge_tool_calls(into: list[dict[str, Any]], deltas: list[dict[str, Any]]) -> None:
    # Tool-call deltas arrive as fragments keyed by ``index``; arguments are concatenated.
    for delta in deltas:
        index = delta.get("index", len(into))
        while len(into) <= index:
            into.append({"id": None, "type": "function", "function": {"name": "", "arguments": ""}})
        call = into[index]
        if delta.get("id"):
            call["id"] = delta["id"]
        if delta.get("type"):
            call["type"] = delta["type"]
        fn = delta.get("function") or {}
        call["function"]["name"] += fn.get("name") or ""
        call["function"]["arguments"] += fn.get("arguments") or ""


def _merge_chat_choice(acc: dict[str, Any], choice: Mapping[str, Any]) -> None:
    delta = choice.get("delta") or {}
    message = acc["message"]
    if delta.get("role"):
        message["role"] = delta["role"]
    for field in ("content", "refusal"):
        if delta.get(field) is not None:
            message[field] = (message.get(field) or "") + delta[field]
    if delta.get("tool_calls"):
        _merge_tool_calls(message.setdefault("tool_calls", []), delta["tool_calls"])
    logprobs = choice.get("logprobs")
    if logprobs:
        target = acc.setdefault("logprobs", {"content": []})
        target["content"].extend(logprobs.get("content") or [])
    if choice.get("finish_reason"):
        acc["finish_reason"] = choice["finish_reason"]


def _merge_text_choice(acc: dict[str, Any], choice: Mapping[str, Any]) -> None:
    acc["text"] += choice.get("text") or ""
    if choice.get("finish_reason"):
        acc["finish_reason"] = choice["finish_reason"]


def merge_chunks(endpoint: str, chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """Merge stream chunks into the non-stream response the server would have sent."""
    if not chunks:
        raise EntryError("cannot merge an empty stream")
    if endpoint == "responses":
        for event in reversed(chunks):
            if event.get("type") == "response.completed" and isinstance(event.get("response"), dict):
                return _copy(event["response"])
        raise EntryError("a Responses stream without response.completed")
    if endpoint == MESSAGES_ENDPOINT:
        try:
            return merge_message_events(chunks)
        except ValueError as exc:
            raise EntryError(str(exc)) from None
    first = chunks[0]
    chat = endpoint == "chat.completions"
    choices: dict[int, dict[str, Any]] = {}
    usage = None
    for chunk in chunks:
        if chunk.get("usage"):
            usage = chunk["usage"]
        for choice in chunk.get("choices") or ():
            index = choice.get("index", 0)
            if index not in choices:
                choices[index] = (
                    {"index": index, "message": {"role": "assistant", "content": None},
                     "logprobs": None, "finish_reason": None}
                    if chat
                    else {"index": index, "text": "", "logprobs": None, "finish_reason": None}
                )
            (_merge_chat_choice if chat else _merge_text_choice)(choices[index], choice)
    response: dict[str, Any] = {
        "id": first.get("id"),
        "object": "chat.completion" if chat else "text_completion",
        "created": first.get("created"),
        "model": first.get("model"),
        "choices": [choices[i] for i in sorted(choices)],
    }
    if first.get("system_fingerprint") is not None:
        response["system_fingerprint"] = first["system_fingerprint"]
    if usage is not None:
        response["usage"] = usage
    return response


# -- response -> stream ------------------------------------------------------------------


def _split_text(text: str) -> list[str]:
    pieces: list[str] = []
    for word in _WORD_RE.findall(text):
        while len(word) > _MAX_CHUNK_CHARS:
            pieces.append(word[:_MAX_CHUNK_CHARS])
            word = word[_MAX_CHUNK_CHARS:]
        pieces.append(word)
    return pieces


def _chat_choice_chunks(choice: Mapping[str, Any]) -> list[dict[str, Any]]:
    index = choice.get("index", 0)
    message = choice.get("message") or {}
    deltas: list[dict[str, Any]] = [{"role": message.get("role", "assistant"), "content": ""}]
    deltas += [{"content": piece} for piece in _split_text(message.get("content") or "")]
    if message.get("refusal"):
        deltas.append({"refusal": message["refusal"]})
    for i, call in enumerate(message.get("tool_calls") or ()):
        deltas.append({"tool_calls": [{"index": i, **call}]})
    out = [{"index": index, "delta": d, "logprobs": None, "finish_reason": None} for d in deltas]
    out.append({"index": index, "delta": {}, "logprobs": None,
                "finish_reason": choice.get("finish_reason") or "stop"})
    return out


def _text_choice_chunks(choice: Mapping[str, Any]) -> list[dict[str, Any]]:
    index = choice.get("index", 0)
    out = [{"index": index, "text": piece, "logprobs": None, "finish_reason": None}
           for piece in _split_text(choice.get("text") or "")]
    out.append({"index": index, "text": "", "logprobs": None,
                "finish_reason": choice.get("finish_reason") or "stop"})
    return out


def _chunk_stream(endpoint: str, response: Mapping[str, Any]) -> list[dict[str, Any]]:
    chat = endpoint == "chat.completions"
    head = {
        "id": response.get("id"),
        "object": "chat.completion.chunk" if chat else "text_completion",
        "created": response.get("created"),
        "model": response.get("model"),
    }
    if response.get("system_fingerprint") is not None:
        head["system_fingerprint"] = response["system_fingerprint"]
    chunks = []
    for choice in response.get("choices") or ():
        for part in (_chat_choice_chunks if chat else _text_choice_chunks)(choice):
            chunks.append({**head, "choices": [part]})
    if response.get("usage") is not None:
        # OpenAI sends usage in a last chunk with empty choices (stream_options.include_usage).
        chunks.append({**head, "choices": [], "usage": response["usage"]})
    return chunks


def _event_stream(response: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The Responses API events a server streams for ``response``: created, in_progress, each
    output item with its content parts (text in word-sized deltas), completed."""
    head = {**response, "status": "in_progress", "output": [], "usage": None}
    events: list[dict[str, Any]] = [{"type": "response.created", "response": head},
                                    {"type": "response.in_progress", "response": head}]
    for oi, item in enumerate(response.get("output") or ()):
        if item.get("type") != "message":
            events.append({"type": "response.output_item.added", "output_index": oi, "item": item})
            events.append({"type": "response.output_item.done", "output_index": oi, "item": item})
            continue
        item_id = item.get("id")
        events.append({"type": "response.output_item.added", "output_index": oi,
                       "item": {**item, "status": "in_progress", "content": []}})
        for ci, part in enumerate(item.get("content") or ()):
            at = {"item_id": item_id, "output_index": oi, "content_index": ci}
            text_field = "text" if part.get("type") == "output_text" else "refusal"
            events.append({"type": "response.content_part.added", **at, "part": {**part, text_field: ""}})
            text = part.get(text_field) or ""
            if text_field == "text":
                events += [{"type": "response.output_text.delta", **at, "delta": piece, "logprobs": []}
                           for piece in _split_text(text)]
                events.append({"type": "response.output_text.done", **at, "text": text,
                               "logprobs": part.get("logprobs") or []})
            else:
                events.append({"type": "response.refusal.delta", **at, "delta": text})
                events.append({"type": "response.refusal.done", **at, "refusal": text})
            events.append({"type": "response.content_part.done", **at, "part": part})
        events.append({"type": "response.output_item.done", "output_index": oi, "item": item})
    events.append({"type": "response.completed", "response": dict(response)})
    for number, event in enumerate(events):
        event["sequence_number"] = number
    return events


def _copy(value: Any) -> Any:
    # Entries hold plain JSON, so an orjson round trip is a deep copy, ~7x faster than deepcopy.
    return orjson.loads(orjson.dumps(value))


def replay_response(entry: CachedEntry) -> dict[str, Any]:
    """The non-stream answer for an entry (a fresh copy the caller may mutate)."""
    if entry.endpoint == "embeddings" and entry.chunks is not None:
        raise EntryError("an embeddings entry cannot hold a stream")
    if entry.response is not None:
        return _copy(entry.response)
    assert entry.chunks is not None
    return merge_chunks(entry.endpoint, entry.chunks)


def replay_chunks(entry: CachedEntry, include_usage: bool = False) -> list[dict[str, Any]]:
    """The stream of chunks for an entry; the usage-only chunk only when asked for."""
    if entry.endpoint not in ("chat.completions", "completions", "responses", MESSAGES_ENDPOINT):
        raise EntryError(f"{entry.endpoint} answers cannot be streamed")
    if entry.chunks is not None:
        chunks = _copy(entry.chunks)
    else:
        assert entry.response is not None
        if entry.endpoint == "responses":
            return _event_stream(_copy(entry.response))
        if entry.endpoint == MESSAGES_ENDPOINT:
            return message_events(_copy(entry.response))
        chunks = _chunk_stream(entry.endpoint, entry.response)
    if include_usage or entry.endpoint in ("responses", MESSAGES_ENDPOINT):
        return chunks
    return [c for c in chunks if c.get("choices") or not c.get("usage")]
