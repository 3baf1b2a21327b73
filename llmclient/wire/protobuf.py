"""Owns the protobuf wire (``application/x-protobuf``): the codec, stream framing and encoders,
and the negotiation that chooses between protobuf and JSON per origin. The dict <-> message
mapping and the pure-Python parser (the reference for its compiled twin ``_pbparse.c``) are
the schema glue, ``pbschema.py``; what follows says how both work.

Bodies are one ``llmclient.v1.Body`` envelope (``llmclient/wire/proto/llmclient.proto``);
streams are length-delimited ``Body`` frames (a base-128 varint length, then the message:
protobuf's ``writeDelimitedTo`` framing) ended by a ``done`` frame, the ``data: [DONE]`` of SSE.

Dicts and messages are mapped by hand from tables built once from the descriptors, not with
``google.protobuf.json_format`` (far slower to encode, and it cannot say null or []): dicts
become constructor kwargs that the runtime (upb, in C) builds in one call; bytes are parsed
straight into dicts by a small table-driven wire parser (``_parse``), faster than the
runtime's parse followed by ``ListFields`` walks. A lazy Mapping over the runtime's parsed
message does not pay either: the runtime's parse is cheap, but exact reads and decode-time
errors need every message's ``nulls``, ``empty``, ``extra`` and JSON fields looked at, and that
walk through the runtime's Python objects costs about what ``_parse`` does, so through the
response objects an app reads (``python -m benchmarks.wire_bytes``, ``dec us``) it stayed
slower than orjson. What closed the gap is ``llmclient/wire/_pbparse.c``, the compiled twin of
``_parse``/``_parse_body``: it walks the same tables and builds the same dicts, on par with
orjson on the same answer (figures in README, What it measured). It is built at install time
when a C compiler is there (optional: without one the install succeeds and the Python parser
serves); ``LLMCLIENT_PURE_PYTHON=1`` turns it off. tests/proto/test_pbparse_parity.py holds
the two to identical results and errors on valid, mutated and random bytes. The mapping is
lossless for any JSON object: a key or value the schema cannot hold goes into the
message's ``extra`` JSON field, explicit nulls into ``nulls``, empty lists into ``empty``. So
``decode(encode(d)) == d`` for every dict the JSON path could carry, with one documented
exception: embeddings travel as float32, as the API computes them (a float64 value that is not
a float32 comes back rounded to the nearest float32).

Stream frames shrink further by inheriting their header (id, object, created, model,
system_fingerprint, service_tier) from the previous frame when it is unchanged, and a chunk that
differs from the previous one only by its token is a ``TokenDelta`` frame (~5 bytes + text):
every SSE chunk repeats ~200 bytes of scaffolding around one token.

Bad input (truncated or oversize frames, garbage, wrong wire types, invalid UTF-8, unknown
marks) raises MalformedResponseError / IncompleteStreamError naming the frame; the client adds
the trace id when it wraps them. Unknown fields (a newer schema) are skipped.

``google.protobuf`` is imported on first use only: ``import llmclient`` stays free of it.
"""

from __future__ import annotations

import os
import struct
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Final, Literal

import orjson

from .._errors import IncompleteStreamError, MalformedResponseError
from .codec import JSON_CODEC, SSEDecoder, Wire
from .compression import parse_accept_encoding
from .pbschema import (
    _I64,
    _K_BOOL,
    _K_BYTES,
    _K_DOUBLE,
    _K_EXTRA,
    _K_INT64,
    _K_MARKS,
    _K_MARKS_PACKED,
    _K_MSG,
    _K_RINT,
    _K_RINT_PACKED,
    _K_RMSG,
    _K_RSTR,
    _K_STR,
    _K_UINT32,
    _LEN,
    _VARINT,
    ALIASES,
    _Bad,
    _build_specs,
    _encode,
    _finish,
    _loads,
    _parse,
    _Spec,
    _specs,
    _varint_tail,
)

__all__ = [
    "ALIASES",
    "DEFAULT_MAX_FRAME_BYTES",
    "PROTOBUF_CODEC",
    "PROTOBUF_CONTENT_TYPE",
    "WIRE_HEADER",
    "ProtobufCodec",
    "ProtobufStreamDecoder",
    "StreamEncoder",
    "WireObservation",
    "WireState",
    "accept_header",
    "choose_wire",
    "decode_body",
    "encode_body",
    "encode_chunk",
    "encode_response",
    "frame",
    "observe_response",
    "request_kind",
    "response_kind",
    "server_accepts_protobuf",
]

