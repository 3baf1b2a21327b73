"""Content-type negotiation: the one place the server turns bytes into dicts and back.

Requests and responses are plain dicts in OpenAI's JSON shape whichever wire carries them.
JSON (orjson) and SSE, and protobuf (``application/x-protobuf``, llmclient's wire schema in
``llmclient/wire/proto/llmclient.proto``) are served; nothing else in the server looks at
content types. A response is protobuf when the request's ``Accept`` ranks protobuf at least as
high as JSON/SSE. Every response advertises what we read (``ADVERTISED_HEADERS``), so clients
in ``wire="auto"`` switch to protobuf after their first call.
"""

from __future__ import annotations

from typing import Any

import orjson

from llmclient.wire import (
    PROTOBUF_CONTENT_TYPE,
    CompressionError,
    DecompressedTooLarge,
    MalformedResponseError,
    StreamEncoder,
    choose_request_encoding,
    decode_body,
    decompress,
    encode_chunk,
    parse_accept_encoding,
    supported_encodings,
)
from llmclient.wire import encode_response as encode_protobuf_response

from ._http import BodyTooLarge

__all__ = [
    "ADVERTISED_HEADERS",
    "JSON_TYPE",
    "PROTOBUF_TYPE",
    "SSE_TYPE",
    "StreamWriter",
    "UnsupportedMediaType",
    "WireDecodeError",
    "decode_request",
    "encode_response",
    "encode_stream_chunk",
    "response_encoding",
    "stream_content_type",
    "stream_done",
    "stream_writer",
    "wants_protobuf",
]

JSON_TYPE = "application/json"
SSE_TYPE = "text/event-stream"
PROTOBUF_TYPE = PROTOBUF_CONTENT_TYPE
_PROTOBUF_TYPES = frozenset({"application/x-protobuf", "application/protobuf"})
_JSON_TYPES = frozenset({JSON_TYPE, SSE_TYPE, "*/*", "application/*"})
# On every response: the bodies we read. ``x-llm-wire`` is llmclient's capability header;
# ``Accept-Post`` (W3C LDP 1.0, section 7.1) and ``Accept-Encoding`` in a response (RFC 7694,
# section 3) say the same in standard terms.
ADVERTISED_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"x-llm-wire", b"json, protobuf"),
    (b"accept-post", f"{JSON_TYPE}, {PROTOBUF_TYPE}".encode()),
    (b"accept-encoding", ", ".join(supported_encodings()).encode()),
)


class UnsupportedMediaType(ValueError):
    """The request's Content-Type is not one the server decodes (HTTP 415)."""


class WireDecodeError(ValueError):
    """The body does not parse under its Content-Type (HTTP 400)."""


def _media_type(header: str | None) -> str:
    return (header or "").split(";", 1)[0].strip().lower()


def wants_protobuf(accept: str | None) -> bool:
    """Whether ``Accept`` ranks protobuf at least as high as JSON (RFC 9110, section 12.5.1)."""
    best_pb = best_json = 0.0
    for item in (accept or "").split(","):
        media, _, params = item.partition(";")
        media = media.strip().lower()
        q = 1.0
        for param in params.split(";"):
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        if media in _PROTOBUF_TYPES:
            best_pb = max(best_pb, q)
        elif media in _JSON_TYPES or media.endswith("+json"):
            best_json = max(best_json, q)
    return best_pb > 0 and best_pb >= best_json


