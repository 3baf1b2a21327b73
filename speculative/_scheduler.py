"""The speculator: decides which follow-ups to prefetch, tracks them, cancels the stale ones.

It never sends anything itself. ``plan`` returns :class:`Prefetch` handles that the caller runs
with its own send function (:func:`run_in_thread` or :func:`run_in_task` do that), and
``observe`` is told about every call the app makes, so the speculator can count hits, learn
(for a :class:`HistoryPredictor`) and cancel prefetches of a conversation that moved on.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import orjson

from ._budget import Budget, BudgetConfig, Ticket
from ._followup import (
    conversation_id,
    followup_request,
    is_sampled,
    is_speculatable,
    prefix_request,
    warm_request,
)
from ._predictors import HistoryPredictor, Predictor, as_predictor, safe_predict

log = logging.getLogger("speculative")

_DEFAULT_RESERVE_TOKENS = 256  # reserved per prefetch when the request sets no max_tokens
_IGNORED_FOR_MATCH = ("stream", "stream_options")  # transport shape, not the answer


def fingerprint(request: Mapping[str, Any]) -> str:
    """Exact-match identity of a request: every field but the streaming flags, canonically."""
    body = {k: v for k, v in request.items() if k not in _IGNORED_FOR_MATCH}
    return hashlib.sha256(orjson.dumps(body, option=orjson.OPT_SORT_KEYS)).hexdigest()


@dataclass
class SpeculationStats:
    predictions: int = 0
    sent: int = 0
    warmups: int = 0
    hits: int = 0
    joins: int = 0
    cancelled: int = 0
    refused: dict[str, int] = field(default_factory=dict)
    errors: int = 0
    wasted_tokens: int = 0
    used_tokens: int = 0
    latency_saved_ms: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__, refused=dict(self.refused))


class CancelToken:
    """Set when a prefetch must stop; senders check it between chunks (sync) or get cancelled."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._callbacks: list[Callable[[], None]] = []
        self._lock = threading.Lock()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def cancel(self) -> None:
        with self._lock:
            if self._event.is_set():
                return
            self._event.set()
            callbacks = list(self._callbacks)
        for callback in callbacks:
            try:
                callback()
            except Exception:  # a cancel hook must not break the caller
                log.debug("cancel callback failed", exc_info=True)

    def on_cancel(self, callback: Callable[[], None]) -> None:
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(callback)
                return
        callback()


@dataclass
class Prefetch:
    """One speculative request: the payload to send and its bookkeeping."""

    request: dict[str, Any]
    conversation: str
    key: str
    kind: str  # "followup" | "warm"
    sampled: bool
    ticket: Ticket
    token: CancelToken = field(default_factory=CancelToken)
    started: float = 0.0
    finished: bool = False
    used: bool = False


