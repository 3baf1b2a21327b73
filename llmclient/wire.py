"""llmclient's wire formats, as a public surface: what the reference server, the benchmark tools
and any server that wants to speak llmclient's protobuf import (never the private modules).

* **JSON and SSE**: :data:`JSON_CODEC` (bodies), :class:`SSEDecoder` (streams: ``data:``
  events, ``[DONE]``, typed error events), :data:`RESPONSE_END_EVENTS` (how a Responses API
  stream ends).
* **Protobuf** (schema: ``llmclient/proto/llmclient.proto``): :data:`PROTOBUF_CONTENT_TYPE`,
  :data:`PROTOBUF_CODEC`, :func:`decode_body` / :func:`encode_body` (requests),
  :func:`encode_response` / :func:`encode_chunk` / :class:`StreamEncoder` (answers and
  length-prefixed streams), :data:`WIRE_HEADER` (how a server says it speaks it),
  :class:`WireState` and :func:`choose_wire` (what the client learned, what it sends next).
* **Compression**: :func:`compress` / :func:`decompress` (zstd, gzip; decompression capped
  against bombs), :func:`parse_accept_encoding`, :func:`choose_request_encoding`,
  :func:`supported_encodings`, :data:`MIN_COMPRESS_BYTES`, :class:`CompressionError`.
* :data:`Wire`: the ``wire=`` setting's values (``"json"``, ``"protobuf"``, ``"auto"``), and
  :class:`MalformedResponseError`, what a body that does not decode raises.

``import llmclient.wire`` loads the protobuf runtime; ``import llmclient`` does not.
"""

from __future__ import annotations

from ._call import Wire
from ._codec import JSON_CODEC, RESPONSE_END_EVENTS, SSEDecoder
from ._compression import (
    MIN_COMPRESS_BYTES,
    CompressionError,
    choose_request_encoding,
    compress,
    decompress,
    parse_accept_encoding,
    supported_encodings,
)
from ._errors import MalformedResponseError
from ._protobuf import (
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
)

__all__ = [
    "JSON_CODEC",
    "MIN_COMPRESS_BYTES",
    "PROTOBUF_CODEC",
    "PROTOBUF_CONTENT_TYPE",
    "RESPONSE_END_EVENTS",
    "WIRE_HEADER",
    "CompressionError",
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
    "parse_accept_encoding",
    "supported_encodings",
]
