"""Resuming a cut stream, as pure decisions: which streams can be resumed, from where, how often
and after how long.

OpenAI's background mode (and vLLM's) keeps every event of a ``background=True`` Responses
stream, numbered by ``sequence_number``, and ``GET /v1/responses/{id}?stream=true&
starting_after=N`` sends the events after N. So a background stream that is cut (a reset, a
lost connection), stalls (the watchdog) or ends before its final event is not lost: llmclient
asks for the rest and goes on with the same iterator, and the app sees one stream with no gap
and no event twice. Each event after a resume must carry the next sequence number; anything
else (an event skipped or repeated) ends the stream with an error, never a reordered answer.

A Chat Completions (or Completions) stream that fails before its first content token is sent
again, as the official client retries a connection error, and within the same budget: each
re-send is one of the call's ``max_retries`` (``max_retries=0``: never sent twice). Nothing was
shown, so nothing is shown twice (the new stream's opening role chunk is not delivered again).
After content, a chat stream's error is raised with the partial answer (``exc.partial``),
unless the call opted into continuation (``stream_resume="continue"``, per client or per call):
then the request is sent again with the partial answer as the assistant's prefix, as vLLM reads
it (``continue_final_message: true, add_generation_prompt: false``; the reference server reads
the same), and the rest of the answer goes on in the same iterator. The model then writes the
rest of *its* answer from that prefix: with temperature 0 (or a seed, on a server whose sampling
is reproducible) that is the answer the cut stream would have given; with sampling, the text
after the seam is a new draw. A server that does not know the fields refuses the request (400)
and the error is raised with the partial answer attached; a server that ignores them would start
a new answer after the prefix, so declare ``"continue"`` only for servers that implement it.
"""

from __future__ import annotations

from typing import Any, Literal

from ..wire.codec import RESPONSES_PATH

__all__ = ["CHAT_PATH", "CONTINUE_FIELDS", "MAX_RESUMES", "RESENDABLE_PATHS", "STREAM_RESUME_MODES",
           "check_stream_resume", "continuable", "continuation_body", "next_step", "out_of_order",
           "resendable", "resumable", "resume_delay"]

CHAT_PATH = "/chat/completions"
RESENDABLE_PATHS = frozenset({CHAT_PATH, "/completions"})
# ``stream_resume``: "auto" resumes background Responses streams and re-sends chat streams that
# showed nothing; "continue" also continues a chat stream cut after content.
STREAM_RESUME_MODES = ("auto", "continue")
# vLLM's chat-template fields (its OpenAI server, ChatCompletionRequest): render the last
# (assistant) message open, without a new assistant turn after it.
CONTINUE_FIELDS = {"continue_final_message": True, "add_generation_prompt": False}

# Resumes of one stream before its error is raised: a server that cuts every connection gets a
# few tries, not an endless loop.
MAX_RESUMES = 3


def resumable(method: str, path: str, body: dict[str, Any] | None, stream: bool) -> bool:
    """Whether a call's stream can be resumed: a streamed ``POST /responses`` with
    ``background: true`` (the server keeps its events; a foreground stream stops when its
    connection does, and its events are gone)."""
    return (stream and method == "POST" and path == RESPONSES_PATH and body is not None
            and body.get("background") is True)


def resendable(method: str, path: str, stream: bool) -> bool:
    """Whether a call's stream may be sent again when it fails before any content."""
    return stream and method == "POST" and path in RESENDABLE_PATHS


def check_stream_resume(value: object) -> str:
    """``stream_resume`` as given by a caller: one of :data:`STREAM_RESUME_MODES`."""
    if value not in STREAM_RESUME_MODES:
        raise ValueError(f"stream_resume must be one of {', '.join(map(repr, STREAM_RESUME_MODES))}, "
                         f"got {value!r}")
    return str(value)


def continuable(mode: str, method: str, path: str, body: dict[str, Any] | None, stream: bool) -> bool:
    """Whether a call's stream may be continued after content: it opted in, it is a streamed
    chat request with one choice (``n`` > 1 would need one continuation per choice) and its
    body does not already use the continuation fields itself."""
    if mode != "continue" or not stream or method != "POST" or path != CHAT_PATH or body is None:
        return False
    if body.get("n") not in (None, 1):
        return False
    return not any(key in body for key in CONTINUE_FIELDS)


def continuation_body(body: dict[str, Any], text: str, shown: int) -> dict[str, Any] | None:
    """The request that continues a chat answer cut after ``text`` (``shown`` content chunks,
    each taken as one token: what the server generated so far), or None when it cannot be
    continued: nothing to go on from, or no token left of ``max_tokens`` /
    ``max_completion_tokens`` (the rest of the answer gets what the first part left)."""
    if not text:
        return None
    out = {**body, "messages": [*body["messages"], {"role": "assistant", "content": text}],
           **CONTINUE_FIELDS}
    for key in ("max_tokens", "max_completion_tokens"):
        limit = body.get(key)
        if isinstance(limit, int) and not isinstance(limit, bool):
            if limit - shown < 1:
                return None
            out[key] = limit - shown
    return out


def next_step(*, resumes: int, final: bool, resume_from: tuple[str, int] | None, can_resend: bool,
              content_seen: bool, can_continue: bool = False) -> Literal["resume", "resend", "continue"] | None:
    """What a stream that just failed does: ``"resume"`` (a background stream with an id and a
    sequence number to go on from), ``"resend"`` (a chat stream that showed no content yet and
    whose call has retries left: ``can_resend``), ``"continue"`` (a chat stream that showed
    content, opted into continuation, with retries left: ``can_continue``), or None (raise).
    Never past :data:`MAX_RESUMES`, never after an error no resume can mend."""
    if final or resumes >= MAX_RESUMES:
        return None
    if resume_from is not None:
        return "resume"
    if can_resend and not content_seen:
        return "resend"
    if can_continue and content_seen:
        return "continue"
    return None


def resume_delay(attempt: int) -> float:
    """Seconds before resume ``attempt`` (0-based): 0.1, 0.2, 0.4 ... (a cut connection is
    usually a proxy or a network blip, over at once; a server restarting needs a moment)."""
    return min(0.1 * 2 ** attempt, 2.0)


def out_of_order(expected: int, got: object) -> str | None:
    """Why an event after a resume cannot be delivered (None when it is the expected one)."""
    if got == expected:
        return None
    if isinstance(got, int) and not isinstance(got, bool):
        kind = "repeated an event" if got < expected else "skipped events"
        return f"the resumed stream {kind}: expected sequence_number {expected}, got {got}"
    return f"the resumed stream sent an event without a sequence_number (expected {expected})"
