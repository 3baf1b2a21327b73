"""Streamed responses: SSE chunks as objects, sync and async, with clean cancellation.

A stream is complete only when every choice it carried got a finish_reason; anything else
raises :class:`IncompleteStreamError` (never a silently truncated answer). ``[DONE]`` alone
is not completion: llama-cpp-python's server, for one, ends a stream it interrupts (a new
request arrived) with ``[DONE]`` and no finish_reason. A stream that ends without ``[DONE]``
but with every choice finished is accepted, as some servers never send it. After ``[DONE]`` the
body is still read to its end so the connection stays reusable (the official client stops at
``[DONE]``, which over HTTP/1.1 forces a new connection per stream). Closing early sends
RST_STREAM over HTTP/2 (see ``_transport``) so the server stops generating.

A stream without an event for ``stream_idle_timeout`` seconds ends with ``APITimeoutError``
(``pipeline.watchdog``). A stream that ends early, cut or stalled, raises with what it delivered
so far as ``.partial`` (``api.partial``): nothing that arrived is thrown away.
"""

from __future__ import annotations

import math
import sys
import time
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import httpx

from .. import _official
from .._errors import APIError, APITimeoutError, IncompleteStreamError, OpenAIError
from .._logging import current_trace_id
from ..features import otel as _otel
from ..pipeline.resume import (
    MAX_RESUMES,
    continuation_body,
    early_resume_after,
    next_step,
    out_of_order,
    resume_delay,
)
from ..pipeline.watchdog import stall_message, stalled
from ..wire.codec import RESPONSE_END_EVENTS, RESPONSES_PATH, has_token
from .early_resume import SyncEarlyResume, Won, aopen_until_event, open_until_event
from .partial import PartialTracker

if TYPE_CHECKING:
    from ..pipeline.call import Call
    from ..pipeline.timings import CallRecord
    from ..wire.codec import StreamDecoder

__all__ = ["AsyncStream", "Stream"]

_T = TypeVar("_T")