PROTOBUF_CONTENT_TYPE: Final = "application/x-protobuf"
# Response header by which a server says it reads protobuf request bodies (any response, any
# endpoint). ``Accept-Post`` (W3C LDP 1.0, section 7.1) carries the same news for POST targets.
WIRE_HEADER: Final = "x-llm-wire"
# A frame larger than this is refused before it is buffered: no OpenAI response comes near it
# (a 2048 x 3072-dim float32 embedding batch is 24 MiB, sent unframed, not as a stream).
DEFAULT_MAX_FRAME_BYTES: Final = 16 * 1024 * 1024

_REQUEST_KINDS: Final[Mapping[str, str]] = {
    "/chat/completions": "chat_request",
    "/completions": "completion_request",
    "/embeddings": "embedding_request",
}
_KIND_TYPES: Final[Mapping[str, str]] = {
    "chat_request": "ChatCompletionRequest",
    "completion_request": "CompletionRequest",
    "embedding_request": "EmbeddingRequest",
    "chat_completion": "ChatCompletion",
    "completion": "Completion",
    "embeddings": "EmbeddingResponse",
    "models": "ModelList",
    "model": "Model",
    "error": "ErrorResponse",
}
_HEADER_KEYS: Final = frozenset(
    {"id", "object", "created", "model", "system_fingerprint", "service_tier"}
)
_INHERITING_KINDS: Final = frozenset({"chat_completion", "completion"})
_BODY_KINDS: Final[Mapping[int, str]] = {
    1: "chat_request", 2: "completion_request", 3: "embedding_request", 4: "chat_completion",
    5: "completion", 6: "embeddings", 7: "models", 8: "model", 9: "error",
}

_lock = threading.Lock()
_pb: Any = None


def _module() -> Any:
    global _pb, _parse_body_fn
    if _pb is None:
        with _lock:
            if _pb is None:
                try:
                    # google.protobuf (tens of ms): loaded by the first protobuf call
                    from .proto import llmclient_pb2
                except ImportError as exc:  # pragma: no cover - protobuf is a core dependency
                    raise ImportError(
                        "wire='protobuf' needs the protobuf runtime: pip install 'protobuf>=7.35.1'"
                    ) from exc
                _build_specs(llmclient_pb2)
                _parse_body_fn = _compiled_parser() or _parse_body
                _pb = llmclient_pb2
    return _pb


def _spec(name: str) -> _Spec:
    _module()
    return _specs[name]


# --------------------------------------------------------------------------- bodies


def request_kind(path: str) -> str:
    """The envelope kind for a request body POSTed to ``path`` (relative to /v1 or not)."""
    for suffix, kind in _REQUEST_KINDS.items():
        if path.endswith(suffix) and (suffix != "/completions" or not path.endswith("/chat/completions")):
            return kind
    return "json"


def response_kind(body: Mapping[str, Any]) -> str:
    """The envelope kind for a response body, from its ``object`` (OpenAI's own type tag)."""
    obj = body.get("object")
    if obj in ("chat.completion", "chat.completion.chunk"):
        return "chat_completion"
    if obj == "text_completion":
        return "completion"
    if obj == "model":
        return "model"
    if obj == "list":
        data = body.get("data")
        first = data[0] if isinstance(data, list) and data else None
        if isinstance(first, dict) and first.get("object") == "embedding":
            return "embeddings"
        return "models"
    if "error" in body and isinstance(body["error"], dict):
        return "error"
    return "json"


def encode_body(kind: str, body: Mapping[str, Any], dropped: list[str] | None = None) -> bytes:
    """One ``Body`` envelope of ``kind`` holding ``body`` (``json`` holds any object)."""
    pb = _module()
    if kind == "json":
        env = pb.Body(json=orjson.dumps(body))
    else:
        spec = _specs[_KIND_TYPES[kind]]
        if not isinstance(body, dict):
            body = dict(body)
        env = pb.Body(**{kind: _encode(spec, body)})
    if dropped:
        env.dropped.extend(dropped)
    out: bytes = env.SerializeToString()
    return out


def encode_response(body: Mapping[str, Any]) -> bytes:
    """A whole (non-stream) response body, for servers."""
    return encode_body(response_kind(body), body)


_BODY_DROPPED: Final = (12 << 3) | _LEN
_BODY_JSON: Final = (11 << 3) | _LEN
_BODY_DONE: Final = (10 << 3) | _LEN
_BODY_TOKEN: Final = (13 << 3) | _LEN


