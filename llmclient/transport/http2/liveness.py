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

The drivers (``async_driver``, ``sync_driver``) keep one :class:`Silence` per wait: they wait in
the slices it sizes (:func:`wait_slice`) and act on its verdict (:func:`after_silence`): send a
PING, fail the connection, or raise the read timeout.
"""

from __future__ import annotations

from typing import Final, Literal

__all__ = ["PING_ANSWER_S", "SILENT_PING_S", "Silence", "after_silence", "dead_message", "wait_slice"]

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


class Silence:
    """One wait for a stream's data, as a stepper: :meth:`slice` says how long the next wait may
    be, :meth:`after` turns a slice that brought nothing into a verdict and keeps the PING's
    bookkeeping (when it went out, how many answers the connection had counted then)."""

    __slots__ = ("_acked", "_deadline", "_pinged_at", "_since")

    def __init__(self, now: float, timeout: float | None) -> None:
        self._deadline = None if timeout is None else now + timeout
        self._pinged_at: float | None = None
        self._since, self._acked = now, 0

    def slice(self, now: float) -> float:
        # the limits are read now, not bound at import (the tests shorten them)
        return wait_slice(now, self._since, self._deadline, self._pinged_at, SILENT_PING_S, PING_ANSWER_S)

    def after(self, now: float, pings_acked: int) -> Verdict:
        """The verdict on a silent slice, given the connection's count of PING answers so far.
        On ``ping`` the caller sends one now."""
        verdict = after_silence(now, self._deadline, self._pinged_at, pings_acked > self._acked,
                                PING_ANSWER_S)
        if verdict == "ping":
            self._pinged_at, self._acked = now, pings_acked
        elif verdict == "rest":  # answered: the next PING a silent stretch after this one
            self._since, self._pinged_at = self._pinged_at or now, None
        return verdict


def dead_message(silent_s: float, answer_s: float) -> str:
    return (f"the server stopped answering: no PING answer within {answer_s:g} s after the stream "
            f"was silent {silent_s:g} s (the server or the network path to it is gone)")
