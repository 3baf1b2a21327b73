"""What a stream does that the sync and async clients really do differently, written by hand
twice, side by side (the stream's iterator itself is written once: ``api/_async/streaming.py``):
the early resume of a silent background stream, and a stream dropped unread.

A background Responses stream silent for longer than its learned threshold
(``pipeline.resume.early_resume_after``) gets its resume GET (``starting_after`` = the last
delivered ``sequence_number``) opened beside the silent connection; whichever brings the next
event first wins, and the other is closed. The resume only reads the server's event log, so
racing it generates nothing twice.

- sync (:func:`early_reads`, :class:`SyncEarlyResume`): a daemon thread per stream watches the
  time since its last event. Past the threshold it opens the resume and reads it to its first
  event; if the stream's own thread delivered nothing meanwhile (one lock decides) it claims the
  win and cancels the silent request through its ``CancelToken`` (HTTP/2 resets the stream,
  HTTP/1.1 closes the connection), so the blocked read returns at once.
- async (:func:`aearly_reads`): the silent read and the resume are two tasks; the first to bring
  an event wins and the other task is cancelled (its response closed).

A stream dropped unread and unclosed (:func:`dropped`, :func:`adropped`) still gives its
connection slot back: the sync one closes, the async one cannot await its close and resets its
HTTP/2 stream without awaiting.
"""

from __future__ import annotations

import contextvars
import math
import threading
import time
from collections.abc import AsyncGenerator, Callable, Generator
from typing import TYPE_CHECKING, Any

import httpx

from ..features import otel as _otel
from ..pipeline.stream_session import Step

if TYPE_CHECKING:
    from ._async.streaming import AsyncStream
    from ._sync.streaming import Stream

__all__ = ["EarlyResumeWon", "SyncEarlyResume", "aclose_quietly", "adropped", "aearly_reads", "aopen_until_event",
           "close_quietly", "dropped", "early_reads", "open_until_event"]


class EarlyResumeWon(httpx.ReadError):
    """Fails the silent request of a stream whose early resume brought the next event first."""

    def __init__(self) -> None:
        super().__init__("an early resume of this background stream delivered the next event first")


# What an early resume brings: (response, decoder, its body's chunk iterator, the first events,
# the (response_id, after) it resumed from).
Won = tuple[httpx.Response, Any, Any, list[dict[str, Any]], tuple[str, int]]


def close_quietly(response: httpx.Response) -> None:
    try:
        response.close()
    except Exception:
        pass


async def aclose_quietly(response: httpx.Response) -> None:
    try:
        await response.aclose()
    except Exception:
        pass


def _take_won(stream: Any, won: Won) -> list[Any]:
    """Go on with the early resume that won: its response, decoder and begun body; its first
    events, as the app gets them, to deliver. The silent response is closed by the caller."""
    response, decoder, chunks, objs, args = won
    stream.resumed(response, decoder, Step("resume", args, "an early resume"))
    stream._call.record.early_resumes_won += 1
    stream._raw = chunks
    return stream._session.handle(objs)


# --------------------------------------------------------------------------- sync


def open_until_event(resume: Callable[[str, int], Any], args: tuple[str, int]) -> Won | None:
    """The resume GET, read to its first event (None: its body ended without one)."""
    response, decoder = resume(*args)
    try:
        chunks = iter(response.stream)
        for raw in chunks:
            objs = decoder.feed(raw)
            if objs:
                return response, decoder, chunks, objs, args
    except BaseException:
        response.close()
        raise
    response.close()
    return None


def early_open(stream: Stream[Any], args: tuple[str, int]) -> Won | None:
    """The early resume, read to its first event, in its own span (the watcher's thread)."""
    span = _otel.resume_start(stream._call, "early_resume", stream._session.resumes + 1) if _otel._live else None
    try:
        won = open_until_event(stream._steps["resume"], args)  # type: ignore[arg-type]
    except BaseException as exc:
        _otel.resume_end(span, exc)
        raise
    _otel.resume_end(span, None)
    return won


