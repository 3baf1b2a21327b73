"""Is the peer still there? A PING for a stream that has been silent a while (pure decisions).

A stream can be silent for long and healthy (a reasoning model thinking before its first token)
or silent because the peer is gone: the server died, or a NAT or load balancer forgot the flow
and drops its packets without a word. TCP says nothing for minutes (keepalive waits its idle
time first), and the read timeout may be long, so while a stream waits for data its connection
is PINGed once the stream has been silent :data:`SILENT_PING_S` (RFC 9113 section 6.7: a PING
must be answered "as soon as possible"). A connection that answers is alive, and the stream
waits on (PINGed again after the next silent stretch); one that sends nothing at all within
:data:`PING_ANSWER_S` is dead, and its streams fail at once with an error that says so, in
seconds instead of at the read timeout (or the stream watchdog's limit).

The drivers (``async_driver``, ``sync_driver``) wait in slices that :func:`wait_slice` sizes and
act on :func:`after_silence`'s verdict.
"""

from __future__ import annotations

from typing import Final, Literal

__all__ = ["PING_ANSWER_S", "SILENT_PING_S", "after_silence", "dead_message", "wait_slice"]

# A stream this long without data gets its connection PINGed: short beside NAT idle timeouts
# (AWS ~350 s, Azure 4 min), long beside a busy server's pauses between tokens.
SILENT_PING_S: Final = 10.0
# ... and the connection must answer (any frame) this soon: a round trip, a loaded server's
# event loop, with a wide margin.
PING_ANSWER_S: Final = 5.0

Verdict = Literal["timeout", "ping", "rest", "dead", "wait"]


def wait_slice(now: float, since: float, deadline: float | None, pinged_at: float | None,
               silent_s: float = SILENT_PING_S, answer_s: float = PING_ANSWER_S) -> float:
    """How long the next wait for the stream's data may be: until a PING is due (none out:
    ``silent_s`` after ``since``, when the silence began or the last answered PING went out, so
    PINGs keep a steady pace), until its answer is overdue (one out), or until the read
    deadline, whichever is first."""
    end = since + silent_s if pinged_at is None else pinged_at + answer_s
    if deadline is not None:
        end = min(end, deadline)
    return max(0.0, end - now)


def after_silence(now: float, deadline: float | None, pinged_at: float | None, answered: bool,
                  answer_s: float = PING_ANSWER_S) -> Verdict:
    """A slice passed with no data for the stream: ``timeout`` (the read deadline passed),
    ``ping`` (none out: send one), ``rest`` (the peer answered: wait another silent stretch),
    ``dead`` (no answer in ``answer_s``), ``wait`` (the answer is not overdue yet)."""
    if deadline is not None and now >= deadline:
        return "timeout"
    if pinged_at is None:
        return "ping"
    if answered:
        return "rest"
    return "dead" if now - pinged_at >= answer_s else "wait"


def dead_message(silent_s: float, answer_s: float) -> str:
    return (f"the server stopped answering: no PING answer within {answer_s:g} s after the stream "
            f"was silent {silent_s:g} s (the server or the network path to it is gone)")