def decode_request(body: bytes, content_type: str | None,
                   content_encoding: str | None = None,
                   max_size: int | None = None) -> dict[str, Any]:
    """Decode a request body. A missing Content-Type is read as JSON, as OpenAI does.

    ``content_encoding``: the request's Content-Encoding (zstd, gzip), undone first; a coding
    we do not read is a 415 (RFC 9110, section 15.5.16). ``max_size`` caps the decompressed
    body (the server's body limit, so a small compressed body cannot expand past it).
    """
    if content_encoding and content_encoding.strip().lower() != "identity":
        if content_encoding.strip().lower() not in supported_encodings():
            raise UnsupportedMediaType(
                f"unsupported Content-Encoding {content_encoding!r}; send one of {supported_encodings()}")
        try:
            body = (decompress(body, content_encoding) if max_size is None
                    else decompress(body, content_encoding, max_size))
        except DecompressedTooLarge as exc:  # past the body limit once decompressed: 413
            raise BodyTooLarge(f"request body: {exc}") from None
        except CompressionError as exc:
            raise WireDecodeError(f"request body: {exc}") from None
    media = _media_type(content_type)
    if media in _PROTOBUF_TYPES:
        return _decode_protobuf(body)
    if media not in ("", JSON_TYPE) and not media.endswith("+json"):
        raise UnsupportedMediaType(
            f"unsupported Content-Type {media!r}; send {JSON_TYPE} or {PROTOBUF_TYPE}")
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise WireDecodeError(f"request body is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise WireDecodeError("request body must be a JSON object")
    return value


def _decode_protobuf(body: bytes) -> dict[str, Any]:
    try:
        kind, value, _ = decode_body(body)
    except MalformedResponseError as exc:
        raise WireDecodeError(f"request body: {exc.message}") from None
    if value is None or kind == "token":
        raise WireDecodeError(f"request body: a protobuf {kind!r} stream frame is not a request")
    return value


def encode_response(obj: dict[str, Any], accept: str | None) -> tuple[bytes, str]:
    """Encode a non-streamed response body; returns (bytes, content type)."""
    if wants_protobuf(accept):
        return encode_protobuf_response(obj), PROTOBUF_TYPE
    return orjson.dumps(obj), JSON_TYPE


def encode_stream_chunk(chunk: dict[str, Any], accept: str | None) -> bytes:
    """One server-sent event carrying a chunk (WHATWG HTML, server-sent events).

    With protobuf: one self-contained frame (no header inheritance: see ``stream_writer``).
    """
    if wants_protobuf(accept):
        return encode_chunk(chunk)
    return b"data: " + orjson.dumps(chunk) + b"\n\n"


def stream_done(accept: str | None) -> bytes:
    """The stream terminator OpenAI sends after the last chunk."""
    if wants_protobuf(accept):
        return StreamEncoder().done()
    return b"data: [DONE]\n\n"


def stream_content_type(accept: str | None) -> str:
    return PROTOBUF_TYPE if wants_protobuf(accept) else SSE_TYPE


class StreamWriter:
    """One response stream: chunks in, body bytes out, in the wire the client asked for.

    Protobuf frames carry only what changed since the previous chunk (usually just the token),
    which is why a stream needs this stateful writer rather than ``encode_stream_chunk``.
    """

    __slots__ = ("_pb", "content_type")

    def __init__(self, accept: str | None) -> None:
        self._pb = StreamEncoder() if wants_protobuf(accept) else None
        self.content_type = PROTOBUF_TYPE if self._pb is not None else SSE_TYPE

    def chunk(self, chunk: dict[str, Any]) -> bytes:
        if self._pb is not None:
            return self._pb.encode(chunk)
        return b"data: " + orjson.dumps(chunk) + b"\n\n"

    def comment(self, text: bytes) -> bytes:
        """An SSE comment (ignored by clients); protobuf frames have no comments: nothing."""
        return b"" if self._pb is not None else b": " + text + b"\n\n"

    def done(self) -> bytes:
        if self._pb is not None:
            return self._pb.done()
        return b"data: [DONE]\n\n"


def stream_writer(accept: str | None) -> StreamWriter:
    return StreamWriter(accept)


def response_encoding(size: int, accept_encoding: str | None) -> str | None:
    """The coding for a response body of ``size`` bytes to a request that sent
    ``accept_encoding``: the same rule as the client's for request bodies (the best coding both
    sides know, from MIN_COMPRESS_BYTES up), or None to send it plain."""
    return choose_request_encoding(size, parse_accept_encoding(accept_encoding))
