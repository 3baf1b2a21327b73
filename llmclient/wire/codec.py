"""Owns the codec contract and the JSON wire: the :class:`Codec` and :class:`StreamDecoder`
protocols every wire implements, the JSON codec (orjson; :data:`JSON_CODEC`), the Server-Sent
Events decoder (:class:`SSEDecoder`), and what a stream chunk means (:func:`has_token`,
:data:`RESPONSES_PATH`, :data:`RESPONSE_END_EVENTS`).

A :class:`Codec` is chosen per call by ``CallOptions.wire``; whatever the wire, decoded values
are plain dicts in the OpenAI JSON shape. JSON is the default; the protobuf codec
(``llmclient/wire/protobuf.py``) implements the same Protocol.
"""

from __future__ import annotations

import sys
from array import array
from typing import Any, Literal, Protocol, runtime_checkable

import orjson

from .._errors import IncompleteStreamError, MalformedResponseError

__all__ = ["JSON_CODEC", "Codec", "JsonCodec", "SSEDecoder", "StreamDecoder", "WholeJsonDecoder", "Wire",
           "as_stream_chunk", "float32_list"]

# The ``wire=`` setting's values (CallOptions.wire).
Wire = Literal["json", "protobuf", "auto"]


@runtime_checkable
class StreamDecoder(Protocol):
    def feed(self, data: bytes) -> list[dict[str, Any]]:
        """Bytes in, complete events out (raises MalformedResponseError on a bad frame)."""
        ...

    def close(self) -> None:
        """End of body: raises IncompleteStreamError if the stream did not finish properly."""
        ...

    @property
    def done(self) -> bool:
        """True once the terminal marker (``[DONE]``) arrived: nothing more will be decoded."""
        ...


@runtime_checkable
class Codec(Protocol):
    name: str
    content_type: str
    accept: str

    def encode(self, path: str, body: dict[str, Any]) -> bytes: ...

    def decode(self, path: str, data: bytes, content_type: str) -> dict[str, Any]: ...

    def stream_decoder(self, content_type: str) -> StreamDecoder: ...


class JsonCodec:
    name = "json"
    content_type = "application/json"
    accept = "application/json"

    def encode(self, path: str, body: dict[str, Any]) -> bytes:
        return orjson.dumps(body)

    def decode(self, path: str, data: bytes, content_type: str) -> dict[str, Any]:
        try:
            value = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise MalformedResponseError(_not_json_message(data, content_type, exc)) from None
        if not isinstance(value, dict):
            raise MalformedResponseError(
                f"Malformed response: expected a JSON object, got {type(value).__name__}: {data[:120]!r}"
            )
        return value

    def stream_decoder(self, content_type: str) -> SSEDecoder:
        if not content_type.startswith("text/event-stream"):
            raise MalformedResponseError(
                f"Malformed stream: expected content-type text/event-stream, got {content_type or '(none)'!r}"
            )
        return SSEDecoder()


def _not_json_message(data: bytes, content_type: str, exc: Exception) -> str:
    head = data.lstrip()[:1]
    if head == b"<" or "html" in content_type:
        return f"Malformed response: expected JSON, got an HTML page ({data[:120]!r}); is the base URL right?"
    if not data:
        return "Malformed response: expected JSON, got an empty body"
    return f"Malformed response: body is not valid JSON ({exc}): {data[:120]!r}"


# The Responses API: its path, and the events its stream ends with (it sends no ``[DONE]``).
RESPONSES_PATH = "/responses"
RESPONSE_END_EVENTS: frozenset[str] = frozenset(
    {"response.completed", "response.incomplete", "response.failed", "error"})
# Anthropic's Messages API: its path (the base URL has no /v1), the event its stream ends with,
# and the keep-alive event that is no progress (https://docs.anthropic.com/en/docs/build-with-claude/streaming,
# read 2026-12-07: "Event streams may also include any number of ping events").
MESSAGES_PATH = "/v1/messages"
MESSAGE_END_EVENT = "message_stop"
PING_EVENT = "ping"


