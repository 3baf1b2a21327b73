"""The stall watchdog of a stream: how long a stream may go without an event, as pure decisions.

A stream that stops after its headers would otherwise wait out the read timeout (the official
client's default is 600 s). ``stream_idle_timeout`` (client-wide, or per call; ``None`` turns it
off) bounds the time between two events of a stream (an SSE chunk or typed event that decodes to
something: a keep-alive comment, an empty line, an HTTP/2 PING is no progress):

- silence: the transport's body read waits at most the idle limit (:func:`body_read_timeout`),
  so a server that sends nothing ends the stream then, not at the read timeout;
- bytes that are no progress (a server that keeps the stream alive with SSE comments while it
  stalls): each chunk read checks the time since the last event (:func:`stalled`).

Either way the stream raises :class:`~llmclient.APITimeoutError` whose message
(:func:`stall_message`) says how long it was idle, after how many events, and whether the
server was silent or sending only keep-alives.
"""

from __future__ import annotations

import math

__all__ = ["DEFAULT_STREAM_IDLE_TIMEOUT", "body_read_timeout", "check_idle_timeout",
           "stall_message", "stalled"]

# No healthy server leaves a stream without an event this long: a token every few ms to a few
# hundred ms, a reasoning model's keep-alive or first token within seconds; a queue that long
# is one the caller should hear about.
DEFAULT_STREAM_IDLE_TIMEOUT = 60.0


def check_idle_timeout(value: object) -> float | None:
    """``stream_idle_timeout`` as given by a caller: a positive number of seconds, or None
    (no watchdog). Anything else raises ``ValueError`` naming it, at the call that gave it."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 \
            or math.isinf(value):
        raise ValueError(f"stream_idle_timeout must be a positive number of seconds or None, "
                         f"got {value!r}")
    return float(value)


def body_read_timeout(read: float | None, idle: float | None) -> float | None:
    """The read timeout of a stream's request: the smaller of the call's read timeout and the
    idle limit (None is no limit)."""
    if idle is None:
        return read
    return idle if read is None else min(read, idle)


def stalled(now: float, last_event: float, idle: float | None) -> bool:
    """Whether a stream whose last event was at ``last_event`` has been idle too long."""
    return idle is not None and now - last_event >= idle


def stall_message(idle_s: float, limit: float, events: int, keepalives: bool) -> str:
    """What a stalled stream's error says: the time without an event (``idle_s``, measured)
    against the limit, the events before it, and whether bytes kept coming (keep-alives: the
    server is up, the stream is stalled) or nothing did (a silent server or a dead connection)."""
    after = f"after {events} event{'s' if events != 1 else ''}"
    if keepalives:
        how = "the server kept the stream alive (keep-alive comments) but sent no event"
    else:
        how = "nothing arrived from the server"
    return (f"Stream stalled: no event for {idle_s:.1f} s {after}; {how} "
            f"(stream_idle_timeout={limit:g} s; None turns the watchdog off)")
