"""THE project tokenizer: one rule for counting and generating tokens everywhere.

Every token count in the project (the reference server's ``usage``, its context-window check,
prefill cost, the benchmarks' token figures, tests) comes from this module, so figures agree
whichever part produced them.

Rules (docs/CONTRACTS.md, "The tokenizer"):

* Tokens are ``re.findall(r"\\w+|[^\\w\\s]", text)``: runs of word characters, and each other
  non-space character on its own. Whitespace is never a token.
* Ids come from a fixed vocabulary :data:`VOCAB`: punctuation first, then ~1,200 common English
  words (``vocab.txt``, roughly by frequency); id = index. A token not in the vocabulary is
  looked up lower-cased (so "The" and "the" share an id), and failing that hashes (BLAKE2b,
  8 bytes) into ``[len(VOCAB), VOCAB_SIZE)``.
* :func:`decode` maps ids back to text: vocabulary ids to their word, hashed ids to
  ``VOCAB[id % len(VOCAB)]``; words are joined with single spaces, punctuation attaches to its
  neighbour, and the first word of each sentence is capitalised. ``encode(decode(ids)) == ids``
  for vocabulary ids, so generated text re-counts to the same number of tokens.
* Image tokens are counted by the vision rule in the server, never tokenized here.

It is deliberately not a real BPE: it is fast (one regex pass and a dict lookup per token),
has no dependency, and gives counts of the same order as BPE tokenizers on English prose.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from functools import lru_cache
from itertools import islice
from pathlib import Path

__all__ = [
    "PUNCTUATION",
    "VOCAB",
    "VOCAB_SIZE",
    "WORD_IDS",
    "Detokenizer",
    "count_tokens",
    "decode",
    "detokenize",
    "encode",
    "encode_capped",
    "token_id",
    "tokenize",
]

#: The id space: vocabulary ids below ``len(VOCAB)``, hashed ids above it (a Llama-sized range).
VOCAB_SIZE = 32000

_TOKEN_RE = re.compile(r"\w+|[^\w\s]")

#: Punctuation tokens, ids 0.. in this order. Stable: changing it changes every id.
PUNCTUATION: tuple[str, ...] = (".", ",", "?", "!", ";", ":", "'", '"', "-", "(", ")", "/", "%", "&")


def _load_words() -> list[str]:
    path = Path(__file__).with_name("vocab.txt")
    words = [line.strip() for line in path.read_text(encoding="utf-8").splitlines()]
    return [w for w in words if w]


#: The vocabulary; a token's id is its index here.
VOCAB: tuple[str, ...] = (*PUNCTUATION, *_load_words())
#: Ids of the word (non-punctuation) entries, for generators that want readable text.
WORD_IDS = range(len(PUNCTUATION), len(VOCAB))

_IDS: dict[str, int] = {tok: i for i, tok in enumerate(VOCAB)}
if len(_IDS) != len(VOCAB):
    raise RuntimeError("benchmarks/server/vocab.txt has duplicate entries")

# Spacing: these attach to the token before them (no space before) ...
_ATTACH_LEFT = frozenset({".", ",", "?", "!", ";", ":", ")", "%", "'", "-", "/"})
# ... and these to the token after them (no space after).
_ATTACH_RIGHT = frozenset({"(", "'", "-", "/"})
_SENTENCE_END = frozenset({".", "?", "!"})


def tokenize(text: str) -> list[str]:
    """Split ``text`` into tokens (words and single punctuation characters)."""
    return _TOKEN_RE.findall(text)


@lru_cache(maxsize=65536)
def _hashed_id(token: str) -> int:
    digest = hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest()
    return len(VOCAB) + int.from_bytes(digest, "big") % (VOCAB_SIZE - len(VOCAB))


def token_id(token: str) -> int:
    """The id of one token: its vocabulary index, lower-cased index, or its hash bucket."""
    found = _IDS.get(token)
    if found is None:
        found = _IDS.get(token.lower())
    return found if found is not None else _hashed_id(token)


def encode(text: str) -> list[int]:
    """Token ids of ``text``."""
    get = _IDS.get
    out: list[int] = []
    for tok in _TOKEN_RE.findall(text):
        found = get(tok)
        out.append(found if found is not None else token_id(tok))
    return out


def encode_capped(text: str, cap: int) -> list[int]:
    """Token ids of ``text``, but at most ``cap + 1`` of them: enough to tell that ``text`` has
    more than ``cap`` tokens without tokenizing all of a huge request."""
    if len(text) <= cap:  # a token is at least one character: no more than cap tokens
        return encode(text)
    get = _IDS.get
    out: list[int] = []
    for match in islice(_TOKEN_RE.finditer(text), cap + 1):
        tok = match.group()
        found = get(tok)
        out.append(found if found is not None else token_id(tok))
    return out


def count_tokens(text: str) -> int:
    """Number of tokens in ``text`` (``len(encode(text))`` without building the ids)."""
    return len(_TOKEN_RE.findall(text))


def _word(token_id_: int) -> str:
    if not 0 <= token_id_ < VOCAB_SIZE:
        raise ValueError(f"token id {token_id_} is outside [0, {VOCAB_SIZE})")
    return VOCAB[token_id_ % len(VOCAB)]


class Detokenizer:
    """Incremental :func:`decode` for streams: ``"".join(feed(chunk) for chunk in chunks)``
    equals ``decode(all ids)`` however the ids are split, so streamed and non-streamed text agree.
    """

    __slots__ = ("_prev",)

    def __init__(self) -> None:
        self._prev: str | None = None  # previous token, None at the start

    def feed(self, ids: Iterable[int]) -> str:
        parts: list[str] = []
        prev = self._prev
        for i in ids:
            word = _word(i)
            if prev is None or prev in _SENTENCE_END:
                word = word[:1].upper() + word[1:]
            if prev is not None and word not in _ATTACH_LEFT and prev not in _ATTACH_RIGHT:
                parts.append(" ")
            parts.append(word)
            prev = word
        self._prev = prev
        return "".join(parts)


def decode(ids: Sequence[int] | Iterable[int]) -> str:
    """Text of token ids: words joined by spaces, punctuation attached, sentences capitalised."""
    return Detokenizer().feed(ids)


#: The contract's name for :func:`decode`.
detokenize = decode
