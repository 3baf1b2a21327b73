"""Log probabilities of generated tokens (pure), in the shapes OpenAI's API returns them.

The simulated engine has no distribution over its vocabulary, so the numbers are made up, but
made up reproducibly: a token's logprob and its alternatives are a function of the choice's
*key* (its prompt, images, seed, temperature and choice index: :func:`choice_key`), the token's
position and the token itself, through a splitmix64 generator. The same request with the same
``seed`` (or ``temperature: 0``) gives the same logprobs, streamed or not. Each position reads
as a plausible distribution: the sampled token is the most likely one (probability 0.55 to
0.99), then ``top - 1`` alternatives (other vocabulary words), each with a share of what is left,
so the logprobs are negative, sorted descending and their probabilities sum to at most 1.

Tokens are the texts the detokenizer gives each id (``" word"`` with its leading space,
punctuation bare, the first word of a sentence capitalised), so the tokens of a choice joined
are its text. Nothing here runs unless a request asks for logprobs.
"""

from __future__ import annotations

import hashlib
import math
import re
import struct
from array import array
from collections import deque
from collections.abc import Iterable
from typing import Any

from .engine.base import EngineRequest
from .tokenizer import VOCAB, WORD_IDS, Detokenizer, token_id

__all__ = [
    "MAX_COMPLETION_LOGPROBS",
    "MAX_TOP_LOGPROBS",
    "LogprobTrack",
    "Token",
    "chat_logprobs",
    "choice_key",
    "completion_logprobs",
    "prompt_key",
    "text_tokens",
]

#: ``top_logprobs`` of chat completions: 0..20 (OpenAI's API reference).
MAX_TOP_LOGPROBS = 20
#: ``logprobs`` of legacy completions: 0..5 (OpenAI's API reference).
MAX_COMPLETION_LOGPROBS = 5

_MASK = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15
_WORDS = tuple(WORD_IDS)
# A token with the whitespace before it, to split a text that did not come from engine ids
# (a prompt, a JSON document) into tokens that join back to it.
_PIECE_RE = re.compile(r"\s*(?:\w+|[^\w\s])")

#: One token of a choice: (position, character offset in the choice's text, token text).
Token = tuple[int, int, str]


def choice_key(ereq: EngineRequest) -> int:
    """The key one choice's logprobs derive from: what its text derives from."""
    h = hashlib.blake2b(digest_size=8)
    h.update(array("q", ereq.prompt_token_ids).tobytes())
    h.update(ereq.image_digest.encode())
    h.update(struct.pack("<qqqd", ereq.image_tokens, ereq.seed if ereq.seed is not None else -1,
                         ereq.n_index, ereq.temperature))
    return int.from_bytes(h.digest(), "big")