def has_token(chunk: dict[str, Any]) -> bool:
    """Whether a stream chunk carries generated output: content, a tool call or completion
    text; for a Responses API event, a ``*.delta`` (text, refusal or arguments arriving)."""
    kind = chunk.get("type")
    if kind is not None:
        return kind == "content_block_delta" or bool(kind.endswith(".delta"))
    for choice in chunk.get("choices") or ():
        delta = choice.get("delta")
        if (delta and (delta.get("content") or delta.get("tool_calls"))) or choice.get("text"):
            return True
    return False


class SSEDecoder:
    """Server-Sent Events (WHATWG HTML, section 9.2.6) carrying OpenAI JSON chunks.

    Only ``data`` and ``event`` fields matter to the OpenAI stream format; comments (lines
    starting with ':', used as keep-alives) and ``id``/``retry`` are ignored. ``data: [DONE]``
    ends the stream. An ``event: error`` or a data object with an ``error`` key is returned as
    is: the caller turns it into an APIError with the call's context.
    """

    __slots__ = ("_buf", "_done", "_finished", "_seen")

    def __init__(self) -> None:
        self._buf = b""
        self._done = False
        self._finished = False
        self._seen = 0

    @property
    def done(self) -> bool:
        return self._done

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        if self._done:
            return []
        buf = self._buf + data if self._buf else data
        if b"\r" in buf:
            buf = _normalise_newlines(buf)
        *events, self._buf = buf.split(b"\n\n")
        out: list[dict[str, Any]] = []
        for raw in events:
            obj = self._parse_event(raw)
            if obj is not None:
                out.append(obj)
            if self._done:
                break
        return out

    def _parse_event(self, raw: bytes) -> dict[str, Any] | None:
        payload: bytes | None
        if raw.startswith(b"data: ") and b"\n" not in raw:  # the common one-line event
            payload, event = raw[6:], b""
        else:
            nl = raw.find(b"\n")
            if raw.startswith(b"event: ") and raw.startswith(b"data: ", nl + 1) and raw.find(b"\n", nl + 1) < 0:
                # the common two-line event of typed streams (Anthropic's Messages, the Responses API)
                payload, event = raw[nl + 7:], raw[7:nl]
            else:
                payload, event = _fields(raw)
                if payload is None:
                    return None
        if payload == b"[DONE]":
            self._done = True
            return None
        try:
            obj = orjson.loads(payload)
        except orjson.JSONDecodeError as exc:
            raise MalformedResponseError(
                f"Malformed stream: SSE event {self._seen + 1} has a data field that is not JSON ({exc}): {payload[:120]!r}"
            ) from None
        if not isinstance(obj, dict):
            raise MalformedResponseError(
                f"Malformed stream: SSE event {self._seen + 1} is not a JSON object: {payload[:120]!r}"
            )
        self._seen += 1
        if event == b"error" and "error" not in obj and obj.get("type") != "error":
            obj = {"error": obj}  # a Responses ``error`` event is typed: handed on as it is
        for choice in obj.get("choices") or ():
            if choice.get("finish_reason"):
                self._finished = True
        kind = obj.get("type")
        if kind in RESPONSE_END_EVENTS or kind == MESSAGE_END_EVENT:
            self._finished = True
        return obj

    def close(self) -> None:
        if self._done:
            return
        rest = self._buf.strip()
        if rest:
            try:  # a last event without its blank line is fine if it is whole
                self.feed(b"\n\n")
            except MalformedResponseError:
                raise IncompleteStreamError(
                    f"Incomplete stream: body ended inside an SSE event after {self._seen} events: {rest[:120]!r}"
                ) from None
        if not self._done and not self._finished:
            raise IncompleteStreamError(
                f"Incomplete stream: the server closed the stream after {self._seen} events "
                "without a finish_reason, a final response event or 'data: [DONE]'"
            )