def early_reads(stream: Stream[Any]) -> Generator[list[Any], None, None]:
    """The events of a sync background stream, batch by batch, with a watcher thread that
    resumes it early if it goes silent (the winner's events follow; the silent read is
    cancelled)."""
    session = stream._session
    while True:
        watch = stream._watch = SyncEarlyResume(stream)
        try:
            try:
                if stream._raw is None:
                    stream._raw = iter(stream.response.stream)  # type: ignore[arg-type]
                for raw in stream._raw:
                    decoder = session.decoder
                    if decoder.done:
                        continue  # drain to the end so the connection is reusable
                    objs = decoder.feed(raw)
                    if watch.won is None and not objs:
                        session.handle(objs)  # keep-alives: the watchdog's view only
                        continue
                    items = watch.handle(session.handle, objs) if watch.won is None else None
                    if items is None:
                        break  # the early resume won: these events are its to deliver
                    stream._asked = math.inf  # the app has them: no silence of the server
                    yield items
                    stream._asked = time.monotonic()
            except httpx.TransportError:
                if watch.won is None:
                    raise
            won = watch.take()
            if won is None:
                return
            close_quietly(stream.response)
            yield _take_won(stream, won)
        finally:
            watch.stop()


def dropped(stream: Stream[Any]) -> None:
    try:
        stream.close()
    except Exception:
        pass


class SyncEarlyResume:
    """The watcher of one sync background stream (see the module's docstring): the stream's
    session gives the threshold (``early_after()``), where to resume from (``early_from()``)
    and the time of its last event; the stream its silent ``response`` and ``_asked``."""

    def __init__(self, stream: Stream[Any]) -> None:
        self._stream = stream
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._delivered = 0  # event batches the stream's thread delivered
        self._stopped = False
        self.won: Won | None = None
        run = contextvars.copy_context().run  # the trace id, for the resume's logs
        self._thread = threading.Thread(target=run, args=(self._run,), daemon=True,
                                        name="llmclient-early-resume")
        self._thread.start()

    def handle(self, handle: Callable[[list[dict[str, Any]]], list[Any]],
               objs: list[dict[str, Any]]) -> list[Any] | None:
        """The stream's thread takes events from its connection (``handle(objs)``: the
        session's bookkeeping, what it will deliver), or None when the early resume already won
        (those events are the resume's to deliver). Under the lock the watcher reads where to
        resume from: never half a batch."""
        with self._lock:
            if self.won is not None:
                return None
            self._delivered += 1
            return handle(objs)

    def take(self) -> Won | None:
        """The winner, for the stream's thread to go on with (once)."""
        with self._lock:
            won, self.won = self.won, None
            self._stopped = True
        return won

    def stop(self) -> None:
        """The stream ended or swapped in the winner: the watcher ends, closing anything unused."""
        with self._lock:
            self._stopped = True
            won, self.won = self.won, None
        self._wake.set()
        if won is not None:
            close_quietly(won[0])

    def _run(self) -> None:
        stream = self._stream
        session = stream._session
        while True:
            with self._lock:
                if self._stopped:
                    return
                seen = self._delivered
                args = session.early_from(stream._closed)
            # silence counts from the last event, or from when the app asked for more (an app
            # slow to read leaves events waiting in the connection: no silence of the server)
            wait = max(session.last_event, stream._asked) + session.early_after() - time.monotonic()
            if wait > 0:
                self._wake.wait(min(wait, 0.5))  # the app may come back for more meanwhile
                continue
            if args is None:  # no resume allowed now: wait for the stream to move (or end)
                self._wake.wait(session.early_after())
                continue
            stream._call.record.early_resumes += 1
            try:
                won = early_open(stream, args)
            except Exception:
                won = None
            if won is None:  # refused or failed: the watchdog's own resume decides at the limit
                self._until_progress(seen)
                continue
            with self._lock:
                claim = not self._stopped and self._delivered == seen
                if claim:
                    self.won = won
            if not claim:  # the silent connection spoke first (or the stream ended)
                close_quietly(won[0])
                self._until_progress(seen)
                continue
            try:
                token = stream.response.request.extensions.get("llmclient.cancel")
            except RuntimeError:  # a response without its request
                token = None
            if token is not None:
                token.cancel(EarlyResumeWon())
            return

    def _until_progress(self, seen: int) -> None:
        while True:
            with self._lock:
                if self._stopped or self._delivered != seen:
                    return
            self._wake.wait(0.05)


