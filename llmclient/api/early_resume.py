"""Early resume of a silent background stream: the I/O beside ``pipeline.resume.early_resume_after``.

A background Responses stream silent for longer than its learned threshold gets its resume GET
(``starting_after`` = the last delivered ``sequence_number``) opened beside the silent
connection; whichever brings the next event first wins, and the other is closed. The resume only
reads the server's event log, so racing it generates nothing twice.

- sync (:class:`SyncEarlyResume`): a daemon thread per stream watches the time since its last
  event. Past the threshold it opens the resume and reads it to its first event; if the stream's
  own thread delivered nothing meanwhile (one lock decides) it claims the win and cancels the
  silent request through its ``CancelToken`` (HTTP/2 resets the stream, HTTP/1.1 closes the
  connection), so the blocked read returns at once.
- async (:func:`first_event`): the silent read and the resume are two tasks; the first to bring
  an event wins and the other task is cancelled (its response closed).
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx

__all__ = ["EarlyResumeWon", "SyncEarlyResume", "aopen_until_event", "open_until_event"]


class EarlyResumeWon(httpx.ReadError):
    """Fails the silent request of a stream whose early resume brought the next event first."""

    def __init__(self) -> None:
        super().__init__("an early resume of this background stream delivered the next event first")


# What an early resume brings: (response, decoder, its body's chunk iterator, the first events,
# the (response_id, after) it resumed from).
Won = tuple[httpx.Response, Any, Any, list[dict[str, Any]], tuple[str, int]]


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


class SyncEarlyResume:
    """The watcher of one sync background stream (see the module's docstring).

    ``stream`` (a ``Stream``) gives ``_early_after()`` (the threshold now, seconds),
    ``_early_from()`` (the (response_id, after) to resume from, or None when no resume is
    allowed now), ``_last_event`` (monotonic time), ``_early_open`` (the resume read to its
    first event), ``response`` (the silent one) and ``_call.record``."""

    def __init__(self, stream: Any) -> None:
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
        """The stream's thread takes events from its connection (``handle(objs)``: the stream's
        bookkeeping, what it will yield), or None when the early resume already won (those
        events are the resume's to deliver). Under the lock the watcher reads where to resume
        from: never half a batch."""
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
            _close(won[0])

    def _run(self) -> None:
        stream = self._stream
        while True:
            with self._lock:
                if self._stopped:
                    return
                seen = self._delivered
                args = stream._early_from()
            # silence counts from the last event, or from when the app asked for more (an app
            # slow to read leaves events waiting in the connection: no silence of the server)
            wait = max(stream._last_event, stream._asked) + stream._early_after() - time.monotonic()
            if wait > 0:
                self._wake.wait(min(wait, 0.5))  # the app may come back for more meanwhile
                continue
            if args is None:  # no resume allowed now: wait for the stream to move (or end)
                self._wake.wait(stream._early_after())
                continue
            stream._call.record.early_resumes += 1
            try:
                won = stream._early_open(args)
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
                _close(won[0])
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


def _close(response: httpx.Response) -> None:
    try:
        response.close()
    except Exception:
        pass