def decode_body(data: bytes) -> tuple[str, dict[str, Any] | None, list[str]]:
    """``Body`` bytes -> (kind, dict or None for ``done``, dropped header keys)."""
    if _pb is None:
        _module()
    try:
        kind, value, dropped = _parse_body_fn(data if type(data) is bytes else bytes(data))
    except MalformedResponseError:
        raise
    except _PARSE_ERRORS as exc:
        raise _malformed(exc, data) from None
    if kind is None:
        raise _malformed(None, data)
    return kind, value, dropped


# What the parsers raise on bad bytes (besides MalformedResponseError itself).
_PARSE_ERRORS: Final = (_Bad, IndexError, UnicodeDecodeError, ValueError, struct.error)


def _malformed(exc: Exception | None, data: bytes) -> MalformedResponseError:
    if exc is None:
        return MalformedResponseError(
            f"Malformed protobuf body: no known body kind in {len(data)} bytes "
            f"(a newer schema, or not llmclient's protobuf): {data[:60]!r}"
        )
    why = "truncated" if isinstance(exc, IndexError) else str(exc)
    return MalformedResponseError(
        f"Malformed protobuf body: not a valid llmclient.v1.Body ({why}): {data[:60]!r}"
    )


def _parse_body(data: bytes) -> tuple[str | None, dict[str, Any] | None, list[str]]:
    kind: str | None = None
    value: dict[str, Any] | None = None
    dropped: list[str] = []
    i, end = 0, len(data)
    while i < end:
        tag = data[i]
        i += 1
        if tag >= 0x80:
            tag, i = _varint_tail(data, i, tag)
        wire = tag & 7
        if wire != _LEN:  # Body has only LEN fields: skip an unknown scalar
            if wire == _VARINT:
                v = data[i]
                i += 1
                if v >= 0x80:
                    _, i = _varint_tail(data, i, v)
            elif wire in (_I64, 5):
                i += 8 if wire == _I64 else 4
            else:
                raise _Bad(f"wire type {wire} in Body")
            continue
        n = data[i]
        i += 1
        if n >= 0x80:
            n, i = _varint_tail(data, i, n)
        j = i + n
        if j > end:
            raise _Bad("a field runs past the end of the body")
        number = tag >> 3
        name = _BODY_KINDS.get(number)
        if name is not None:
            kind, value = name, _parse(_specs[_KIND_TYPES[name]], data, i, j)
        elif tag == _BODY_DROPPED:
            dropped.append(data[i:j].decode("utf-8"))
        elif tag == _BODY_TOKEN:
            kind, value = "token", {"content": _parse(_specs["TokenDelta"], data, i, j).get("content", "")}
        elif tag == _BODY_DONE:
            kind, value = "done", None
        elif tag == _BODY_JSON:
            kind, value = "json", _body_json(data[i:j])
        i = j
    return kind, value, dropped


def _body_json(data: bytes) -> dict[str, Any]:
    value = _loads(data, "Body")
    if type(value) is not dict:
        raise MalformedResponseError("Malformed protobuf body: Body.json is not a JSON object")
    return value


_BodyParser = Callable[[bytes], "tuple[str | None, dict[str, Any] | None, list[str]]"]
# The parser decode_body uses: the compiled twin of _parse_body (llmclient/wire/_pbparse.c) when it
# was built at install time and not turned off with LLMCLIENT_PURE_PYTHON=1; else _parse_body.
_parse_body_fn: _BodyParser = _parse_body


def _compiled_parser() -> _BodyParser | None:
    """llmclient.wire._pbparse set up with this module's tables, or None (not built, or turned off)."""
    if os.environ.get("LLMCLIENT_PURE_PYTHON", "") not in ("", "0"):
        return None
    try:
        from . import _pbparse  # the compiled parser, optional (built where a C compiler was)
    except ImportError:
        return None
    kinds = (
        _K_STR, _K_RSTR, _K_MSG, _K_RMSG, _K_BYTES, _K_INT64, _K_UINT32, _K_BOOL, _K_DOUBLE,
        _K_RINT_PACKED, _K_RINT, _K_MARKS_PACKED, _K_MARKS, _K_EXTRA,
    )
    body_kinds = {n: (name, _specs[_KIND_TYPES[name]]) for n, name in _BODY_KINDS.items()}
    _pbparse.setup(
        _Bad, _finish, _body_json, body_kinds, _specs["TokenDelta"], kinds, list(_specs.values())
    )
    parse_body: _BodyParser = _pbparse.parse_body
    return parse_body