class _StreamBase(Generic[_T]):
    response: httpx.Response

    def __init__(
        self,
        response: httpx.Response,
        call: Call,
        decoder: StreamDecoder,
        make: Callable[[dict[str, Any]], _T],
        on_complete: Callable[[Call, list[dict[str, Any]]], None] | None = None,
        resume: Callable[[str, int], Any] | None = None,
        resend: Callable[[], Any] | None = None,
        proceed: Callable[[str, int], Any] | None = None,
    ) -> None:
        self.response = response
        self._call = call
        self._decoder = decoder
        self._make = make
        self._on_complete = on_complete
        self._chunks: list[dict[str, Any]] | None = [] if on_complete else None
        # A Responses stream is typed events, complete at its final event (``_end``) instead.
        self._events = call.path == RESPONSES_PATH
        self._end: str | None = None
        self._closed = False
        self.trace_id = call.trace.trace_id
        self._request_id = response.headers.get("x-request-id")
        self._partial = PartialTracker()
        # The watchdog: the time of the last event, and whether bytes came since (keep-alives).
        self._idle = call.options.stream_idle_timeout
        self._last_event = time.monotonic()
        self._keepalives = False
        # Resuming a cut background stream (pipeline.resume): resume(response_id, after) gives
        # (response, decoder) for the events after ``after``; the sequence number expected next.
        self._resume = resume
        self._resend = resend  # a chat stream that failed before content: send it again
        # stream_resume="continue": proceed(text, shown) continues a chat answer cut after content
        self._proceed = proceed
        self._skip_opening = False  # a re-sent stream's role chunk: its twin was delivered
        self._resumes = 0
        self._expect_seq: int | None = None
        self._final = False  # an error no resume can mend (events out of order, resume refused)
        # Early resume (pipeline.resume.early_resume_after, api.early_resume): a background
        # stream's inter-event gaps, and the body's chunk iterator (a winner's, begun already).
        self._early = resume is not None and call.options.stream_early_resume
        self._gaps: deque[float] = deque(maxlen=64)
        self._had_event = False
        self._raw: Any = None
        self._watch: SyncEarlyResume | None = None
        self._asked = 0.0  # when the app last came back for more (monotonic)

    @property
    def timings(self) -> CallRecord:
        return self._call.record

    def _progress(self, objs: list[dict[str, Any]]) -> None:
        """The watchdog's view of one read: events are progress; bytes without one are not."""
        now = time.monotonic()
        if objs:
            if self._early and self._call.record.first_token_ms is not None:
                # the rhythm of the answer's tokens: not the wait for the first (the prefill)
                if self._had_event:
                    self._gaps.append(now - self._last_event)
                self._had_event = True
            self._last_event = now
            self._keepalives = False
        else:
            self._keepalives = True
            if stalled(now, self._last_event, self._idle):
                raise self._stall(now)

    def _stall(self, now: float) -> APIError:
        self._call.record.finish()
        return self._annotate(APITimeoutError(stall_message(
            now - self._last_event, self._idle or 0.0, self._partial.events, self._keepalives)))

    def _handle(self, objs: list[dict[str, Any]]) -> list[_T]:
        self._progress(objs)
        if self._events:
            return self._handle_events(objs)
        out = []
        record = self._call.record
        partial = self._partial
        for obj in objs:
            if obj.get("error") or obj.get("type") == "error":
                raise self._annotate(APIError(_error_message(obj), body=obj))
            if self._skip_opening:
                if _opening_only(obj):
                    continue
                self._skip_opening = False
            if record.first_token_ms is None and has_token(obj):
                record.mark_first_token()
            partial.chunk(obj, obj.get("choices"))  # also each choice's finish_reason
            if self._chunks is not None:
                self._chunks.append(obj)
            out.append(self._make(obj))
        return out

    def _handle_events(self, objs: list[dict[str, Any]]) -> list[_T]:
        """Responses API events: yielded as they come, ``error`` events included (as the
        official client yields them); a bare ``{"error": ...}`` (a proxy's) raises."""
        out = []
        record = self._call.record
        for obj in objs:
            if self._expect_seq is not None:
                wrong = out_of_order(self._expect_seq, obj.get("sequence_number"))
                if wrong is not None:
                    self._final = True
                    raise self._incomplete(f"Incomplete stream: {wrong}")
                self._expect_seq += 1
            kind = obj.get("type")
            if kind is None and obj.get("error"):
                raise self._annotate(APIError(_error_message(obj), body=obj))
            if record.first_token_ms is None and has_token(obj):
                record.mark_first_token()
            if kind in RESPONSE_END_EVENTS:
                self._end = kind
            self._partial.event(obj)
            if self._chunks is not None:
                self._chunks.append(obj)
            out.append(self._make(obj))
        return out

    def _finish(self) -> None:
        record = self._call.record
        record.bytes_received += getattr(self.response.stream, "bytes_received", 0)
        record.finish()
        try:
            self._decoder.close()
        except OpenAIError as exc:
            raise self._annotate(exc) from None
        if self._events:
            if self._end is None:
                raise self._incomplete("Incomplete stream: the stream ended before "
                                       "response.completed, response.incomplete, response.failed "
                                       "or error")
            unfinished = None
        else:
            unfinished = unfinished_message(self._partial.finished(), self._decoder.done)
        if unfinished is not None:
            raise self._incomplete(unfinished)
        self.__dict__["_complete"] = True
        # Only a whole answer is kept (cache) or followed up (prefetch): not a failed response.
        if self._on_complete is not None and self._chunks is not None and self._end in (None, "response.completed"):
            self._on_complete(self._call, self._chunks)

    def _incomplete(self, message: str) -> APIError:
        return self._annotate(IncompleteStreamError(message))

    def _transport_error(self, exc: Exception) -> APIError:
        if isinstance(exc, httpx.ReadTimeout) and self._watchdog_read():
            return self._stall(time.monotonic())
        self._call.record.finish()
        if isinstance(exc, httpx.TimeoutException):
            return self._annotate(APITimeoutError(f"Stream read timed out ({type(exc).__name__})"))
        return self._incomplete(
            f"Incomplete stream: the connection failed mid-stream ({type(exc).__name__}: {exc})")

    def _next_step(self) -> tuple[Callable[..., Any], tuple[Any, ...], str] | None:
        """How a failed stream goes on (``pipeline.resume.next_step``): the function that gives
        the next (response, decoder), its arguments and what it does, or None (raise)."""
        partial = self._partial
        resume_from = None
        if self._resume is not None and partial.response_id is not None \
                and partial.last_sequence_number is not None:
            resume_from = (partial.response_id, partial.last_sequence_number)
        record = self._call.record
        retries_left = record.retries < self._call.max_retries
        can_resend = self._resend is not None and retries_left
        can_continue = (self._proceed is not None and retries_left and partial.continuable()
                        and continuation_body(self._call.body or {}, *partial.text_so_far()) is not None)
        step = next_step(resumes=self._resumes, final=self._final, resume_from=resume_from,
                         can_resend=can_resend, content_seen=partial.has_content(),
                         can_continue=can_continue)
        if step == "resume" and self._resume is not None and resume_from is not None:
            return (self._resume, resume_from,
                    f"resuming response {resume_from[0]} after event {resume_from[1]}")
        if step == "resend" and self._resend is not None:
            return self._resend, (), "sending the request again (no content had arrived)"
        if step == "continue" and self._proceed is not None:
            text, shown = partial.text_so_far()
            return (self._proceed, (text, shown),
                    f"continuing the answer after its first {len(text)} characters")
        return None

    def _resume_failed(self, err: APIError, what: str, exc: APIError) -> APIError:
        self._final = True
        return self._incomplete(f"{err.message}; {what} failed: {exc.message}")

    def _resumed(self, response: httpx.Response, decoder: Any, again: Callable[..., Any],
                 args: tuple[Any, ...]) -> None:
        self.response = response
        self._decoder = decoder
        self._resumes += 1
        self._call.record.resumes += 1
        if again is self._resume:  # resumed after event args[1]
            self._expect_seq = args[1] + 1
        else:  # sent again or continued (a retry of the call): its role chunk was delivered already
            self._call.record.retries += 1
            self._skip_opening = True
        self._last_event = time.monotonic()
        self._keepalives = False
        self._had_event = False  # the silence before a resume is no gap of the stream's rhythm
        self._raw = None

    def _early_after(self) -> float:
        """Seconds of silence before an early resume (``pipeline.resume.early_resume_after``)."""
        return early_resume_after(self._gaps, self._idle)

    def _early_from(self) -> tuple[str, int] | None:
        """Where an early resume would start now, or None when none may (budget spent, an error
        no resume mends, the stream ended, nothing numbered delivered yet)."""
        partial = self._partial
        if self._final or self._end is not None or self._resumes >= MAX_RESUMES or self._closed \
                or partial.response_id is None or partial.last_sequence_number is None:
            return None
        return partial.response_id, partial.last_sequence_number

    def _take_won(self, won: Won) -> list[dict[str, Any]]:
        """Go on with the early resume that won: its response, decoder and begun body; its first
        events to deliver. The silent response is closed by the caller."""
        response, decoder, chunks, objs, args = won
        self._resumed(response, decoder, self._resume, args)  # type: ignore[arg-type]
        self._call.record.early_resumes_won += 1
        self._raw = chunks
        return objs

    def _resume_span(self, again: Callable[..., Any]) -> Any:
        """The resume's own span (``features.otel``), when the call has one."""
        if not _otel._live:
            return None
        step = "resume" if again is self._resume else "resend" if again is self._resend else "continue"
        return _otel.resume_start(self._call, step, self._resumes + 1)

    def _watchdog_read(self) -> bool:
        """Whether the read that timed out waited the idle limit (not a shorter read timeout)."""
        read = self._call.timeout.read
        return self._idle is not None and (read is None or read >= self._idle)

    def _end_span(self) -> None:
        # The call's OpenTelemetry span (llmclient.features.otel) ends with the stream: complete, cut
        # (the error being raised through the iterator's finally) or closed early.
        if _otel._live:
            _otel.stream_end(self._call, sys.exc_info()[1], self.__dict__.get("_complete", False))

    def _annotate(self, err: Any) -> Any:
        if isinstance(err, APIError):
            err.trace_id = self.trace_id
            err.request_id = self._request_id
            err.timings = self._call.record
            err.request = self.response.request
        if isinstance(err, (IncompleteStreamError, APITimeoutError)) and err.partial is None:
            err.partial = self._partial.answer()  # nothing that arrived is thrown away
        return err


