"""What the server's answer becomes (no I/O): a whole body decoded (its content-coding undone
under a cap), a stream's decoder chosen, the face's errors stamped with the call's facts. The
decisions of the decode layer (``_async/decode.py``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from .._errors import APIError, MalformedResponseError
from ..wire.codec import WholeJsonDecoder, has_token
from ..wire.compression import CompressionError, decompress

if TYPE_CHECKING:
    import httpx

    from ..pipeline.call import Call
    from ..wire.codec import Codec, StreamDecoder

__all__ = ["MAX_RESPONSE_BYTES", "decode_body", "finish", "first_token_probe", "make_object", "response_coding", "stamp",
           "stream_decoder"]

# A whole response body larger than this once decompressed is refused (a compression bomb from
# a broken or hostile server; 4x the largest OpenAI answer we know of, a 2048 x 3072 embedding
# batch as JSON).
MAX_RESPONSE_BYTES: Final = 320 * 1024 * 1024


def response_coding(response: httpx.Response) -> str | None:
    """The response's Content-Encoding when it is one we undo ourselves (under a cap)."""
    value = response.headers.get("content-encoding")
    if value is None:
        return None
    coding = value.strip().lower()
    return coding if coding in ("zstd", "gzip") else None


def stamp(err: APIError, call: Call, response: httpx.Response) -> None:
    """The call's facts on an error found in its answer."""
    err.trace_id = call.trace.trace_id
    err.request_id = response.headers.get("x-request-id")
    err.timings = call.record
    err.request = response.request


def decode_body(call: Call, response: httpx.Response, raw: bytes, codec: Codec) -> dict[str, Any]:
    try:
        coding = response_coding(response)
        if coding is not None:
            try:
                raw = decompress(raw, coding, MAX_RESPONSE_BYTES)
            except CompressionError as exc:
                raise MalformedResponseError(f"Malformed response body: {exc}") from None
            response._content = raw  # what httpx's read() leaves: RawResponse.content works
        return codec.decode(call.path, raw, response.headers.get("content-type", ""))
    except APIError as err:
        stamp(err, call, response)
        raise


def make_object(call: Call, make: Callable[[dict[str, Any]], Any], value: dict[str, Any],
                response: httpx.Response) -> Any:
    """``make(value)``: the response object; an error it finds in the answer (a malformed
    embedding) carries the call's trace id like any other."""
    try:
        return make(value)
    except APIError as err:
        stamp(err, call, response)
        raise


def stream_decoder(call: Call, response: httpx.Response, codec: Codec) -> StreamDecoder:
    content_type = response.headers.get("content-type", "")
    if content_type.startswith("application/json"):
        # The whole answer in one JSON object (a server that ignored ``stream``, or a mock):
        # a stream of one chunk, as that answer would have streamed.
        return WholeJsonDecoder(call.path)
    try:
        return codec.stream_decoder(content_type)
    except APIError as err:
        err.trace_id = call.trace.trace_id
        err.timings = call.record
        raise


def first_token_probe(response: httpx.Response, codec: Codec) -> Callable[[bytes], bool]:
    """``enough(piece)`` for read_until: True once the body so far holds a chunk with a token
    (decoded by a throwaway decoder; the stream's own decoder reads the same bytes again), or
    is not a stream we can read (the stream's own decoder then reports it)."""
    try:
        decoder = codec.stream_decoder(response.headers.get("content-type", ""))
    except Exception:
        return lambda piece: True

    def enough(piece: bytes) -> bool:
        try:
            return any(has_token(obj) for obj in decoder.feed(piece)) or decoder.done
        except Exception:
            return True

    return enough


def finish(call: Call, obj: Any, response: httpx.Response | None) -> Any:
    """The call's facts on its answer, outside its JSON data: ``trace_id``, ``timings`` (the
    CallRecord) and ``_request_id`` (the server's X-Request-ID)."""
    d = getattr(obj, "__dict__", None)
    if d is not None:
        d["trace_id"] = call.trace.trace_id
        d["timings"] = call.record
        d["_request_id"] = response.headers.get("x-request-id") if response is not None else None
    return obj
