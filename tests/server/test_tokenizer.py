"""The project tokenizer: counts, ids, round trips, streaming detokenization."""

from __future__ import annotations

import random

import pytest

from benchmarks.server import tokenizer
from benchmarks.server.tokenizer import (
    VOCAB,
    VOCAB_SIZE,
    WORD_IDS,
    Detokenizer,
    count_tokens,
    decode,
    detokenize,
    encode,
    tokenize,
)


def test_all_names_exist_once() -> None:
    assert len(set(tokenizer.__all__)) == len(tokenizer.__all__)
    for name in tokenizer.__all__:
        assert hasattr(tokenizer, name)


def test_vocabulary_is_unique_common_words_within_the_id_space() -> None:
    assert len(set(VOCAB)) == len(VOCAB)
    assert 1000 <= len(WORD_IDS) <= 2000
    assert len(VOCAB) < VOCAB_SIZE
    assert all(VOCAB[i].isalpha() and VOCAB[i].islower() for i in WORD_IDS)
    assert VOCAB[WORD_IDS[0]] == "the"


def test_tokens_are_words_and_single_punctuation() -> None:
    assert tokenize("Hello, world! It's 42.") == ["Hello", ",", "world", "!", "It", "'", "s", "42", "."]
    assert tokenize("   \n\t") == []


def test_count_matches_encode_length() -> None:
    text = "The quick brown fox jumps over the lazy dog; 3 times (at least)!"
    assert count_tokens(text) == len(encode(text)) == len(tokenize(text)) == 17


def test_known_words_map_to_their_index_case_insensitively() -> None:
    assert encode("the") == [VOCAB.index("the")]
    assert encode("The THE the") == [VOCAB.index("the")] * 3


def test_unknown_tokens_hash_stably_into_the_upper_range() -> None:
    ids = encode("zyzzyva Xq7 naïve")
    assert all(len(VOCAB) <= i < VOCAB_SIZE for i in ids)
    assert ids == encode("zyzzyva Xq7 naïve")
    # Pinned: the hash (BLAKE2b, 8 bytes) must not drift between releases or processes.
    assert ids[0] == 23962


def test_vocabulary_text_round_trips() -> None:
    text = "The water is cold, but the sun is warm. Can you see the boat?"
    assert decode(encode(text)) == text


def test_encode_of_decode_is_identity_for_vocabulary_ids() -> None:
    rng = random.Random(7)
    ids = [rng.randrange(len(VOCAB)) for _ in range(2000)]
    # Adjacent punctuation may merge differently only if spacing lost information; it must not.
    assert encode(decode(ids)) == ids


def test_hashed_ids_decode_to_vocabulary_words() -> None:
    hashed = len(VOCAB) + 5
    assert decode([hashed]).lower() == VOCAB[hashed % len(VOCAB)]


def test_punctuation_attaches_and_sentences_capitalise() -> None:
    ids = encode("the boy ran . he fell , then ( slowly ) rose ! don ' t stop")
    assert decode(ids) == "The boy ran. He fell, then (slowly) rose! Don't stop"


@pytest.mark.parametrize("split", [1, 2, 3, 7])
def test_streamed_detokenization_equals_whole(split: int) -> None:
    rng = random.Random(split)
    ids = [rng.randrange(len(VOCAB)) for _ in range(300)]
    detok = Detokenizer()
    pieces = [detok.feed(ids[i:i + split]) for i in range(0, len(ids), split)]
    assert "".join(pieces) == decode(ids) == detokenize(ids)


def test_out_of_range_ids_are_rejected_by_name() -> None:
    with pytest.raises(ValueError, match="token id 32000"):
        decode([VOCAB_SIZE])
    with pytest.raises(ValueError, match="token id -1"):
        decode([-1])
