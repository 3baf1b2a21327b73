"""Embedding micro-batching (opt-in, ``embedding_batch=``): concurrent ``embeddings.create``
calls that arrive within a few milliseconds go to the server as one request, and each caller
gets its own answer back. Fewer requests against a requests-per-minute limit, and one forward
pass where the server batches anyway.

The decisions are pure: which calls may share a request (:func:`batch_key`: same origin,
credential, model and options, nothing per call), how a combined answer is split back
(:func:`split_answer`: by each item's ``index``, re-numbered from 0, usage shared in proportion
to the inputs). The I/O waits ``window_ms`` after the first call of a batch (or until
``max_inputs`` inputs are in), sends once through the client's pipeline, and hands each caller
its part. When the server refuses the combined request (4xx: one bad input), each call is sent
again alone, so that the error is the bad input's caller's only; the server never ran the
refused request. The I/O is ``_async/batch.py`` (the sync twin generated): sync callers wait
on threads and the first of a batch sends it, async ones wait on the loop and a task of its own
sends it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from .._errors import APIStatusError
from ._async.batch import AsyncBatcherIO
from ._sync.batch import BatcherIO

__all__ = ["BatchConfig", "Batcher", "batch_config", "batch_key", "split_answer"]

# OpenAI API reference, "Create embeddings" (2026-12-03): at most 2048 inputs per request.
MAX_INPUTS = 2048
_OPTIONS = frozenset({"input", "model", "encoding_format", "dimensions", "user"})


@dataclass(frozen=True, slots=True)
class BatchConfig:
    window_ms: float = 2.0
    max_inputs: int = MAX_INPUTS

    def __post_init__(self) -> None:
        if not 0.0 <= self.window_ms <= 1000.0 or not 1 <= self.max_inputs <= MAX_INPUTS:
            raise ValueError(f"embedding_batch needs 0 <= window_ms <= 1000 and 1 <= max_inputs <= "
                             f"{MAX_INPUTS}, got {self.window_ms}, {self.max_inputs}")


def batch_config(value: Any) -> BatchConfig | None:
    if value is None or value is False:
        return None
    if value is True:
        return BatchConfig()
    if isinstance(value, BatchConfig):
        return value
    if isinstance(value, dict):
        return BatchConfig(**value)
    raise ValueError(f"embedding_batch must be None, True, a dict or a BatchConfig, got {value!r}")


def _inputs(value: Any) -> list[Any] | None:
    """A call's inputs as a list (a string is one input; a token list too), or None."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and value:
        if all(isinstance(v, int) for v in value):
            return [value]  # one pre-tokenized input
        if all(isinstance(v, str) or (isinstance(v, list) and all(isinstance(t, int) for t in v)) for v in value):
            return list(value)
    return None


def batch_key(base_url: str, scope: str, body: dict[str, Any] | None, plain: bool) -> tuple[Any, ...] | None:
    """What a call shares a request with (None: it goes alone): calls to one origin under one
    credential, for one model with the same options; ``plain``: no per-call headers, query or
    body of its own."""
    if not plain or body is None or not _OPTIONS.issuperset(body) or _inputs(body.get("input")) is None:
        return None
    return (base_url, scope, body.get("model"), body.get("encoding_format"), body.get("dimensions"),
            body.get("user"))


def split_answer(value: dict[str, Any], sizes: list[int]) -> list[dict[str, Any]]:
    """The combined answer's part for each caller (``sizes``: inputs per caller, in order)."""
    items = sorted(value.get("data") or (), key=lambda item: item.get("index", 0))
    total = sum(sizes)
    if len(items) != total:
        raise ValueError(f"the combined embeddings answer has {len(items)} items for {total} inputs")
    usage = value.get("usage") or {}
    parts, start = [], 0
    for size in sizes:
        data = [{**item, "index": i} for i, item in enumerate(items[start:start + size])]
        share = {k: round(v * size / total) for k, v in usage.items() if isinstance(v, int)}
        parts.append({**value, "data": data, "usage": share})
        start += size
    return parts


@dataclass
class _Pending:
    body: dict[str, Any]
    inputs: list[Any]
    done: Any  # an Event (sync client) or AsyncEvent (async), set when result or error is in
    result: Any = None
    error: BaseException | None = None


@dataclass
class _Batch:
    calls: list[_Pending] = field(default_factory=list)
    size: int = 0


class Batcher(BatcherIO, AsyncBatcherIO):
    """Batches per key for one client. ``send(body)`` runs one embeddings request through the
    client's pipeline and returns ``(decoded answer, carrier)`` (a coroutine for the async
    client), the carrier being whatever the caller needs of that request (its Call: trace id and
    timings). Each caller gets ``(its part of the answer, the carrier, how many calls shared the
    request)``. A refused combined request is sent again per caller (its error its own)."""

    def __init__(self, config: BatchConfig) -> None:
        self.config = config
        self._open: dict[tuple[Any, ...], _Batch] = {}
        self._lock = threading.Lock()
        self.requests = 0
        self.calls = 0

    @staticmethod
    def _pending(body: dict[str, Any], done: Any) -> _Pending:
        return _Pending(body, _inputs(body.get("input")) or [], done)

    def _join(self, key: tuple[Any, ...], pending: _Pending) -> tuple[_Batch, bool, bool]:
        """(batch, whether this call leads it, whether it is full now)."""
        with self._lock:
            self.calls += 1
            batch = self._open.get(key)
            lead = batch is None
            if batch is None:
                batch = self._open[key] = _Batch()
            batch.calls.append(pending)
            batch.size += len(pending.inputs)
            full = batch.size >= self.config.max_inputs
            if full:
                self._open.pop(key, None)
            return batch, lead, full

    def _close(self, key: tuple[Any, ...], batch: _Batch) -> None:
        with self._lock:
            if self._open.get(key) is batch:
                del self._open[key]
            self.requests += 1

    @staticmethod
    def _combined(batch: _Batch) -> dict[str, Any]:
        first = batch.calls[0].body
        return {**first, "input": [x for p in batch.calls for x in p.inputs]}

    @staticmethod
    def _share(batch: _Batch, answer: dict[str, Any], carrier: Any) -> None:
        """Each caller's part of the combined answer."""
        parts = split_answer(answer, [len(p.inputs) for p in batch.calls])
        for pending, part in zip(batch.calls, parts, strict=True):
            pending.result = (part, carrier, len(batch.calls))

    @staticmethod
    def _refused_whole(batch: _Batch, exc: APIStatusError) -> bool:
        """Whether the server refused the combined request for what one input is (4xx but 429:
        it processed nothing), so each call goes again alone and the error is its caller's."""
        return len(batch.calls) > 1 and 400 <= exc.status_code < 500 and exc.status_code != 429

    @staticmethod
    def key(base_url: str, scope: str, body: dict[str, Any] | None, plain: bool) -> tuple[Any, ...] | None:
        return batch_key(base_url, scope, body, plain)

    def stats(self) -> dict[str, int]:
        return {"calls": self.calls, "requests": self.requests}
