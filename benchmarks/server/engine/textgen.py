"""Readable, reproducible output tokens for the simulated engine (pure; no I/O, no clock).

A request's output is a function of its *sample key*: greedy requests (temperature 0) and seeded
requests get a key derived from what they asked for, so the same request gives the same text
(what response caching and prefetch checks rely on); unseeded sampling gets a fresh random key.
From the key come the answer's natural length (lognormal, like real chat answers) and a stream
of vocabulary words in sentences with occasional commas, so detokenized text reads as words.
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import math
import random
import struct
from array import array

from ..tokenizer import VOCAB, WORD_IDS
from .base import EngineRequest

__all__ = ["TextGen", "sample_key"]

_PUNCT = {p: VOCAB.index(p) for p in (".", ",", "?", "!")}
_WORDS: tuple[int, ...] = tuple(WORD_IDS)
# Zipf-like weights: the vocabulary is roughly in frequency order, so early words come up more.
_CUM_WEIGHTS: tuple[float, ...] = tuple(
    itertools.accumulate(1.0 / (rank + 10) for rank in range(len(_WORDS))))
_TOTAL_WEIGHT = _CUM_WEIGHTS[-1]


def sample_key(req: EngineRequest) -> int | None:
    """The deterministic sample key of ``req``, or None when it asks for a fresh sample.

    Greedy decoding ignores seed and ``n_index`` (argmax is argmax: all ``n`` choices agree, as on
    a real server); seeded sampling varies with the seed, temperature and choice index.
    """
    greedy = req.temperature == 0
    if not greedy and req.seed is None:
        return None
    h = hashlib.blake2b(digest_size=8)
    h.update(array("q", req.prompt_token_ids).tobytes())
    h.update(req.image_digest.encode())
    h.update(struct.pack("<q", req.image_tokens))
    if not greedy:
        h.update(struct.pack("<qqd", req.seed or 0, req.n_index, req.temperature))
    return int.from_bytes(h.digest(), "big")


class TextGen:
    """Output tokens for one sequence: ``natural_length`` and ``next_token()``.

    Deterministic in ``key``; the preempt-and-recompute path keeps already generated tokens, so
    a preempted sequence still produces exactly the same text.
    """

    __slots__ = ("_left_in_sentence", "_rng", "_since_comma", "natural_length")

    def __init__(self, key: int, median_len: float, sigma: float) -> None:
        self._rng = random.Random(key)
        mu = math.log(median_len)
        self.natural_length = max(1, round(self._rng.lognormvariate(mu, sigma)))
        self._left_in_sentence = self._sentence_length()
        self._since_comma = 0

    def _sentence_length(self) -> int:
        return self._rng.randint(5, 18)

    def next_token(self) -> int:
        rng = self._rng
        if self._left_in_sentence == 0:
            self._left_in_sentence = self._sentence_length()
            self._since_comma = 0
            r = rng.random()
            return _PUNCT["." if r < 0.85 else "?" if r < 0.95 else "!"]
        if self._since_comma >= 4 and self._left_in_sentence > 2 and rng.random() < 0.12:
            self._since_comma = 0
            return _PUNCT[","]
        self._left_in_sentence -= 1
        self._since_comma += 1
        return _WORDS[bisect.bisect(_CUM_WEIGHTS, rng.random() * _TOTAL_WEIGHT)]
