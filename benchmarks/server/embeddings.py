"""``/v1/embeddings`` vectors: pure CPU work, run by the app in its worker threads.

A vector is the sum of one dense pseudo-random vector per token (SHAKE-256 of the token id, as
signed bytes), L2-normalised: deterministic, texts sharing words get similar vectors, and every
value is a dense float32 as in a real model's output (a sparse vector would make bytes and
compression figures measured against this server look better than any real server's).

The sum is done on packed integers: each token's bytes, offset to 0..255, sit in 32-bit lanes
of one Python int, so adding a token's vector is one big-int addition instead of a Python loop
over the dimensions per token.
"""

from __future__ import annotations

import base64
import math
import sys
from array import array
from collections.abc import Sequence
from functools import lru_cache
from hashlib import shake_256
from typing import Any

from ._validate import InvalidRequest
from .tokenizer import encode_capped

__all__ = ["embed", "embedding_data"]

_LANE = 4                      # bytes per lane; 32 bits hold 2**24 tokens of at most 255 each
_MAX_TOKENS = 2**24 - 1
_OFFSET = 128                  # a signed byte x is stored as x + 128
_TO_UNSIGNED = bytes(range(128, 256)) + bytes(range(128))   # bytes.translate: b -> b ^ 0x80
_ID_MASK = 2**64 - 1
if array("I").itemsize != _LANE:  # pragma: no cover - every mainstream ABI has 32-bit int
    raise ImportError("benchmarks.server.embeddings needs a 4-byte array('I')")


@lru_cache(maxsize=2048)  # about 12 MB at 1536 dimensions; token ids repeat across inputs
def _token_lanes(token_id: int, dims: int) -> int:
    noise = shake_256((token_id & _ID_MASK).to_bytes(8, "little")).digest(dims)
    lanes = bytearray(_LANE * dims)
    lanes[::_LANE] = noise.translate(_TO_UNSIGNED)
    return int.from_bytes(lanes, "little")


def embed(ids: Sequence[int], dims: int) -> array[float]:
    """The L2-normalised float32 vector of ``ids`` (the zero vector for no tokens)."""
    if len(ids) > _MAX_TOKENS:
        raise ValueError(f"embed() takes at most {_MAX_TOKENS} tokens, got {len(ids)}")
    total = 0
    for tid in ids:
        total += _token_lanes(tid, dims)
    lanes = array("I")
    lanes.frombytes(total.to_bytes(_LANE * dims, "little"))
    if sys.byteorder == "big":  # pragma: no cover
        lanes.byteswap()
    offset = _OFFSET * len(ids)
    vec = [v - offset for v in lanes]
    norm = math.hypot(*vec) or 1.0
    return array("f", [v / norm for v in vec])


def _token_ids(inputs: Sequence[str | tuple[int, ...]], per_input: int,
               per_request: int) -> list[Sequence[int]]:
    """Each input's ids; raises InvalidRequest (naming the limit) before tokenizing past one."""
    out: list[Sequence[int]] = []
    left = per_request
    for i, item in enumerate(inputs):
        cap = min(per_input, left)
        ids = encode_capped(item, cap) if isinstance(item, str) else item
        if len(ids) > per_input:
            raise InvalidRequest(
                f"'input[{i}]' has more than {per_input} tokens, the model's maximum input "
                "length", "input", "context_length_exceeded")
        if len(ids) > left:
            raise InvalidRequest(
                f"'input' has more than {per_request} tokens summed across inputs; at most "
                f"{per_request} per request", "input", "too_many_tokens")
        left -= len(ids)
        out.append(ids)
    return out


def embedding_data(inputs: Sequence[str | tuple[int, ...]], dims: int, encoding_format: str,
                   per_input: int, per_request: int) -> tuple[list[dict[str, Any]], int]:
    """The response's ``data`` list and its prompt token count. CPU-bound: run it in a thread."""
    token_ids = _token_ids(inputs, per_input, per_request)
    data: list[dict[str, Any]] = []
    for i, ids in enumerate(token_ids):
        vec = embed(ids, dims)
        value: Any = (base64.b64encode(vec.tobytes()).decode() if encoding_format == "base64"
                      else vec.tolist())
        data.append({"object": "embedding", "index": i, "embedding": value})
    return data, sum(len(ids) for ids in token_ids)
