"""llmclient's wire formats: the codecs live in this package, and this module is their public
surface, what the reference server, the benchmark tools and any server that wants to speak
llmclient's protobuf import (never the submodules).

* **JSON and SSE** (``llmclient.wire.codec``): :data:`JSON_CODEC` (bodies), :class:`SSEDecoder`
  (streams: ``data:`` events, ``[DONE]``, typed error events), :data:`RESPONSE_END_EVENTS` (how
  a Responses API stream ends).
* **Protobuf** (``llmclient.wire.protobuf``, with its compiled parser ``_pbparse.c``; schema:
  ``llmclient/wire/proto/llmclient.proto``): :data:`PROTOBUF_CONTENT_TYPE`,
  :data:`PROTOBUF_CODEC`, :func:`decode_body` / :func:`encode_body` (requests),
  :func:`encode_response` / :func:`encode_chunk` / :class:`StreamEncoder` (answers and
  length-prefixed streams), :data:`WIRE_HEADER` (how a server says it speaks it),
  :class:`WireState`, :func:`observe_response` and :func:`choose_wire` (what the client
  learned from a response, what it sends next).
* **Compression** (``llmclient.wire.compression``): :func:`compress` / :func:`decompress` (zstd,
  gzip; decompression capped against bombs), :func:`parse_accept_encoding`,
  :func:`choose_request_encoding`, :func:`supported_encodings`, :data:`MIN_COMPRESS_BYTES`,
  :class:`CompressionError` (:class:`DecompressedTooLarge` past the cap).
* :data:`Wire`: the ``wire=`` setting's values (``"json"``, ``"protobuf"``, ``"auto"``), and
  :class:`MalformedResponseError`, what a body that does not decode raises.

The client core imports ``llmclient.wire.codec`` and ``llmclient.wire.compression``, so this
module is loaded by ``import llmclient``; the protobuf names are loaded on first access
(``llmclient.wire.protobuf``), and the protobuf runtime (``google.protobuf``) on the first
protobuf encode or decode. ``import llmclient`` loads neither.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .._errors import MalformedResponseError
from .codec import JSON_CODEC, RESPONSE_END_EVENTS, SSEDecoder, Wire
from .compression import (
    MIN_COMPRESS_BYTES,
    CompressionError,
    DecompressedTooLarge,
    choose_request_encoding,
    compress,
    decompress,
    parse_accept_encoding,
    supported_encodings,
)

if TYPE_CHECKING:
    from .protobuf import (
        PROTOBUF_CODEC,
        PROTOBUF_CONTENT_TYPE,
        WIRE_HEADER,
        StreamEncoder,
        WireState,
        choose_wire,
        decode_body,
        encode_body,
        encode_chunk,
        encode_response,
        observe_response,
    )

__all__ = [
    "JSON_CODEC",
    "MIN_COMPRESS_BYTES",
    "PROTOBUF_CODEC",
    "PROTOBUF_CONTENT_TYPE",
    "RESPONSE_END_EVENTS",
    "WIRE_HEADER",
    "CompressionError",
    "DecompressedTooLarge",
    "MalformedResponseError",
    "SSEDecoder",
    "StreamEncoder",
    "Wire",
    "WireState",
    "choose_request_encoding",
    "choose_wire",
    "compress",
    "decode_body",
    "decompress",
    "encode_body",
    "encode_chunk",
    "encode_response",
    "observe_response",
    "parse_accept_encoding",
    "supported_encodings",
]


# The protobuf names, loaded from llmclient.wire.protobuf on first access (PEP 562): the client
# core imports this package for the JSON codec and compression, and must not load protobuf's.
_PROTOBUF_NAMES = frozenset({
    "PROTOBUF_CODEC",
    "PROTOBUF_CONTENT_TYPE",
    "WIRE_HEADER",
    "StreamEncoder",
    "WireState",
    "choose_wire",
    "decode_body",
    "encode_body",
    "encode_chunk",
    "encode_response",
    "observe_response",
})


def __getattr__(name: str) -> Any:
    if name not in _PROTOBUF_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.protobuf"), name)
    globals()[name] = value  # found by ordinary lookup from now on
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | _PROTOBUF_NAMES)
