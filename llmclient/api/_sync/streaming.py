# Generated from llmclient/api/_async/streaming.py by scripts/unasync.py: do not edit here, edit that
# file and run `python scripts/unasync.py` (make lint checks that this file is current).
"""Streamed responses: the events of a stream as the face's objects, sync and sync, with clean
cancellation. Written once as coroutines; ``scripts/unasync.py`` writes the blocking twin
(``api/_sync/streaming.py``).

The iterator is thin: it reads the body and drives the stream's
:class:`~llmclient.pipeline.stream_session.StreamSession`, which decodes, keeps the watchdog's
view and the partial answer, says when the stream is complete and, after a failure, how it goes
on (resume, send again, continue, or raise with ``.partial``); the iterator does the I/O and the
waits. After ``[DONE]`` the body is still read to its end so the connection stays reusable (the
official client stops at ``[DONE]``, which over HTTP/1.1 forces a new connection per stream).
Closing early sends RST_STREAM over HTTP/2 so the server stops generating. A background stream
that goes silent is resumed early, beside its silent connection (``api/early_resume.py``: the
race, a thread for the sync client and a task for the sync one, written by hand twice).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import httpx

from ... import _official
from ..._errors import APIError, APIStatusError, APITimeoutError, IncompleteStreamError
from ..._logging import current_trace_id
from ..._synchronization import sleep
from ...features import otel as _otel
from ...pipeline.resume import resume_delay
from ...pipeline.stream_session import StreamSession
from ..early_resume import close_quietly, dropped, early_reads

if TYPE_CHECKING:
    from ...pipeline.call import Call
    from ...pipeline.early_tools import ReadyToolCall, ToolCallCollector
    from ...pipeline.stream_session import Step
    from ...pipeline.timings import CallRecord
    from ...wire.codec import StreamDecoder

__all__ = ["Stream"]

_T = TypeVar("_T")


class Stream(Generic[_T]):
    """The events of one streamed call (drop-in for ``openai.Stream``)."""

    response: httpx.Response
    tool_collector: ToolCallCollector  # after tool_calls(): the chunks' message

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
        self._session = StreamSession(call, decoder, response, make, on_complete, can_resume=resume is not None,
                                      can_resend=resend is not None, can_continue=proceed is not None)
        # How the stream goes on after a failure (``StreamSession.next_step``): the rest of a cut
        # background stream after an event, the request sent again, the answer continued.
        self._steps: dict[str, Callable[..., Any] | None] = {"resume": resume, "resend": resend, "continue": proceed}
        self._closed = False
        self.trace_id = call.trace.trace_id
        self._request_id = response.headers.get("x-request-id")
        self._raw: Any = None  # an early resume's body, begun already (its first events delivered)
        self._watch: Any = None  # the sync client's early-resume watcher (api/early_resume.py)
        self._asked = 0.0  # when the app last came back for more (monotonic)

    @property
    def timings(self) -> CallRecord:
        return self._call.record

    def __iter__(self) -> Iterator[_T]:
        # One iterator per stream, as the official client has: ``__next__`` and ``for``
        # read on where the other stopped (a second generator would lose what the first holds).
        it = self.__dict__.get("_iter")
        if it is None:
            it = self.__dict__["_iter"] = self._events()
        return it

    def __next__(self) -> _T:
        return self.__iter__().__next__()

    def _events(self) -> Iterator[_T]:
        token = current_trace_id.set(self.trace_id)
        session = self._session
        try:
            while True:
                try:
                    try:
                        if session.early:  # a background stream: resumed early if it goes silent
                            reads = early_reads(self)
                            try:
                                for items in reads:
                                    for item in items:
                                        yield item
                            finally:
                                reads.close()  # an early resume's tasks: none left behind
                        else:
                            for raw in self.response.stream:  # type: ignore[union-attr]
                                for item in session.feed(raw):
                                    yield item
                                if session.pending is not None:  # an error event after the events it ends
                                    raise session.pending
                    except httpx.TransportError as exc:
                        raise session.transport_error(exc) from exc
                    except APIError as exc:  # a malformed chunk: the call's trace id, as every APIError
                        raise session.annotate(exc)  # noqa: B904 (the same error, annotated)
                    session.finish(getattr(self.response.stream, "bytes_received", 0))
                    return
                except (IncompleteStreamError, APITimeoutError, APIStatusError) as err:
                    # an error event is a cut only where it says the server failed mid-answer
                    if isinstance(err, APIStatusError) and not session.cut_by_event:
                        raise
                    step = session.next_step()
                    if step is None:
                        raise
                    self._reconnect(err, step)
        finally:
            _reset(token)
            self.close()

    def tool_calls(self, on_chunk: Callable[[Any], Any] | None = None) -> Iterator[ReadyToolCall]:
        """Chat completions: read the stream and yield each tool call as soon as its arguments
        are complete (``pipeline/early_tools.py`` says when), with its ``index`` and ``id``,
        while the model writes the next ones: start each tool then. ``on_chunk``: called with
        every chunk as it comes (to show text). Afterwards ``stream.tool_collector.message()``
        is the assistant message the chunks make, as accumulating them gives."""
        from ...pipeline.early_tools import ToolCallCollector  # only a tool_calls() caller needs it

        collector = self.tool_collector = ToolCallCollector()
        for chunk in self:
            if on_chunk is not None:
                on_chunk(chunk)
            for call in collector.feed(chunk):
                yield call
        for call in collector.finish():
            yield call

    def _reconnect(self, err: APIError, step: Step) -> None:
        """Go on after ``err`` as ``step`` says: the rest of a background stream, the chat
        request sent again, or the answer continued (``pipeline.resume``)."""
        close_quietly(self.response)
        session = self._session
        sleep(resume_delay(session.resumes))
        span = _otel.resume_start(self._call, step.kind, session.resumes + 1) if _otel._live else None
        again = self._steps[step.kind]
        assert again is not None  # the session offers only the steps it was given
        try:
            response, decoder = again(*step.args)
        except APIError as exc:
            _otel.resume_end(span, exc)
            raise session.resume_failed(err, step.what, exc) from exc
        _otel.resume_end(span, None)
        self.resumed(response, decoder, step)

    def resumed(self, response: httpx.Response, decoder: StreamDecoder, step: Step) -> None:
        """Go on with ``response`` (a resume, a re-send, a continuation, an early resume)."""
        self.response = response
        self._raw = None
        self._session.resumed(response, decoder, step.kind, step.args)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            if self._watch is not None:
                self._watch.stop()
            try:
                self.response.close()
            finally:
                self._end_span()

    def _end_span(self) -> None:
        # The call's OpenTelemetry span (features/otel.py) ends with the stream: complete, cut
        # (the error being raised through the iterator's finally) or closed early.
        if _otel._live:
            _otel.stream_end(self._call, sys.exc_info()[1], self._session.complete)

    def __del__(self) -> None:
        # A stream dropped without being read or closed still gives its connection slot back.
        if not self.__dict__.get("_closed", True):
            dropped(self)

    def __enter__(self) -> Stream[_T]:
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None,
                        tb: TracebackType | None) -> None:
        self.close()


def _reset(token: Any) -> None:
    try:
        current_trace_id.reset(token)
    except ValueError:  # the generator was finalised in another context (GC, another task)
        pass


# With ``openai`` imported, ``isinstance(stream, openai.Stream)`` holds too (``_official``).
_official.register(Stream, hide=True)