class Speculator:
    """Plans prefetches under a :class:`Budget` and tracks them until used, cancelled or done."""

    def __init__(
        self,
        budget: Budget | BudgetConfig | None = None,
        *,
        predictor: Predictor | None = None,
        allow_tools: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.budget = budget if isinstance(budget, Budget) else Budget(budget)
        self.predictor = predictor
        self.allow_tools = allow_tools
        self.clock = clock
        self.stats = SpeculationStats()
        self._inflight: dict[str, Prefetch] = {}
        self._lock = threading.Lock()
        self._last_request: dict[str, Mapping[str, Any]] = {}

    # -- the app's own calls -------------------------------------------------------------
    def observe(self, request: Mapping[str, Any]) -> Prefetch | None:
        """Tell the speculator the app is making ``request``. Returns the prefetch it matches.

        Counts the app call toward the budget, teaches a history predictor what followed what,
        and cancels in-flight prefetches of the same conversation that did not match.
        """
        self.budget.on_app_call()
        messages = list(request.get("messages") or [])
        conv = conversation_id(messages[:-1]) if messages else ""
        key = fingerprint(request)
        stale: list[Prefetch] = []
        with self._lock:
            match = self._inflight.get(key)
            for other in self._inflight.values():
                if other.conversation == conv and other.key != key and other.kind == "followup":
                    stale.append(other)
            # The previous turn of this conversation is the request that ended before the last
            # assistant reply and this user message.
            previous = None
            if len(messages) >= 3 and messages[-2].get("role") == "assistant":
                previous = self._last_request.get(conversation_id(messages[:-2]))
            if messages:
                self._last_request[conversation_id(messages)] = request
        if isinstance(self.predictor, HistoryPredictor) and previous is not None:
            self.predictor.observe(previous, request)
        for prefetch in stale:
            self._cancel(prefetch, "conversation moved on")
        if match is not None and match.kind == "followup":
            match.used = True
        return match

    def record_hit(self, *, joined: bool, saved_ms: float = 0.0) -> None:
        """The app's call was answered by a prefetch (from the cache, or joined in flight)."""
        with self._lock:
            if joined:
                self.stats.joins += 1
            else:
                self.stats.hits += 1
            self.stats.latency_saved_ms += max(0.0, saved_ms)

    # -- planning ------------------------------------------------------------------------
    def plan(
        self, request: Mapping[str, Any], answer: Mapping[str, Any], prefetch: object
    ) -> list[Prefetch]:
        """Prefetches to start after ``request`` got ``answer``; budget already taken for each."""
        if prefetch is None or prefetch is False:
            return []
        warm = prefetch == "prefix"
        ok, why = is_speculatable(request, allow_tools=self.allow_tools, warm=warm)
        if not ok:
            self._refuse(why)
            return []
        messages = list(request.get("messages") or [])
        if warm:
            # The next request's prefix is this conversation plus this answer (its text, or its
            # tool-call turn while the app runs the tools): warm exactly it.
            reply = prefix_request(request, answer)
            if reply is None:
                return []
            return self._admit([(warm_request(reply), "warm")], conversation_id(messages))
        predictor = self.predictor if prefetch is True else None
        try:
            predictor = predictor or as_predictor(prefetch)
        except TypeError as exc:
            self._refuse(str(exc))
            return []
        limit = self.budget.config.max_candidates
        predictions, error = safe_predict(predictor, request, answer, limit)
        if error:
            log.warning("speculation: %s", error)
            with self._lock:
                self.stats.errors += 1
        with self._lock:
            self.stats.predictions += len(predictions)
        candidates = []
        for p in predictions:
            follow = followup_request(request, answer, p.text)
            if follow is not None:
                candidates.append((follow, "followup"))
        reply = followup_request(request, answer, "")
        conv = conversation_id(reply["messages"][:-1]) if reply else ""
        return self._admit(candidates, conv)

    def warm(self, request: Mapping[str, Any]) -> list[Prefetch]:
        """Plan a prefix warm-up of ``request``'s prompt (``client.warm(...)``)."""
        return self._admit([(warm_request(request), "warm")], conversation_id(request.get("messages") or []))

    def _admit(self, candidates: list[tuple[dict[str, Any], str]], conv: str) -> list[Prefetch]:
        admitted: list[Prefetch] = []
        now = self.clock()
        for payload, kind in candidates:
            key = fingerprint(payload)
            with self._lock:
                if key in self._inflight:
                    continue
            reserve = int(payload.get("max_tokens") or payload.get("max_completion_tokens") or _DEFAULT_RESERVE_TOKENS)
            grant = self.budget.try_acquire(reserve, now)
            if isinstance(grant, str):
                self._refuse(grant)
                continue
            prefetch = Prefetch(payload, conv, key, kind, is_sampled(payload), grant, started=now)
            with self._lock:
                self._inflight[key] = prefetch
                if kind == "warm":
                    self.stats.warmups += 1
                else:
                    self.stats.sent += 1
            admitted.append(prefetch)
        return admitted

    # -- completion ----------------------------------------------------------------------
    def done(self, prefetch: Prefetch, *, tokens: int | None, error: BaseException | None) -> None:
        """A prefetch ended (answer stored, failed, or cancelled)."""
        with self._lock:
            if prefetch.finished:
                return
            prefetch.finished = True
            self._inflight.pop(prefetch.key, None)
            if error is not None and not prefetch.token.cancelled:
                self.stats.errors += 1
            if tokens:
                self.stats.used_tokens += tokens
        self.budget.release(prefetch.ticket, tokens)
        if error is not None and not prefetch.token.cancelled:
            log.warning("speculation: prefetch failed: %s: %s", type(error).__name__, error)

    def note_wasted(self, tokens: int) -> None:
        """Tokens of a prefetched answer that will never be served (evicted or superseded)."""
        with self._lock:
            self.stats.wasted_tokens += tokens

    def cancel_all(self) -> None:
        with self._lock:
            pending = list(self._inflight.values())
        for prefetch in pending:
            self._cancel(prefetch, "closed")

    def in_flight(self) -> list[Prefetch]:
        with self._lock:
            return list(self._inflight.values())

    def _cancel(self, prefetch: Prefetch, why: str) -> None:
        with self._lock:
            if prefetch.finished or prefetch.token.cancelled:
                return
            self.stats.cancelled += 1
        log.debug("speculation: cancelling prefetch (%s)", why)
        prefetch.token.cancel()

    def _refuse(self, why: str) -> None:
        with self._lock:
            self.stats.refused[why] = self.stats.refused.get(why, 0) + 1


# -- runners: thin I/O around the speculator ---------------------------------------------

SyncSend = Callable[[Prefetch], "int | None"]
AsyncSend = Callable[[Prefetch], Awaitable["int | None"]]


_EXECUTOR: ThreadPoolExecutor | None = None
_EXECUTOR_LOCK = threading.Lock()


def _executor() -> ThreadPoolExecutor:
    global _EXECUTOR
    with _EXECUTOR_LOCK:
        if _EXECUTOR is None:
            _EXECUTOR = ThreadPoolExecutor(max_workers=4, thread_name_prefix="speculative")
        return _EXECUTOR


def run_in_thread(speculator: Speculator, prefetch: Prefetch, send: SyncSend) -> None:
    """Run ``send(prefetch)`` on a background thread; it returns the tokens used."""

    def job() -> None:
        tokens: int | None = None
        error: BaseException | None = None
        try:
            if not prefetch.token.cancelled:
                tokens = send(prefetch)
        except BaseException as exc:  # recorded, never raised into the app
            error = exc
        speculator.done(prefetch, tokens=tokens, error=error)

    _executor().submit(job)


def run_in_task(speculator: Speculator, prefetch: Prefetch, send: AsyncSend) -> asyncio.Task[None]:
    """Run ``await send(prefetch)`` as a task of the running loop; cancelling the token cancels it."""

    async def job() -> None:
        tokens: int | None = None
        error: BaseException | None = None
        try:
            tokens = await send(prefetch)
        except asyncio.CancelledError as exc:
            error = exc
        except Exception as exc:  # recorded, never raised into the app
            error = exc
        finally:
            speculator.done(prefetch, tokens=tokens, error=error)

    task = asyncio.get_running_loop().create_task(job())
    loop = task.get_loop()

    def cancel_task() -> None:
        loop.call_soon_threadsafe(task.cancel)

    prefetch.token.on_cancel(cancel_task)
    return task