def prompt_key(prompt_ids: tuple[int, ...]) -> int:
    """The key of an echoed prompt's logprobs (the prompt alone: not the seed)."""
    digest = hashlib.blake2b(array("q", prompt_ids).tobytes(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def text_tokens(text: str, start: int = 0) -> list[Token]:
    """The tokens of ``text`` (the project tokenizer's, each with the whitespace before it)."""
    return [(start + i, m.start(), m.group()) for i, m in enumerate(_PIECE_RE.finditer(text))]


class LogprobTrack:
    """One choice's tokens as they are generated, released once their text has been sent.

    ``add`` takes the engine's ids; ``release(n)`` says ``n`` more characters of the choice's
    text went out and returns the tokens whose text is now complete. Text held back for stop
    sequences holds its tokens back with it; a token cut by a stop sequence is never released.
    """

    __slots__ = ("_detok", "_pending", "_pos", "_sent", "_taken")

    def __init__(self) -> None:
        self._detok = Detokenizer()
        self._pending: deque[str] = deque()
        self._pos = 0    # position of the next token released
        self._sent = 0   # characters of text sent
        self._taken = 0  # characters covered by released tokens

    def add(self, ids: Iterable[int]) -> None:
        feed, pending = self._detok.feed, self._pending
        for i in ids:
            pending.append(feed((i,)))

    def release(self, chars: int) -> list[Token]:
        self._sent += chars
        out: list[Token] = []
        pending = self._pending
        while pending and self._taken + len(pending[0]) <= self._sent:
            text = pending.popleft()
            out.append((self._pos, self._taken, text))
            self._pos += 1
            self._taken += len(text)
        return out


def _mix(x: int) -> int:
    """splitmix64's output function: 64 well-mixed bits from any 64."""
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK
    return x ^ (x >> 31)


def _distribution(key: int, pos: int, text: str, top: int) -> tuple[float, list[tuple[str, float]]]:
    """(logprob of ``text``, ``top - 1`` alternatives as (token, logprob), most likely first)."""
    word = text.lstrip()
    state = _mix((key ^ _mix((pos * _GOLDEN) & _MASK) ^ (token_id(word) * 0xD1B54A32D192ED03)) & _MASK)

    def draw() -> float:
        nonlocal state
        state = (state + _GOLDEN) & _MASK
        return _mix(state) / 2.0**64

    p = 0.55 + 0.44 * draw()
    alternatives: list[tuple[str, float]] = []
    if top > 1:
        # Alternatives read as words in the sampled token's place: same leading space (a word
        # instead of punctuation gets one), same capitalisation.
        space = text[: len(text) - len(word)] or (" " if not word[:1].isalnum() else "")
        capital = word[:1].isupper()
        seen = {text}
        rest = 1.0 - p
        while len(alternatives) < top - 1:
            alt = VOCAB[_WORDS[int(draw() * len(_WORDS))]]
            alt = space + (alt[:1].upper() + alt[1:] if capital else alt)
            if alt in seen:
                continue
            seen.add(alt)
            share = rest * (0.5 + 0.4 * draw())  # at least half of what is left: sorted
            rest -= share
            alternatives.append((alt, math.log(share)))
    return math.log(p), alternatives


def _entry(token: str, logprob: float) -> dict[str, Any]:
    return {"token": token, "logprob": logprob, "bytes": list(token.encode("utf-8"))}


def chat_logprobs(key: int, tokens: Iterable[Token], top: int) -> dict[str, Any]:
    """A chat choice's (or chunk choice's) ``logprobs``: ``{"content": [...], "refusal": None}``
    with ``top`` alternatives per token, the sampled token first among them."""
    content: list[dict[str, Any]] = []
    for pos, _, text in tokens:
        logprob, alternatives = _distribution(key, pos, text, top)
        entry = _entry(text, logprob)
        entry["top_logprobs"] = ([_entry(text, logprob), *(_entry(t, lp) for t, lp in alternatives)]
                                 if top else [])
        content.append(entry)
    return {"content": content, "refusal": None}


def completion_logprobs(key: int, tokens: Iterable[Token], top: int, offset: int = 0,
                        prompt: tuple[int, list[Token]] | None = None) -> dict[str, Any]:
    """A legacy completion choice's ``logprobs``: ``tokens``, ``token_logprobs``,
    ``top_logprobs`` (``{token: logprob}`` for the ``top`` most likely, the sampled token first)
    and ``text_offset`` (each token's start in the choice's text, past ``offset`` characters of
    echoed prompt).

    ``prompt``: (:func:`prompt_key`, its tokens) when the prompt is echoed: its tokens come
    first, the first with null logprobs (nothing precedes it), as OpenAI's API does.
    """
    out: dict[str, list[Any]] = {"tokens": [], "token_logprobs": [], "top_logprobs": [],
                                 "text_offset": []}
    parts: list[tuple[int, Iterable[Token], int]] = [(key, tokens, offset)]
    if prompt is not None:
        parts.insert(0, (prompt[0], prompt[1], 0))
    first = prompt is not None
    for part_key, part, start in parts:
        for pos, at, text in part:
            out["tokens"].append(text)
            out["text_offset"].append(start + at)
            if first:
                out["token_logprobs"].append(None)
                out["top_logprobs"].append(None)
                first = False
                continue
            logprob, alternatives = _distribution(part_key, pos, text, top)
            out["token_logprobs"].append(logprob)
            out["top_logprobs"].append({text: logprob, **dict(alternatives)} if top else {})
    return out
