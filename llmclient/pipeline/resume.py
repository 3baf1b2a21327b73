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

Anthropic's Messages stream goes on the same ways. One that fails before any content (a reset,
an ``error`` event such as ``overloaded_error``, a stall) is sent again within ``max_retries``;
the events the app already has (``message_start``, the empty text block's
``content_block_start``) are not delivered twice. One cut inside its text answer continues with
``stream_resume="continue"``: the Messages API reads a final assistant turn as a prefill and
writes on from it (Anthropic's docs, "Prefill Claude's response", read 2026-12-08), so the
request goes again with the partial text as that turn. The API refuses a prefill that ends in
white space, so the turn is the text without its trailing white space, and the same white space
at the head of the continuation is dropped (the app has it). Not after a tool use or a thinking
block (a half-written tool input cannot be handed back; extended thinking takes no prefill), nor
for a request whose own last turn is a prefill.

Early resume. A resume of a background stream only READS the server's event log: it generates
nothing twice. So a background stream silent for longer than its own rhythm explains
(:func:`early_resume_after`: a high quantile of its inter-event gaps times a factor, floored at
tens of ms and capped at half the idle limit) need not wait for the watchdog: llmclient opens the
resume GET beside the silent connection, like a hedge, and the first of the two to bring the next
event wins; the other is closed. Sequence numbers make the seam exact. At most one early resume
is in flight per stream and each counts against :data:`MAX_RESUMES`. ``stream_early_resume=False``
(per client or per call) turns it off. Chat streams never resume early (a re-send generates
again).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

from ..wire.codec import MESSAGES_PATH, RESPONSES_PATH

__all__ = ["CHAT_PATH", "CONTINUE_FIELDS", "EARLY_RESUME_CAP", "EARLY_RESUME_CAP_S", "EARLY_RESUME_FACTOR",
           "EARLY_RESUME_FLOOR_S", "EARLY_RESUME_MIN_GAPS", "EARLY_RESUME_QUANTILE", "EARLY_RESUME_SPARSE_FACTOR", "MAX_RESUMES",
           "RESENDABLE_PATHS", "STREAM_RESUME_MODES", "check_early_resume", "check_stream_resume",
           "continuable", "continuation_body", "early_resume_after", "messages_seam", "next_step",
           "out_of_order", "resendable", "resumable", "resume_delay"]

CHAT_PATH = "/chat/completions"
RESENDABLE_PATHS = frozenset({CHAT_PATH, "/completions", MESSAGES_PATH})
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
    body does not already use the continuation fields itself; or a streamed Messages request
    without extended thinking whose last turn is the user's (not a prefill of its own)."""
    if mode != "continue" or not stream or method != "POST" or body is None:
        return False
    if path == MESSAGES_PATH:
        thinking = body.get("thinking")
        if isinstance(thinking, dict) and thinking.get("type") not in (None, "disabled"):
            return False
        turns = body.get("messages")
        return isinstance(turns, list) and bool(turns) and isinstance(turns[-1], dict) \
            and turns[-1].get("role") == "user"
    if path != CHAT_PATH:
        return False
    if body.get("n") not in (None, 1):
        return False
    return not any(key in body for key in CONTINUE_FIELDS)


def continuation_body(body: dict[str, Any], text: str, shown: int, path: str = CHAT_PATH) -> dict[str, Any] | None:
    """The request that continues an answer cut after ``text`` (``shown`` content chunks,
    each taken as one token: what the server generated so far), or None when it cannot be
    continued: nothing to go on from, or no token left of ``max_tokens`` /
    ``max_completion_tokens`` (the rest of the answer gets what the first part left). Chat: the
    text as an open assistant message with vLLM's fields; Messages (``path``): the text without
    its trailing white space as the final assistant turn, a prefill (:func:`messages_seam`)."""
    messages = path == MESSAGES_PATH
    if messages:
        text = text.rstrip()
    if not text:
        return None
    out = {**body, "messages": [*body["messages"], {"role": "assistant", "content": text}]}
    if not messages:
        out.update(CONTINUE_FIELDS)
    for key in ("max_tokens", "max_completion_tokens"):
        limit = body.get(key)
        if isinstance(limit, int) and not isinstance(limit, bool):
            if limit - shown < 1:
                return None
            out[key] = limit - shown
    return out


def messages_seam(text: str) -> str:
    """The white space a Messages continuation's prefill leaves off the end of ``text`` (the
    API refuses a prefill that ends in it): dropped from the head of the continuation, where
    the model writes it again, as the app has it already."""
    return text[len(text.rstrip()):]


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


# Early resume (see the module's docstring): the quantile of a stream's own inter-event gaps
# and the factor over it after which a silent background stream is resumed beside its
# connection; the floor (below it a healthy stream's jitter alone would start GETs); the cap,
# a share of the idle limit (the watchdog's resume comes at the limit anyway), or seconds when
# there is no watchdog; the gaps needed before the quantile means anything (until then the
# longest gap seen times a larger factor, or the cap when none is known).
EARLY_RESUME_QUANTILE = 0.95
EARLY_RESUME_FACTOR = 4.0
EARLY_RESUME_SPARSE_FACTOR = 8.0
EARLY_RESUME_FLOOR_S = 0.05
EARLY_RESUME_CAP = 0.5
EARLY_RESUME_CAP_S = 30.0
EARLY_RESUME_MIN_GAPS = 4


def check_early_resume(value: object) -> bool:
    """``stream_early_resume`` as given by a caller: True or False."""
    if not isinstance(value, bool):
        raise ValueError(f"stream_early_resume must be True or False, got {value!r}")
    return value


def early_resume_after(gaps: Sequence[float], idle: float | None) -> float:
    """Seconds of silence after which a background stream is resumed early, beside its silent
    connection: :data:`EARLY_RESUME_QUANTILE` of its inter-event ``gaps`` (seconds) times
    :data:`EARLY_RESUME_FACTOR`, at least :data:`EARLY_RESUME_FLOOR_S`, at most the cap
    (:data:`EARLY_RESUME_CAP` of the idle limit ``idle``, or :data:`EARLY_RESUME_CAP_S` without
    a watchdog). Fewer than :data:`EARLY_RESUME_MIN_GAPS` gaps: the longest times
    :data:`EARLY_RESUME_SPARSE_FACTOR` (no gap at all: the cap)."""
    cap = EARLY_RESUME_CAP_S if idle is None else idle * EARLY_RESUME_CAP
    if not gaps:
        return cap
    if len(gaps) < EARLY_RESUME_MIN_GAPS:
        wait = max(gaps) * EARLY_RESUME_SPARSE_FACTOR
    else:
        ordered = sorted(gaps)
        rank = min(len(ordered) - 1, math.ceil(EARLY_RESUME_QUANTILE * len(ordered)) - 1)
        wait = ordered[max(rank, 0)] * EARLY_RESUME_FACTOR
    return min(max(wait, EARLY_RESUME_FLOOR_S), max(cap, 0.0))