class Stream(_StreamBase[_T]):
    def __iter__(self) -> Iterator[_T]:
        token = current_trace_id.set(self.trace_id)
        try:
            while True:
                # a background stream: a watcher resumes it early if it goes silent (early_resume)
                watch = self._watch = SyncEarlyResume(self) if self._early else None
                try:
                    try:
                        if self._raw is None:
                            self._raw = iter(self.response.stream)  # type: ignore[arg-type]
                        for raw in self._raw:
                            if self._decoder.done:
                                continue  # drain to the end so the connection is reusable
                            objs = self._decoder.feed(raw)
                            if watch is None:
                                yield from self._handle(objs)
                                continue
                            if watch.won is None and not objs:
                                self._handle(objs)  # keep-alives: the watchdog's view only
                                continue
                            items = watch.handle(self._handle, objs) if watch.won is None else None
                            if items is None:
                                break  # the early resume won: these events are its to deliver
                            self._asked = math.inf  # the app has them: no silence of the server
                            yield from items
                            self._asked = time.monotonic()
                    except httpx.TransportError as exc:
                        if watch is None or watch.won is None:
                            raise self._transport_error(exc) from exc
                    except APIError as exc:  # a malformed chunk: the call's trace id, as every APIError
                        raise self._annotate(exc)  # noqa: B904 (the same error, annotated)
                    won = watch.take() if watch is not None else None
                    if won is not None:
                        _close_quietly(self.response)
                        yield from self._handle(self._take_won(won))
                        continue
                    self._finish()
                    return
                except (IncompleteStreamError, APITimeoutError) as err:
                    step = self._next_step()
                    if step is None:
                        raise
                    self._reconnect(err, *step)
                finally:
                    if watch is not None:
                        watch.stop()
        finally:
            _reset(token)
            self.close()

    def _early_open(self, args: tuple[str, int]) -> Won | None:
        """The early resume, read to its first event, in its own span (the watcher's thread)."""
        span = _otel.resume_start(self._call, "early_resume", self._resumes + 1) if _otel._live else None
        try:
            won = open_until_event(self._resume, args)  # type: ignore[arg-type]
        except BaseException as exc:
            _otel.resume_end(span, exc)
            raise
        _otel.resume_end(span, None)
        return won

    def _reconnect(self, err: APIError, again: Callable[..., Any], args: tuple[Any, ...],
                   what: str) -> None:
        """Go on after ``err``: the rest of a background stream, or the chat request sent again
        (``pipeline.resume``)."""
        try:
            self.response.close()
        except Exception:
            pass
        time.sleep(resume_delay(self._resumes))
        span = self._resume_span(again)
        try:
            response, decoder = again(*args)
        except APIError as exc:
            _otel.resume_end(span, exc)
            raise self._resume_failed(err, what, exc) from exc
        _otel.resume_end(span, None)
        self._resumed(response, decoder, again, args)

    def __next__(self) -> _T:
        it = self.__dict__.get("_iter")
        if it is None:
            it = self.__dict__["_iter"] = iter(self)
        return next(it)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            if self._watch is not None:
                self._watch.stop()
            try:
                self.response.close()
            finally:
                self._end_span()

    def __del__(self) -> None:
        # A stream dropped without being read or closed still gives its connection slot back.
        if not self.__dict__.get("_closed", True):
            try:
                self.close()
            except Exception:
                pass

    def __enter__(self) -> Stream[_T]:
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


