"""Our HPACK decoder's Huffman state machine (llmclient/transport/http2/hpack.py) against the
``hpack`` package's encoder and decoder, and its memory: a fixed table, not one that grows with
each new header value a long-lived process meets (issue 46's soak)."""

from __future__ import annotations

import random
import tracemalloc

import hpack
import pytest
from hpack.huffman import HuffmanEncoder
from hpack.huffman_constants import REQUEST_CODES, REQUEST_CODES_LENGTH
from hpack.huffman_table import decode_huffman
from hypothesis import given, settings
from hypothesis import strategies as st

from llmclient.transport.http2.hpack import Decoder, HPACKError, _huffman_decode

_ENCODER = HuffmanEncoder(REQUEST_CODES, REQUEST_CODES_LENGTH)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_huffman_strings_decode_as_hpack_encodes_them(value: bytes) -> None:
    assert _huffman_decode(_ENCODER.encode(value)) == value


@settings(max_examples=300, deadline=None)
@given(st.binary(min_size=1, max_size=40))
def test_arbitrary_bytes_decode_or_fail_as_hpack_decides(data: bytes) -> None:
    try:
        expected: bytes | None = decode_huffman(data)
    except hpack.HPACKDecodingError:
        expected = None
    if expected is None:
        with pytest.raises(HPACKError):
            _huffman_decode(data)
    else:
        assert _huffman_decode(data) == expected


def test_header_blocks_from_hpacks_encoder_decode_whole() -> None:
    headers = [(b":status", b"200"), (b"date", b"Mon, 07 Dec 2026 11:22:33 GMT"),
               (b"x-request-id", b"9f86d081884c7d659a2feaa0c55ad015"), (b"server-timing", b"queue;dur=0.12")]
    block = hpack.Encoder().encode(headers, huffman=True)
    assert Decoder().decode(block) == headers


def test_decoding_ever_new_values_does_not_grow_memory() -> None:
    rng = random.Random(46)

    def values(n: int) -> list[bytes]:
        # printable ASCII, as header values are: every (state, byte) step is met sooner or later
        return [_ENCODER.encode(bytes(rng.randrange(32, 127) for _ in range(40))) for _ in range(n)]

    warm, fresh = values(2000), values(20000)
    for v in warm:
        _huffman_decode(v)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for v in fresh:
            _huffman_decode(v)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    # A memo of tuples held ~150 bytes per new (state, byte) step met: megabytes here.
    assert grown < 64 * 1024, f"decoding 20,000 new values kept {grown} bytes"
