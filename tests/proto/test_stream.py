"""Length-delimited protobuf stream frames: round trips, header inheritance, bad input."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from llmclient._errors import IncompleteStreamError, MalformedResponseError
from llmclient.wire.codec import SSEDecoder
from llmclient.wire.protobuf import (
    PROTOBUF_CODEC,
    PROTOBUF_CONTENT_TYPE,
    ProtobufStreamDecoder,
    StreamEncoder,
    encode_body,
    frame,
)

from . import samples as s


def _encode(chunks: list[dict[str, Any]], done: bool = True) -> bytes:
    enc = StreamEncoder()
    return b"".join(enc.encode(c) for c in chunks) + (enc.done() if done else b"")


def _decode(data: bytes, step: int | None = None, max_frame: int | None = None) -> list[dict[str, Any]]:
    dec = ProtobufStreamDecoder(max_frame) if max_frame else ProtobufStreamDecoder()
    out: list[dict[str, Any]] = []
    step = step or len(data) or 1
    for i in range(0, len(data), step):
        out.extend(dec.feed(data[i : i + step]))
    dec.close()
    return out


def _sse(chunks: list[dict[str, Any]]) -> bytes:
    return b"".join(b"data: " + orjson.dumps(c) + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"


@pytest.mark.parametrize("step", [None, 1, 3, 64])
def test_chunks_decode_to_what_the_sse_path_gives(step: int | None) -> None:
    chunks = s.chunks(["Hello", ",", " wor", "ld", " \u00e9\u4e2d\U0001f600", ""])
    sse = SSEDecoder()
    expected = sse.feed(_sse(chunks))
    assert _decode(_encode(chunks), step) == expected == chunks


def test_the_codec_picks_the_decoder_by_content_type() -> None:
    assert isinstance(PROTOBUF_CODEC.stream_decoder(PROTOBUF_CONTENT_TYPE), ProtobufStreamDecoder)
    assert isinstance(PROTOBUF_CODEC.stream_decoder("text/event-stream; charset=utf-8"), SSEDecoder)


def test_streams_are_a_small_fraction_of_sse_bytes() -> None:
    chunks = s.chunks([f" w{i}" for i in range(62)], usage=False)
    assert len(_encode(chunks)) * 4 < len(_sse(chunks))


def test_header_changes_and_drops_are_carried() -> None:
    base = s.chunks(["a", "b"], usage=False)
    chunks = [
        base[0],
        {**base[1], "id": "other", "service_tier": "flex"},
        {k: v for k, v in base[2].items() if k != "system_fingerprint"},
        {**base[3], "created": 6},
    ]
    assert _decode(_encode(chunks)) == chunks


def test_multi_choice_and_text_completion_streams() -> None:
    head = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    chat = [{**head, "choices": [{"index": i % 2, "delta": {"content": str(i)}, "logprobs": None,
                                  "finish_reason": None}]} for i in range(6)]
    chat.append({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    assert _decode(_encode(chat)) == chat
    text = [{"id": "t", "object": "text_completion", "created": 1, "model": "m",
             "choices": [{"text": w, "index": 0, "logprobs": None, "finish_reason": f}]}
            for w, f in (("a", None), ("b", None), ("", "length"))]
    assert _decode(_encode(text)) == text


def test_an_error_frame_is_returned_like_an_sse_error_event() -> None:
    chunks = [*s.chunks(["a"], usage=False)[:2], s.ERRORS[0]]
    dec = ProtobufStreamDecoder()
    out = dec.feed(_encode(chunks, done=False))
    assert out[-1] == s.ERRORS[0]


def test_decoded_chunks_do_not_share_state_with_the_next_ones() -> None:
    chunks = s.chunks(["a", "b", "c"], usage=False)
    dec = ProtobufStreamDecoder()
    data = _encode(chunks)
    first = dec.feed(data[:40])
    for c in first:  # a caller that mutates what it got must not change later chunks
        c["choices"][0]["delta"]["content"] = "MUTATED"
        c["choices"][0].pop("logprobs", None)
        c.pop("model", None)
    rest = dec.feed(data[40:])
    assert (first + rest)[len(first):] == chunks[len(first):]


def test_stream_ended_without_done_or_finish_is_incomplete() -> None:
    chunks = s.chunks(["a", "b"], usage=False)[:2]
    with pytest.raises(IncompleteStreamError, match="without a finish_reason"):
        _decode(_encode(chunks, done=False))


def test_finish_reason_without_done_frame_is_complete() -> None:
    chunks = s.chunks(["a"], usage=False)
    assert _decode(_encode(chunks, done=False)) == chunks


@pytest.mark.parametrize("cut", [1, 2, 5])
def test_truncated_frame_at_close_is_incomplete(cut: int) -> None:
    data = _encode(s.chunks(["hello", "world"]))
    first_len = data[0]
    with pytest.raises(IncompleteStreamError, match="inside protobuf frame"):
        _decode(data[: 1 + first_len + cut])


def test_oversize_frame_is_refused_before_it_is_buffered() -> None:
    dec = ProtobufStreamDecoder(max_frame_bytes=1000)
    with pytest.raises(MalformedResponseError, match="over the 1000-byte frame limit"):
        dec.feed(frame(b"x" * 1001)[:4])  # only the length prefix has arrived


def test_over_long_length_prefix_is_refused() -> None:
    with pytest.raises(MalformedResponseError, match=r"over-long length prefix|frame limit"):
        ProtobufStreamDecoder().feed(b"\xff\xff\xff\xff\xff\xff\x01")


@pytest.mark.parametrize(
    "payload",
    [b"\xff\xff", b"", b"\x6a\x03\x0a\x05ab", b"\x6a\x03\x0a\x01\xff", b"\x22\x01\x0a"],
    ids=["garbage", "no_kind", "token_truncated", "token_bad_utf8", "truncated_message"],
)
def test_bad_frames_raise_a_decode_error_with_the_frame_number(payload: bytes) -> None:
    good = _encode(s.chunks(["a"], usage=False), done=False)
    with pytest.raises(MalformedResponseError, match=r"frame \d+"):
        ProtobufStreamDecoder().feed(good + frame(payload))


def test_a_token_frame_needs_a_chunk_before_it() -> None:
    with pytest.raises(MalformedResponseError, match="no chat chunk before it"):
        ProtobufStreamDecoder().feed(frame(b"\x6a\x03\x0a\x01a"))


def test_nothing_is_decoded_after_the_done_frame() -> None:
    chunks = s.chunks(["a"], usage=False)
    dec = ProtobufStreamDecoder()
    out = dec.feed(_encode(chunks) + frame(encode_body("json", {"late": 1})))
    assert out == chunks and dec.done
    assert dec.feed(b"\xff\xff") == []
    dec.close()


def test_self_contained_frames_inherit_nothing() -> None:
    from llmclient.wire.protobuf import encode_chunk

    base = s.chunks(["a", "b"], usage=False)
    chunks = [base[0], {k: v for k, v in base[1].items() if k != "model"}, base[2], base[3]]
    data = b"".join(encode_chunk(c) for c in chunks) + StreamEncoder().done()
    assert _decode(data) == chunks
