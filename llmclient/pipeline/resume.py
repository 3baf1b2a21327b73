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
After content, a chat stream's error is raised with the partial answer (``exc.partial``).
"""

from __future__ import annotations

from typing import Any, Literal

from ..wire.codec import RESPONSES_PATH

__all__ = ["MAX_RESUMES", "RESENDABLE_PATHS", "next_step", "out_of_order", "resendable", "resumable",
           "resume_delay"]

RESENDABLE_PATHS = frozenset({"/chat/completions", "/completions"})

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


def next_step(*, resumes: int, final: bool, resume_from: tuple[str, int] | None, can_resend: bool,
              content_seen: bool) -> Literal["resume", "resend"] | None:
    """What a stream that just failed does: ``"resume"`` (a background stream with an id and a
    sequence number to go on from), ``"resend"`` (a chat stream that showed no content yet and
    whose call has retries left: ``can_resend``), or None (raise). Never past
    :data:`MAX_RESUMES`, never after an error no resume can mend."""
    if final or resumes >= MAX_RESUMES:
        return None
    if resume_from is not None:
        return "resume"
    if can_resend and not content_seen:
        return "resend"
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