# --------------------------------------------------------------------------- async


async def aopen_until_event(resume: Callable[[str, int], Any], args: tuple[str, int]) -> Won | None:
    """:func:`open_until_event` for the async client (a task: cancelled, it closes what it opened)."""
    response, decoder = await resume(*args)
    try:
        chunks = response.stream.__aiter__()
        async for raw in chunks:
            objs = decoder.feed(raw)
            if objs:
                return response, decoder, chunks, objs, args
    except BaseException:
        await response.aclose()
        raise
    await response.aclose()
    return None


async def aearly_open(stream: AsyncStream[Any], args: tuple[str, int]) -> Won | None:
    """See :func:`early_open`."""
    span = _otel.resume_start(stream._call, "early_resume", stream._session.resumes + 1) if _otel._live else None
    try:
        won = await aopen_until_event(stream._steps["resume"], args)  # type: ignore[arg-type]
    except BaseException as exc:
        _otel.resume_end(span, exc)
        raise
    _otel.resume_end(span, None)
    return won


async def aearly_reads(stream: AsyncStream[Any]) -> AsyncGenerator[list[Any], None]:
    """The events of an async background stream, batch by batch, racing an early resume when
    it goes silent past the session's ``early_after()``: the silent read and the resume are two
    tasks; the first to bring an event wins, the other is cancelled."""
    import asyncio  # heavy: loaded by the async client's first use, not `import llmclient`

    session = stream._session
    chunks = stream._raw if stream._raw is not None else stream.response.stream.__aiter__()  # type: ignore[union-attr]
    stream._raw = None
    pending: asyncio.Future[Any] | None = None  # the next chunk of the current response
    early: asyncio.Future[Any] | None = None  # the early resume, read to its first event
    spent = False  # an early resume failed or lost: none again until the stream moves
    try:
        while True:
            if pending is None:
                pending = asyncio.ensure_future(chunks.__anext__())
            timeout = None
            if early is None and not spent:
                wait = max(session.last_event, stream._asked) + session.early_after() - time.monotonic()
                args = session.early_from(stream._closed) if wait <= 0 else None
                if args is not None:
                    stream._call.record.early_resumes += 1
                    early = asyncio.ensure_future(aearly_open(stream, args))
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
                    decoder = session.decoder
                    if decoder.done:
                        continue
                    objs = decoder.feed(raw)
                    if objs:
                        spent = False
                        if early is not None:  # it spoke before the resume: the resume goes
                            await _drop(early)
                            early = None
                    yield session.handle(objs)
                    stream._asked = time.monotonic()  # the app is back for more
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
            await aclose_quietly(stream.response)
            objs = _take_won(stream, won)
            chunks, stream._raw = stream._raw, None
            yield objs
            stream._asked = time.monotonic()
    finally:
        for left in (pending, early):
            if left is not None:
                await _drop(left)


def adropped(stream: AsyncStream[Any]) -> None:
    """An async stream dropped unread cannot be awaited here; the transport can still reset its
    HTTP/2 stream and give the connection slot back without awaiting."""
    stream._closed = True
    stream._end_span()
    abandon = getattr(getattr(stream, "response", None) and stream.response.stream, "abandon", None)
    if abandon is not None:
        try:
            abandon()
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
            await aclose_quietly(result[0])