def frame(payload: bytes) -> bytes:
    """A length-delimited frame: base-128 varint length, then the payload."""
    n = len(payload)
    head = bytearray()
    while n > 0x7F:
        head.append((n & 0x7F) | 0x80)
        n >>= 7
    head.append(n)
    return bytes(head) + payload


def encode_chunk(chunk: Mapping[str, Any]) -> bytes:
    """One self-contained stream frame (no state: larger than ``StreamEncoder`` frames).

    It names every header key it lacks as dropped, so a decoder in the middle of a stream
    inherits nothing from earlier frames.
    """
    kind = response_kind(chunk)
    dropped = [k for k in sorted(_HEADER_KEYS) if k not in chunk] if kind in _INHERITING_KINDS else None
    return frame(encode_body(kind, chunk, dropped))


class StreamEncoder:
    """Server side of a protobuf stream: one chunk dict in, one frame out.

    Keeps the previous chunk (by reference: do not mutate a chunk once encoded) to send only
    what changed: a header that differs, or just the token text (``TokenDelta``).
    """

    __slots__ = ("_header", "_prev")

    def __init__(self) -> None:
        self._header: dict[str, Any] = {}
        self._prev: Mapping[str, Any] | None = None

    def encode(self, chunk: Mapping[str, Any]) -> bytes:
        kind = response_kind(chunk)
        if kind not in _INHERITING_KINDS:
            return frame(encode_body(kind, chunk))
        if kind == "chat_completion":
            content = _token_of(self._prev, chunk)
            self._prev = chunk
            if content is not None:
                return frame(_token_frame(content))
        else:
            self._prev = None
        prev = self._header
        header: dict[str, Any] = {}
        body: dict[str, Any] = {}
        for k, v in chunk.items():
            if k in _HEADER_KEYS:
                header[k] = v
                if k in prev and prev[k] == v and type(prev[k]) is type(v):
                    continue
            body[k] = v
        dropped = [k for k in prev if k not in header]
        self._header = header
        return frame(encode_body(kind, body, dropped))

    def done(self) -> bytes:
        return frame(_module().Body(done={}).SerializeToString())


def _token_frame(content: str) -> bytes:
    text = content.encode("utf-8")
    inner = b"\x0a" + frame(text) if text else b""  # field 1, wire type 2 (LEN)
    return b"\x6a" + frame(inner)  # Body field 13 (token), wire type 2


