"""One stream's reading without I/O: bytes in, events out; a failure in, the next step out.

A :class:`StreamSession` is what the face's ``Stream`` / ``AsyncStream`` (``api/_async/
streaming.py``) drive: they read the body's bytes and hand them in (:meth:`feed`), yield what
comes out, and when the body ends or fails ask what now (:meth:`finish`, :meth:`next_step`),
as ``transport/http2/state.py``'s ``H2State`` does for HTTP/2. The session decodes (SSE or
protobuf frames, the decoder it is given), keeps the watchdog's view (events are progress;
bytes without one, keep-alives, are not: ``pipeline/watchdog.py``), the partial answer
(``.partial`` on an error: nothing that arrived is thrown away), the Responses API's sequence
numbers, and what a complete answer is:

- a chat or completions stream is complete only when every choice it carried got a
  ``finish_reason``; ``[DONE]`` alone is not completion (llama-cpp-python's server, for one, ends a
  stream it interrupts with ``[DONE]`` and no finish_reason), and a stream that ends without
  ``[DONE]`` but with every choice finished is accepted, as some servers never send it;
- a Responses stream is typed events, complete at its final event (``response.completed``,
  ``.incomplete``, ``.failed`` or ``error``).

After a failure (a cut, a stall, events out of order) :meth:`next_step` says how the stream
goes on (``pipeline/resume.py``'s ``next_step``): resume a background stream after its last
event, send again a stream that failed before any content, continue a chat answer from its
partial text, or nothing (the error is raised). Only a whole answer runs ``on_complete`` (the
cache's store, speculation's planning).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import httpx

from .._errors import APIError, APIStatusError, APITimeoutError, IncompleteStreamError, OpenAIError
from ..wire.codec import (
    MESSAGE_END_EVENT,
    MESSAGES_PATH,
    PING_EVENT,
    RESPONSE_END_EVENTS,
    RESPONSES_PATH,
    has_token,
)
from .partial import PartialTracker, block_type
from .resume import (
    MAX_RESUMES,
    continuation_body,
    early_resume_after,
    messages_seam,
    next_step,
    out_of_order,
)
from .watchdog import stall_message, stalled

if TYPE_CHECKING:
    from ..wire.codec import StreamDecoder
    from .call import Call
    from .timings import CallRecord

__all__ = ["Step", "StreamSession", "unfinished_message"]

StepKind = Literal["resume", "resend", "continue"]


@dataclass(frozen=True, slots=True)
class Step:
    """How a failed stream goes on: ``kind`` with ``args`` (resume: the response id and the last
    sequence number; continue: the text so far and how much of it was shown), and what it does,
    in words (for the error should it fail too)."""

    kind: StepKind
    args: tuple[Any, ...]
    what: str


class StreamSession:
    """One stream's state, as its iterator drives it."""

    __slots__ = ("_chunks", "_end", "_events", "_expect_seq", "_final", "_had_event", "_keepalives", "_make",
                 "_messages", "_on_complete", "_partial", "_response", "_seam", "_skip_opening", "call",
                 "can_continue", "can_resend", "can_resume", "complete", "cut_by_event", "decoder", "early", "gaps",
                 "idle", "last_event", "pending", "request", "request_id", "resumes", "trace_id")

    def __init__(self, call: Call, decoder: StreamDecoder, response: httpx.Response,
                 make: Callable[[dict[str, Any]], Any],
                 on_complete: Callable[[Call, list[dict[str, Any]]], None] | None = None, *,
                 can_resume: bool = False, can_resend: bool = False, can_continue: bool = False) -> None:
        self.call = call
        self.decoder = decoder
        self._make = make  # what each event becomes for the app (the face's type): pure
        self._on_complete = on_complete
        self._chunks: list[dict[str, Any]] | None = [] if on_complete else None
        # A Responses stream is typed events, complete at its final event (``_end``) instead.
        # Anthropic's Messages stream is typed events too, complete at ``message_stop``; its
        # ``ping`` events are keep-alives, not progress (the watchdog).
        self._messages = call.path == MESSAGES_PATH
        self._events = self._messages or call.path == RESPONSES_PATH
        self._end: str | None = None
        self.complete = False
        self.trace_id = call.trace.trace_id
        self.request_id = response.headers.get("x-request-id")
        self.request = response.request
        self._response = response
        self._partial = PartialTracker()
        # The watchdog: the time of the last event, and whether bytes came since (keep-alives).
        self.idle = call.options.stream_idle_timeout
        self.last_event = time.monotonic()
        self._keepalives = False
        self.can_resume, self.can_resend, self.can_continue = can_resume, can_resend, can_continue
        self._skip_opening = False  # a re-sent stream's role chunk: its twin was delivered
        self._seam = ""  # a Messages continuation: the white space its prefill left off (resume.messages_seam)
        # A Messages ``error`` event that says the server failed mid-answer (overloaded_error,
        # api_error): a cut, that may be sent again or continued (``next_step``) as a reset is.
        self.cut_by_event = False
        # An error event's error, raised once the events before it in the same read are
        # delivered (the official client yields them first too).
        self.pending: APIError | None = None
        self.resumes = 0
        self._expect_seq: int | None = None
        self._final = False  # an error no resume can mend (events out of order, resume refused)
        # Early resume (pipeline.resume.early_resume_after, api.early_resume): a background
        # stream's inter-event gaps.
        self.early = can_resume and call.options.stream_early_resume
        self.gaps: deque[float] = deque(maxlen=64)
        self._had_event = False

    @property
    def record(self) -> CallRecord:
        return self.call.record

    # -- bytes in, events out ---------------------------------------------------------------

    def feed(self, raw: bytes) -> list[Any]:
        """The events in the next piece of the body, as the app gets them (none once the decoder
        is done: the rest is drained so that the connection stays reusable)."""
        if self.decoder.done:
            return []
        return self.handle(self.decoder.feed(raw))

    def handle(self, objs: list[dict[str, Any]]) -> list[Any]:
        """The stream's bookkeeping for decoded events (the watchdog, completion, the partial
        answer), and the events as the app gets them; raises the stream's error for an error
        event or a stall."""
        if self._messages and not self.early and self._expect_seq is None:
            if self._skip_opening:
                objs = self._skip_messages_opening(objs)
            return self._handle_messages(objs)
        self._progress(objs)
        if self._events:
            return self._handle_events(objs)
        record = self.call.record
        partial = self._partial
        make = self._make
        out = []
        for obj in objs:
            if obj.get("error") or obj.get("type") == "error":
                raise self.annotate(APIError(_error_message(obj), body=obj))
            if self._skip_opening:
                if _opening_only(obj):
                    continue
                self._skip_opening = False
            if record.first_token_ms is None and has_token(obj):
                record.mark_first_token()
            partial.chunk(obj, obj.get("choices"))  # also each choice's finish_reason
            if self._chunks is not None:
                self._chunks.append(obj)
            out.append(make(obj))
        return out

    def _handle_events(self, objs: list[dict[str, Any]]) -> list[Any]:
        """Responses API events: delivered as they come, ``error`` events included (as the
        official client yields them); a bare ``{"error": ...}`` (a proxy's) raises."""
        record = self.call.record
        for obj in objs:
            if self._expect_seq is not None:
                wrong = out_of_order(self._expect_seq, obj.get("sequence_number"))
                if wrong is not None:
                    self._final = True
                    raise self._incomplete(f"Incomplete stream: {wrong}")
                self._expect_seq += 1
            kind = obj.get("type")
            if kind == "error" and self._messages:
                # an Anthropic ``error`` event raises, as the official client's stream does: a
                # status error of the 200 answer, with the event as its body (anthropic ``_streaming.py``)
                raise self.annotate(APIStatusError(_error_message(obj), response=self._response, body=obj))
            if kind is None and obj.get("error"):
                raise self.annotate(APIError(_error_message(obj), body=obj))
            if kind == MESSAGE_END_EVENT and self._messages:
                self._end = kind
            if record.first_token_ms is None and has_token(obj):
                record.mark_first_token()
            if kind in RESPONSE_END_EVENTS:
                self._end = kind
            self._partial.event(obj)
            if self._chunks is not None and kind != PING_EVENT:  # a keep-alive is no part of the answer
                self._chunks.append(obj)
        make = self._make
        if self._messages:  # the official client hands no ``ping`` on (anthropic ``_streaming.py``)
            return [make(obj) for obj in objs if obj.get("type") != PING_EVENT]
        return [make(obj) for obj in objs]

    def _handle_messages(self, objs: list[dict[str, Any]]) -> list[Any]:
        """Anthropic's Messages events: what :meth:`_progress` and :meth:`_handle_events` do for
        them, in one pass, as a streamed answer is nearly all ``content_block_delta`` events (one
        per token) and this runs for each. ``ping`` is a keep-alive: not progress, no part of the
        answer, not handed on (the official client's ``_streaming.py`` drops it too)."""
        out: list[Any] = []
        make = self._make
        chunks = self._chunks
        partial = self._partial
        record = self.call.record
        for obj in objs:
            kind = obj.get("type")
            if kind == "content_block_delta":
                if record.first_token_ms is None:
                    record.mark_first_token()
                partial.content_delta(obj)
            elif kind == PING_EVENT:
                partial.events += 1  # counted as it came (the stall message's count), nothing more
                continue
            else:
                if kind == "error" or (kind is None and obj.get("error")):
                    # a status error of the 200 answer, with the event as its body, as the official
                    # client's stream raises it (anthropic ``_streaming.py``); a bare
                    # ``{"error": ...}`` (a proxy's) an APIError. Raised after the events before it.
                    self._tick(True)
                    self.cut_by_event = kind == "error" and _server_failure(obj)
                    err = self.annotate(APIStatusError(_error_message(obj), response=self._response, body=obj)
                                        if kind == "error" else APIError(_error_message(obj), body=obj))
                    if not out:
                        raise err
                    self.pending = err
                    return out
                if kind == MESSAGE_END_EVENT or kind in RESPONSE_END_EVENTS:
                    self._end = kind
                if record.first_token_ms is None and has_token(obj):
                    record.mark_first_token()
                partial.event(obj)
            if chunks is not None:
                chunks.append(obj)
            out.append(make(obj))
        self._tick(bool(out))
        return out

    def _skip_messages_opening(self, objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """A Messages stream sent again or continued: its opening events the app has already
        (``message_start``, the ``content_block_start`` of a block it has open) are not
        delivered twice, and a continuation's head loses the white space its prefill left off.
        The first other event ends the opening."""
        out = []
        blocks = self._partial.blocks
        for i, obj in enumerate(objs):
            kind = obj.get("type")
            if kind == PING_EVENT:  # a keep-alive: handled as any
                out.append(obj)
                continue
            if kind == "message_start":
                continue
            index = obj.get("index")
            if kind == "content_block_start" and isinstance(index, int) and block_type(obj) == blocks.get(index):
                continue  # the block the app has open (of the same type: a re-sent answer may differ)
            if self._seam and kind == "content_block_delta":
                trimmed, self._seam = _trim_seam(obj, self._seam)
                if trimmed is None:  # only the white space the app has: the opening goes on
                    continue
                obj = trimmed
            self._skip_opening, self._seam = False, ""
            out.append(obj)
            out.extend(objs[i + 1:])
            break
        return out

    def _progress(self, objs: list[dict[str, Any]]) -> None:
        """The watchdog's view of one read: events are progress; bytes without one are not."""
        now = time.monotonic()
        if objs and self._messages:  # Anthropic's pings: bytes that are no progress
            objs = [obj for obj in objs if obj.get("type") != PING_EVENT]
        self._tick(bool(objs), now)

    def _tick(self, progressed: bool, now: float | None = None) -> None:
        """The watchdog's clock after one read: an event came (``progressed``), or only bytes;
        raises the stall once bytes without an event outlast the idle limit."""
        if now is None:
            now = time.monotonic()
        if progressed:
            if self.early and self.call.record.first_token_ms is not None:
                # the rhythm of the answer's tokens: not the wait for the first (the prefill)
                if self._had_event:
                    self.gaps.append(now - self.last_event)
                self._had_event = True
            self.last_event = now
            self._keepalives = False
        else:
            self._keepalives = True
            if stalled(now, self.last_event, self.idle):
                raise self.stall(now)

    # -- the end ----------------------------------------------------------------------------

    def finish(self, bytes_received: int) -> None:
        """The body ended: complete (``on_complete`` runs for a whole answer), or the error."""
        record = self.call.record
        record.bytes_received += bytes_received
        record.finish()
        try:
            self.decoder.close()
        except OpenAIError as exc:
            raise self.annotate(exc) from None
        if self._events:
            if self._end is None:
                raise self._incomplete("Incomplete stream: the stream ended before message_stop" if self._messages
                                       else "Incomplete stream: the stream ended before "
                                       "response.completed, response.incomplete, response.failed "
                                       "or error")
            unfinished = None
        else:
            unfinished = unfinished_message(self._partial.finished(), self.decoder.done)
        if unfinished is not None:
            raise self._incomplete(unfinished)
        self.complete = True
        # Only a whole answer is kept (cache) or followed up (prefetch): not a failed response.
        if self._on_complete is not None and self._chunks is not None and self._end in (None, "response.completed", MESSAGE_END_EVENT):
            self._on_complete(self.call, self._chunks)

    def stall(self, now: float) -> APIError:
        self.call.record.finish()
        return self.annotate(APITimeoutError(stall_message(
            now - self.last_event, self.idle or 0.0, self._partial.events, self._keepalives)))

    def transport_error(self, exc: Exception) -> APIError:
        """What a failed read of the body becomes (a stall, when the read waited the idle limit)."""
        if isinstance(exc, httpx.ReadTimeout) and self._watchdog_read():
            return self.stall(time.monotonic())
        self.call.record.finish()
        if isinstance(exc, httpx.TimeoutException):
            return self.annotate(APITimeoutError(f"Stream read timed out ({type(exc).__name__})"))
        return self._incomplete(
            f"Incomplete stream: the connection failed mid-stream ({type(exc).__name__}: {exc})")

    def _watchdog_read(self) -> bool:
        """Whether the read that timed out waited the idle limit (not a shorter read timeout)."""
        read = self.call.timeout.read
        return self.idle is not None and (read is None or read >= self.idle)

    def _incomplete(self, message: str) -> APIError:
        return self.annotate(IncompleteStreamError(message))

    def annotate(self, err: Any) -> Any:
        """The call's facts on an error of this stream: trace and request ids, timings, the
        request, and what arrived so far (``.partial``)."""
        if isinstance(err, APIError):
            err.trace_id = self.trace_id
            err.request_id = self.request_id
            err.timings = self.call.record
            err.request = self.request
        if isinstance(err, (IncompleteStreamError, APITimeoutError)) and err.partial is None:
            err.partial = self._partial.answer()  # nothing that arrived is thrown away
        return err

    # -- a failure in, the next step out ----------------------------------------------------

    def next_step(self) -> Step | None:
        """How the failed stream goes on (``pipeline.resume.next_step``), or None (raise)."""
        partial = self._partial
        resume_from = None
        if self.can_resume and partial.response_id is not None and partial.last_sequence_number is not None:
            resume_from = (partial.response_id, partial.last_sequence_number)
        call = self.call
        retries_left = call.record.retries < call.max_retries
        can_resend = self.can_resend and retries_left
        can_continue = (self.can_continue and retries_left and partial.continuable()
                        and continuation_body(call.body or {}, *partial.text_so_far(), call.path) is not None)
        step = next_step(resumes=self.resumes, final=self._final, resume_from=resume_from,
                         can_resend=can_resend, content_seen=partial.has_content(),
                         can_continue=can_continue)
        if step == "resume" and resume_from is not None:
            return Step("resume", resume_from, f"resuming response {resume_from[0]} after event {resume_from[1]}")
        if step == "resend":
            return Step("resend", (), "sending the request again (no content had arrived)")
        if step == "continue":
            text, shown = partial.text_so_far()
            return Step("continue", (text, shown), f"continuing the answer after its first {len(text)} characters")
        return None

    def resume_failed(self, err: APIError, what: str, exc: APIError) -> APIError:
        """The error raised when the step after ``err`` failed too (``exc``): a cut's, naming
        both; an error event's (``err`` a status error) as it was, the step's failure its cause."""
        self._final = True
        if isinstance(err, APIStatusError):
            return err
        return self._incomplete(f"{err.message}; {what} failed: {exc.message}")

    def resumed(self, response: httpx.Response, decoder: StreamDecoder, kind: StepKind,
                args: tuple[Any, ...]) -> None:
        """The stream goes on with ``response`` (read with ``decoder``)."""
        self.decoder = decoder
        self.request_id = response.headers.get("x-request-id", self.request_id)
        self.request = response.request
        self._response = response
        self.resumes += 1
        record = self.call.record
        record.resumes += 1
        if kind == "resume":  # resumed after event args[1]
            self._expect_seq = args[1] + 1
        else:  # sent again or continued (a retry of the call): its role chunk was delivered already
            record.retries += 1
            self._skip_opening = True
            if kind == "continue" and self._messages:
                self._seam = messages_seam(args[0])
        self.cut_by_event = False
        self.pending = None
        self.last_event = time.monotonic()
        self._keepalives = False
        self._had_event = False  # the silence before a resume is no gap of the stream's rhythm

    # -- early resume (api/early_resume.py does the I/O) ------------------------------------

    def early_after(self) -> float:
        """Seconds of silence before an early resume (``pipeline.resume.early_resume_after``)."""
        return early_resume_after(self.gaps, self.idle)

    def early_from(self, closed: bool) -> tuple[str, int] | None:
        """Where an early resume would start now, or None when none may (budget spent, an error
        no resume mends, the stream ended or was closed, nothing numbered delivered yet)."""
        partial = self._partial
        if self._final or self._end is not None or self.resumes >= MAX_RESUMES or closed \
                or partial.response_id is None or partial.last_sequence_number is None:
            return None
        return partial.response_id, partial.last_sequence_number


# Anthropic's error types that say the server failed mid-answer (its errors reference, read
# 2026-12-08: 529 overloaded_error, 500 api_error): the answer stopped as on a cut connection.
SERVER_FAILURES = frozenset({"overloaded_error", "api_error"})


def _server_failure(obj: dict[str, Any]) -> bool:
    err = obj.get("error")
    return isinstance(err, dict) and err.get("type") in SERVER_FAILURES


def _trim_seam(obj: dict[str, Any], seam: str) -> tuple[dict[str, Any] | None, str]:
    """A continuation's first text delta without the white space the app has already (``seam``,
    or as much of its head as the delta holds): (the delta, or None when that is all it is; the
    white space still to drop from the next one)."""
    delta = obj.get("delta")
    text = delta.get("text") if isinstance(delta, dict) else None
    if not isinstance(text, str):
        return obj, ""
    n = 0
    while n < len(text) and n < len(seam) and text[n] == seam[n]:
        n += 1
    if n == 0:
        return obj, ""
    if n == len(text):
        return None, seam[n:]
    return {**obj, "delta": {**delta, "text": text[n:]}}, ""  # type: ignore[dict-item]


def _opening_only(chunk: dict[str, Any]) -> bool:
    """A chunk that only opens choices (the role, empty content): nothing generated, finished
    or counted in it."""
    if chunk.get("usage") or has_token(chunk):
        return False
    return not any(choice.get("finish_reason") for choice in chunk.get("choices") or ())


def unfinished_message(choices: dict[int, bool], done: bool) -> str | None:
    """Why a stream whose body ended is not complete (None when it is): a choice with no
    finish_reason, or no choice at all. ``choices``: index -> finish_reason seen."""
    end = "with [DONE]" if done else "without [DONE]"
    if not choices:
        return f"Incomplete stream: the stream ended {end} before any choice"
    open_ = sorted(i for i, finished in choices.items() if not finished)
    if not open_:
        return None
    if len(open_) == 1:
        return f"Incomplete stream: the stream ended {end} but choice {open_[0]} has no finish_reason"
    names = ", ".join(str(i) for i in open_)
    return f"Incomplete stream: the stream ended {end} but choices {names} have no finish_reason"


def _error_message(obj: dict[str, Any]) -> str:
    err = obj.get("error", obj)  # {"error": {...}}, or a typed error event itself
    if isinstance(err, dict) and err.get("message"):
        return f"Error in stream: {err['message']}"
    return f"Error in stream: {err!r}"