class AsyncStream(_StreamBase[_T]):
    async def __aiter__(self) -> AsyncIterator[_T]:
        token = current_trace_id.set(self.trace_id)
        try:
            while True:
                try:
                    try:
                        if self._early:  # a background stream: resumed early if it goes silent
                            reads = self._early_reads()
                            try:
                                async for objs in reads:
                                    for item in self._handle(objs):
                                        yield item
                            finally:
                                await reads.aclose()  # its tasks: none left behind
                        else:
                            async for raw in self.response.stream:  # type: ignore[union-attr]
                                if self._decoder.done:
                                    continue
                                for item in self._handle(self._decoder.feed(raw)):
                                    yield item
                    except httpx.TransportError as exc:
                        raise self._transport_error(exc) from exc
                    except APIError as exc:  # a malformed chunk: the call's trace id, as every APIError
                        raise self._annotate(exc)  # noqa: B904 (the same error, annotated)
                    self._finish()
                    return
                except (IncompleteStreamError, APITimeoutError) as err:
                    step = self._next_step()
                    if step is None:
                        raise
                    await self._reconnect(err, *step)
        finally:
            _reset(token)
            await self.close()

    async def _early_reads(self) -> AsyncGenerator[list[dict[str, Any]], None]:
        """The events of the current response, batch by batch, racing an early resume when it
        goes silent past :meth:`_early_after` (``api.early_resume``): the silent read and the
        resume are two tasks; the first to bring an event wins, the other is cancelled."""
        import asyncio  # heavy: loaded by the async client's first use, not `import llmclient`

        chunks = self._raw if self._raw is not None else self.response.stream.__aiter__()  # type: ignore[union-attr]
        self._raw = None
        pending: asyncio.Future[Any] | None = None  # the next chunk of the current response
        early: asyncio.Future[Any] | None = None  # the early resume, read to its first event
        spent = False  # an early resume failed or lost: none again until the stream moves
        try:
            while True:
                if pending is None:
                    pending = asyncio.ensure_future(chunks.__anext__())
                timeout = None
                if early is None and not spent:
                    wait = max(self._last_event, self._asked) + self._early_after() - time.monotonic()
                    args = self._early_from() if wait <= 0 else None
                    if args is not None:
                        self._call.record.early_resumes += 1
                        early = asyncio.ensure_future(self._early_open(args))
                    elif wait > 0:
                        timeout = wait
                racing = {pending} if early is None else {pending, early}
                done, _ = await asyncio.wait(racing, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
                if pending in done:  # the silent connection first (a tie too: its events came first)
                    task, pending = pending, None
                    try:
                        raw = task.result()
                    except StopAsyncIteration:
                        return
                    except httpx.TransportError:
                        if early is None:
                            raise
                        await asyncio.wait({early})  # the connection failed: the resume may win
                        won, early = _won(early), None
                        if won is None:
                            raise
                    else:
                        if self._decoder.done:
                            continue
                        objs = self._decoder.feed(raw)
                        if objs:
                            spent = False
                            if early is not None:  # it spoke before the resume: the resume goes
                                await _drop(early)
                                early = None
                        yield objs
                        self._asked = time.monotonic()  # the app is back for more
                        continue
                else:
                    if early is None or early not in done:
                        continue  # the threshold passed: the next turn opens the resume
                    won, early = _won(early), None
                    if won is None:
                        spent = True
                        continue
                    await _drop(pending)
                    pending = None
                await _aclose_quietly(self.response)
                objs = self._take_won(won)
                chunks, self._raw = self._raw, None
                yield objs
                self._asked = time.monotonic()
        finally:
            for left in (pending, early):
                if left is not None:
                    await _drop(left)

    async def _early_open(self, args: tuple[str, int]) -> Won | None:
        """See :meth:`Stream._early_open`."""
        span = _otel.resume_start(self._call, "early_resume", self._resumes + 1) if _otel._live else None
        try:
            won = await aopen_until_event(self._resume, args)  # type: ignore[arg-type]
        except BaseException as exc:
            _otel.resume_end(span, exc)
            raise
        _otel.resume_end(span, None)
        return won

    async def _reconnect(self, err: APIError, again: Callable[..., Any], args: tuple[Any, ...],
                         what: str) -> None:
        """See :meth:`Stream._reconnect`."""
        import asyncio  # heavy: loaded by the async client's first use, not `import llmclient`

        try:
            await self.response.aclose()
        except Exception:
            pass
        await asyncio.sleep(resume_delay(self._resumes))
        span = self._resume_span(again)
        try:
            response, decoder = await again(*args)
        except APIError as exc:
            _otel.resume_end(span, exc)
            raise self._resume_failed(err, what, exc) from exc
        _otel.resume_end(span, None)
        self._resumed(response, decoder, again, args)

    async def __anext__(self) -> _T:
        it = self.__dict__.get("_aiter")
        if it is None:
            it = self.__dict__["_aiter"] = self.__aiter__()
        return await it.__anext__()

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            try:
                await self.response.aclose()
            finally:
                self._end_span()

    def __del__(self) -> None:
        # A stream dropped unread and unclosed cannot be awaited here; the transport can still
        # reset its HTTP/2 stream and give the connection slot back without awaiting.
        if not self.__dict__.get("_closed", True):
            self._closed = True
            self._end_span()
            abandon = getattr(getattr(self, "response", None) and self.response.stream, "abandon", None)
            if abandon is not None:
                try:
                    abandon()
                except Exception:
                    pass

    async def __aenter__(self) -> AsyncStream[_T]:
        return self

    async def __aexit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        await self.close()


def _close_quietly(response: httpx.Response) -> None:
    try:
        response.close()
    except Exception:
        pass


async def _aclose_quietly(response: httpx.Response) -> None:
    try:
        await response.aclose()
    except Exception:
        pass


def _won(task: Any) -> Won | None:
    """A finished early resume's winner (None: it failed, was cancelled or found no event)."""
    if task.cancelled() or task.exception() is not None:
        return None
    won: Won | None = task.result()
    return won


async def _drop(task: Any) -> None:
    """Cancel a task and wait for it to unwind; an early resume that finished meanwhile has its
    response closed (its events are not wanted)."""
    import asyncio  # heavy: loaded by the async client's first use, not `import llmclient`

    if not task.done():
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            if not task.cancelled():
                raise  # the stream's own task is being cancelled
            return
        except Exception:
            return
    if not task.cancelled() and task.exception() is None:
        result = task.result()
        if isinstance(result, tuple) and result and isinstance(result[0], httpx.Response):
            await _aclose_quietly(result[0])


def _reset(token: Any) -> None:
    try:
        current_trace_id.reset(token)
    except ValueError:  # the generator was finalised in another context (GC, another task)
        pass


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


# With ``openai`` imported, ``isinstance(stream, openai.Stream)`` holds too (``_official``).
_official.register(Stream, AsyncStream, hide=True)