def _same(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if type(a) in (dict, list):
        return bool(orjson.dumps(a) == orjson.dumps(b))  # also tells 1 from True inside
    return bool(a == b)


def _single_choice(chunk: Mapping[str, Any] | None) -> dict[str, Any] | None:
    choices = chunk.get("choices") if chunk is not None else None
    if type(choices) is not list or len(choices) != 1 or type(choices[0]) is not dict:
        return None
    return choices[0]


def _token_of(prev: Mapping[str, Any] | None, chunk: Mapping[str, Any]) -> str | None:
    """The token text if ``chunk`` is ``prev`` with only its choice's delta now {"content": t}."""
    choice, prev_choice = _single_choice(chunk), _single_choice(prev)
    if choice is None or prev_choice is None or prev is None or len(chunk) != len(prev):
        return None
    delta = choice.get("delta")
    if type(delta) is not dict or len(delta) != 1 or type(delta.get("content")) is not str:
        return None
    if len(choice) != len(prev_choice):
        return None
    for k, v in choice.items():
        if k != "delta" and (k not in prev_choice or not _same(prev_choice[k], v)):
            return None
    for k, v in chunk.items():
        if k != "choices" and (k not in prev or not _same(prev[k], v)):
            return None
    content: str = delta["content"]
    return content


def _varint(data: bytes, i: int) -> tuple[int, int]:
    """(value, next index); (-1, -1) if the varint runs past the end or over 5 bytes."""
    value = shift = 0
    n = len(data)
    while i < n and shift < 35:
        b = data[i]
        i += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, i
        shift += 7
    return -1, -1


def _token_fast(payload: bytes) -> str | None:
    """The text of a ``Body{token}`` in its canonical layout, without the protobuf runtime."""
    length, i = _varint(payload, 1)
    if i < 0 or i + length != len(payload):
        return None
    if length == 0:
        return ""
    if payload[i] != 0x0A:
        return None
    length, j = _varint(payload, i + 1)
    if j < 0 or j + length != len(payload):
        return None
    try:
        return payload[j:].decode("utf-8")
    except UnicodeDecodeError:
        return None  # the runtime's parse then reports it


class ProtobufStreamDecoder:
    """Client side: length-delimited ``Body`` frames in, chunk dicts out (the JSON shape)."""

    __slots__ = (
        "_buf", "_choice", "_done", "_finished", "_header", "_max", "_need", "_seen", "_top",
    )

    def __init__(self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        _module()
        self._buf = bytearray()  # the start of an incomplete frame
        self._need = 0  # bytes that frame needs in all, when its length is known
        self._done = False
        self._finished = False
        self._header: dict[str, Any] = {}
        # The last chat chunk, as our own copies: the template a token frame fills in.
        self._top: dict[str, Any] | None = None
        self._choice: dict[str, Any] | None = None
        self._max = max_frame_bytes
        self._seen = 0

    @property
    def done(self) -> bool:
        return self._done

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        if self._done:
            return []
        if self._buf:
            self._buf += data
            if len(self._buf) < self._need:  # a large frame arriving in pieces: wait, no copy
                return []
            buf = bytes(self._buf)
            self._buf = bytearray()
        else:
            buf = data
        out: list[dict[str, Any]] = []
        pos, n = 0, len(buf)
        while pos < n:
            b = buf[pos]
            if b < 0x80 and b <= self._max:  # the common case: a frame under 128 bytes
                length, start = b, pos + 1
            else:
                length, start = self._length(buf, pos, n)
            end = start + length
            if start < 0 or end > n:
                self._need = end - pos if start >= 0 else 0
                break
            pos = end
            obj = self._frame(buf[start:end])
            if obj is not None:
                out.append(obj)
            if self._done:
                return out
        if pos < n:
            self._buf = bytearray(buf[pos:])
        return out

    def _length(self, buf: bytes, pos: int, n: int) -> tuple[int, int]:
        length, start = _varint(buf, pos)
        if start < 0:
            if n - pos >= 5:
                raise MalformedResponseError(
                    f"Malformed stream: frame {self._seen + 1} has an over-long length prefix"
                )
            return 0, -1
        if length > self._max:
            raise MalformedResponseError(
                f"Malformed stream: frame {self._seen + 1} declares {length} bytes, over "
                f"the {self._max}-byte frame limit"
            )
        return length, start

    def _frame(self, payload: bytes) -> dict[str, Any] | None:
        if payload[:1] == b"\x6a":
            content = _token_fast(payload)
            if content is not None:
                self._seen += 1
                return self._token(content)
        try:
            kind, obj, dropped = decode_body(payload)
        except MalformedResponseError as exc:
            raise MalformedResponseError(f"Malformed stream: frame {self._seen + 1}: {exc.message}") from None
        self._seen += 1
        if obj is None:
            self._done = True
            return None
        if kind == "token":
            return self._token(obj["content"])
        if kind in _INHERITING_KINDS:
            obj = self._inherit(obj, dropped)
            for choice in obj.get("choices") or ():
                if isinstance(choice, dict) and choice.get("finish_reason"):
                    self._finished = True
            choice = _single_choice(obj) if kind == "chat_completion" else None
            self._top = dict(obj) if choice is not None else None
            self._choice = dict(choice) if choice is not None else None
        return obj

    def _token(self, content: str) -> dict[str, Any]:
        if self._top is None or self._choice is None:
            raise MalformedResponseError(
                f"Malformed stream: frame {self._seen} is a token frame with no chat chunk before it"
            )
        choice = dict(self._choice)
        choice["delta"] = {"content": content}
        out = dict(self._top)
        out["choices"] = [choice]
        return out

    def _inherit(self, obj: dict[str, Any], dropped: list[str]) -> dict[str, Any]:
        full = {k: v for k, v in self._header.items() if k not in dropped}
        full.update(obj)
        self._header = {k: v for k, v in full.items() if k in _HEADER_KEYS}
        return full

    def close(self) -> None:
        if self._done:
            return
        if self._buf:
            raise IncompleteStreamError(
                f"Incomplete stream: body ended inside protobuf frame {self._seen + 1} "
                f"({len(self._buf)} bytes of it arrived)"
            )
        if not self._finished:
            raise IncompleteStreamError(
                f"Incomplete stream: the server closed the stream after {self._seen} frames "
                "without a finish_reason or a done frame"
            )


class ProtobufCodec:
    """The Codec (``llmclient/wire/codec.py``) for ``application/x-protobuf``.

    Answers in JSON (a server that ignored our protobuf, or an error page from a proxy) are
    decoded as JSON, so a fallback costs nothing but the bytes.
    """

    name = "protobuf"
    content_type = PROTOBUF_CONTENT_TYPE
    accept = f"{PROTOBUF_CONTENT_TYPE}, application/json;q=0.5, text/event-stream;q=0.5"

    def __init__(self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        self.max_frame_bytes = max_frame_bytes

    def encode(self, path: str, body: dict[str, Any]) -> bytes:
        return encode_body(request_kind(path), body)

    def decode(self, path: str, data: bytes, content_type: str) -> dict[str, Any]:
        if content_type != PROTOBUF_CONTENT_TYPE and not _is_protobuf(content_type):
            return JSON_CODEC.decode(path, data, content_type)
        _, obj, _ = decode_body(data)
        if obj is None:
            raise MalformedResponseError("Malformed response: a stream end marker as a whole body")
        return obj

    def stream_decoder(self, content_type: str) -> ProtobufStreamDecoder | SSEDecoder:
        if not _is_protobuf(content_type):
            return JSON_CODEC.stream_decoder(content_type)
        return ProtobufStreamDecoder(self.max_frame_bytes)


def _is_protobuf(content_type: str) -> bool:
    return content_type.split(";", 1)[0].strip().lower() in (
        PROTOBUF_CONTENT_TYPE,
        "application/protobuf",  # the IANA name (draft-ietf-dispatch-mime-protobuf)
    )


PROTOBUF_CODEC: Final = ProtobufCodec()


# --------------------------------------------------------------------------- negotiation

@dataclass(frozen=True)
class WireState:
    """What one origin has shown: protobuf (None unknown, True accepts, False refused) and the
    content-codings it reads in request bodies (its ``Accept-Encoding``, RFC 7694), for
    ``llmclient.wire.compression.choose_request_encoding(len(body), state.encodings)``."""

    protobuf: bool | None = None
    encodings: frozenset[str] = frozenset()


@dataclass(frozen=True)
class WireObservation:
    state: WireState
    retry_as_json: bool  # the call failed only because of the wire: send it again as JSON


def choose_wire(mode: Wire, state: WireState) -> Literal["json", "protobuf"]:
    """The wire for the next call to an origin.

    ``protobuf`` is sent as asked until the origin refuses it once; ``auto`` sends JSON until the
    origin has advertised protobuf (``x-llm-wire``/``Accept-Post`` on any response).
    """
    if mode not in ("json", "protobuf", "auto"):
        raise ValueError(f"wire must be 'json', 'protobuf' or 'auto', not {mode!r}")
    if mode == "json" or state.protobuf is False:
        return "json"
    if mode == "protobuf" or state.protobuf:
        return "protobuf"
    return "json"


def accept_header(wire: Literal["json", "protobuf"], stream: bool) -> str:
    if wire == "protobuf":
        return PROTOBUF_CODEC.accept
    return "text/event-stream" if stream else "application/json"


def server_accepts_protobuf(headers: Mapping[str, str]) -> bool:
    """Whether response headers advertise protobuf request bodies (header names lower-case)."""
    wire = headers.get(WIRE_HEADER, "")
    post = headers.get("accept-post", "")
    return "protobuf" in wire.lower() or PROTOBUF_CONTENT_TYPE in post.lower()


def observe_response(
    state: WireState, sent: Literal["json", "protobuf"], status: int, headers: Mapping[str, str]
) -> WireObservation:
    """Update an origin's record from one response (``headers`` with lower-case names).

    415 Unsupported Media Type (RFC 9110, section 15.5.16) to a protobuf body means "never
    again", and so does a 400 in JSON from an origin that never advertised protobuf: it parsed
    our bytes as JSON. Both are retried as JSON at once. A 2xx in JSON to a protobuf body is
    usable as it is, but says the origin ignores protobuf.
    """
    codings = headers.get("accept-encoding")
    if codings is not None:
        found = parse_accept_encoding(codings)
        if found != state.encodings:
            state = replace(state, encodings=found)
    advertised = server_accepts_protobuf(headers)
    answered_pb = _is_protobuf(headers.get("content-type", ""))
    if sent == "protobuf" and not answered_pb:
        if status == 415 or (status == 400 and not advertised and state.protobuf is not True):
            return WireObservation(replace(state, protobuf=False), True)
        if 200 <= status < 300 and not advertised:
            return WireObservation(replace(state, protobuf=False), False)
    if (advertised or answered_pb) and state.protobuf is None:
        return WireObservation(replace(state, protobuf=True), False)
    return WireObservation(state, False)

