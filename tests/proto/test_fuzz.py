"""Fuzzing the stream frame decoder and the body decoder (hypothesis), plus a saved corpus.

The only exceptions allowed out of the decoders are the documented decode errors; every call
returns (the decoder never waits for more input inside ``feed``). The corpus under corpus/
holds inputs that once mattered (truncations, over-long varints, bad UTF-8 in a token frame,
frames after the end); regenerate it with ``python -m tests.proto.test_fuzz``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmclient._errors import IncompleteStreamError, MalformedResponseError
from llmclient.wire.protobuf import (
    PROTOBUF_CODEC,
    PROTOBUF_CONTENT_TYPE,
    ProtobufStreamDecoder,
    StreamEncoder,
    frame,
)

from . import samples as s

CORPUS = Path(__file__).with_name("corpus")
ALLOWED = (MalformedResponseError, IncompleteStreamError)
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _valid_stream() -> bytes:
    enc = StreamEncoder()
    chunks = s.chunks(["Hi", " there", "!"])
    return b"".join(enc.encode(c) for c in chunks) + enc.done()


def _run(data: bytes, cuts: list[int]) -> None:
    dec = ProtobufStreamDecoder(max_frame_bytes=4096)
    try:
        start = 0
        for cut in sorted(c % (len(data) + 1) for c in cuts):
            dec.feed(data[start:cut])
            start = max(start, cut)
        dec.feed(data[start:])
        dec.close()
    except ALLOWED:
        pass


def _corpus() -> list[Path]:
    return sorted(CORPUS.glob("*.bin"))


@pytest.mark.parametrize("path", _corpus(), ids=lambda p: p.stem)
def test_corpus_inputs_decode_or_fail_cleanly(path: Path) -> None:
    _run(path.read_bytes(), [1, 7, 19])


def test_corpus_is_present() -> None:
    assert len(_corpus()) >= 8


@FUZZ
@given(st.binary(max_size=512), st.lists(st.integers(min_value=0, max_value=600), max_size=4))
def test_random_bytes_never_escape_as_other_errors(data: bytes, cuts: list[int]) -> None:
    _run(data, cuts)


@FUZZ
@given(
    st.lists(st.tuples(st.integers(min_value=0), st.integers(min_value=0, max_value=255)), max_size=6),
    st.integers(min_value=0),
    st.lists(st.integers(min_value=0, max_value=600), max_size=3),
)
def test_mutated_valid_streams_never_escape_as_other_errors(
    flips: list[tuple[int, int]], cut: int, cuts: list[int]
) -> None:
    data = bytearray(_valid_stream())
    for pos, value in flips:
        data[pos % len(data)] = value
    _run(bytes(data[: len(data) - cut % 8]), cuts)


@FUZZ
@given(st.binary(max_size=256))
def test_random_bodies_never_escape_as_other_errors(data: bytes) -> None:
    try:
        PROTOBUF_CODEC.decode("/v1/chat/completions", data, PROTOBUF_CONTENT_TYPE)
    except ALLOWED:
        pass


def _write_corpus() -> None:
    valid = _valid_stream()
    cases = {
        "valid_stream": valid,
        "truncated_mid_frame": valid[: len(valid) // 2],
        "truncated_in_prefix": b"\x80",
        "overlong_varint": b"\xff" * 11,
        "oversize_frame": frame(b"\x00" * 5000)[:3],
        "token_bad_utf8": valid[: valid[0] + 1] + frame(b"\x6a\x03\x0a\x01\xff"),
        "token_first": frame(b"\x6a\x03\x0a\x01a"),
        "empty_frame": b"\x00",
        "after_done": valid + b"\xff\xff\xff",
        "json_kind_not_object": frame(b"\x5a\x02[]"),
        "extra_not_object": frame(b"\x22\x04\xa2\x06\x01\x31"),
        "nulls_unknown_number": frame(b"\x22\x02\x7a\x00\x22\x03\x7a\x01\x63"),
    }
    CORPUS.mkdir(exist_ok=True)
    for name, data in cases.items():
        (CORPUS / f"{name}.bin").write_bytes(data)


if __name__ == "__main__":
    _write_corpus()