class WholeJsonDecoder:
    """A stream request answered with one JSON object (``application/json``: a server that
    ignored ``stream``, or a mock serving the API's spec): a stream of one chunk, the answer as
    it would have streamed (:func:`as_stream_chunk`). The official client yields nothing from
    such a body; an error object is handed on like an SSE ``error`` event."""

    __slots__ = ("_buf", "_done", "_path")

    def __init__(self, path: str) -> None:
        self._path = path
        self._buf = b""
        self._done = False

    @property
    def done(self) -> bool:
        return self._done

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        if self._done:
            return []
        self._buf += data
        if not self._buf.rstrip().endswith(b"}"):
            return []
        try:  # whole once it parses: usually the first read (a cut "}" only waits for more)
            value = orjson.loads(self._buf)
        except orjson.JSONDecodeError:
            return []
        return self._chunk(value)

    def _chunk(self, value: object) -> list[dict[str, Any]]:
        if not isinstance(value, dict):
            raise MalformedResponseError(
                f"Malformed stream: a JSON answer that is not an object: {self._buf[:120]!r}")
        self._done = True
        return [as_stream_chunk(self._path, value)]

    def close(self) -> None:
        if self._done:
            return
        try:
            value = orjson.loads(self._buf)
        except orjson.JSONDecodeError as exc:
            raise MalformedResponseError(_not_json_message(self._buf, "application/json", exc)) from None
        raise MalformedResponseError(f"Malformed stream: a JSON answer that is not an object: {value!r:.120}")


def as_stream_chunk(path: str, value: dict[str, Any]) -> dict[str, Any]:
    """A whole answer as the one stream chunk (or event) that carries all of it: a chat
    completion's messages become deltas (tool calls indexed), a Responses API ``response``
    its final event; a completion, a chunk already or an error object stays as it is."""
    if "error" in value and "choices" not in value:
        return value
    if path == RESPONSES_PATH and value.get("object") == "response":
        status = value.get("status")
        kind = {"incomplete": "response.incomplete", "failed": "response.failed"}.get(
            status if isinstance(status, str) else "", "response.completed")
        return {"type": kind, "response": value, "sequence_number": 0}
    if value.get("object") != "chat.completion":
        return value
    chunk = {**value, "object": "chat.completion.chunk"}
    choices = []
    for choice in value.get("choices") or ():
        if not isinstance(choice, dict):
            return value
        delta = dict(choice.get("message") or {})
        calls = delta.get("tool_calls")
        if isinstance(calls, list):
            delta["tool_calls"] = [{**c, "index": i} if isinstance(c, dict) else c for i, c in enumerate(calls)]
        rest = {k: v for k, v in choice.items() if k != "message"}
        choices.append({**rest, "delta": delta})
    chunk["choices"] = choices
    return chunk


def _normalise_newlines(buf: bytes) -> bytes:
    # A lone trailing CR may be the first half of a CRLF split across reads: keep it for later.
    held = buf.endswith(b"\r")
    if held:
        buf = buf[:-1]
    buf = buf.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    return buf + b"\r" if held else buf


def _fields(raw: bytes) -> tuple[bytes | None, bytes]:
    data: list[bytes] = []
    event = b""
    for line in raw.split(b"\n"):
        if not line or line.startswith(b":"):
            continue
        name, _, value = line.partition(b":")
        if value.startswith(b" "):
            value = value[1:]
        if name == b"data":
            data.append(value)
        elif name == b"event":
            event = value
    return (b"\n".join(data) if data else None), event


def float32_list(raw: bytes) -> list[float]:
    """Little-endian float32s as Python floats: an embedding as the API sends it in base64, and
    as protobuf packs it. ValueError when ``raw`` is not a whole number of them."""
    floats = array("f")
    floats.frombytes(raw)
    if sys.byteorder == "big":
        floats.byteswap()
    return floats.tolist()


JSON_CODEC = JsonCodec()
