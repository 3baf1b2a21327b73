"""Body compression: when to compress, and (de)compressing safely."""

from __future__ import annotations

import pytest

from llmclient.wire.compression import (
    MIN_COMPRESS_BYTES,
    CompressionError,
    accept_encoding,
    choose_request_encoding,
    compress,
    decompress,
    parse_accept_encoding,
    supported_encodings,
)

TEXT = b'{"role":"user","content":"' + b"the quick brown fox jumps over the lazy dog " * 200 + b'"}'


def test_small_bodies_and_silent_origins_go_plain() -> None:
    assert choose_request_encoding(MIN_COMPRESS_BYTES - 1, {"zstd", "gzip"}) is None
    assert choose_request_encoding(100_000, frozenset()) is None
    assert choose_request_encoding(100_000, {"br"}) is None


def test_the_best_coding_the_origin_reads_is_chosen() -> None:
    assert choose_request_encoding(MIN_COMPRESS_BYTES, {"gzip"}) == "gzip"
    best = supported_encodings()[0]
    assert choose_request_encoding(50_000, {"gzip", "zstd"}) == best


@pytest.mark.parametrize(
    ("header", "codings"),
    [
        ("zstd, gzip", {"zstd", "gzip"}),
        ("gzip;q=0.5, zstd;q=0, br", {"gzip", "br"}),
        ("GZIP ; q=1.0 , *", {"gzip"}),
        ("identity;q=bad", set()),
        ("", set()),
        (None, set()),
    ],
)
def test_parse_accept_encoding(header: str | None, codings: set[str]) -> None:
    assert parse_accept_encoding(header) == codings


def test_we_advertise_what_we_can_read() -> None:
    assert set(parse_accept_encoding(accept_encoding())) == set(supported_encodings())


@pytest.mark.parametrize("coding", supported_encodings())
def test_round_trip_and_it_pays(coding: str) -> None:
    packed = compress(TEXT, coding)
    assert len(packed) * 4 < len(TEXT)
    assert decompress(packed, coding) == TEXT
    assert decompress(packed, coding.upper()) == TEXT


@pytest.mark.parametrize("coding", supported_encodings())
def test_bad_input_is_a_clear_error(coding: str) -> None:
    packed = compress(TEXT, coding)
    with pytest.raises(CompressionError, match="truncated"):
        decompress(packed[:-6], coding)
    with pytest.raises(CompressionError, match="corrupt"):
        decompress(b"definitely not compressed", coding)
    with pytest.raises(CompressionError, match="more than 100 bytes"):
        decompress(packed, coding, max_size=100)


def test_identity_and_unknown_codings() -> None:
    assert decompress(b"abc", "identity") == b"abc"
    with pytest.raises(CompressionError, match="'br'"):
        decompress(b"abc", "br")
    with pytest.raises(CompressionError, match="'br'"):
        compress(b"abc", "br")
