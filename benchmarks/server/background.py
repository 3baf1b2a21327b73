"""Background responses of the reference server: runs that outlive their connection, and the
event logs that let a client resume a cut stream.

OpenAI's background mode (API reference, "Responses"; guide "Background mode"), as the
reference server implements it:

- ``POST /v1/responses`` with ``background: true`` starts generation in a task of its own. A
  connection that drops, times out or is cut does not stop it; ``POST /v1/responses/{id}/cancel``
  does. Without ``stream`` the call answers at once with the response, ``status: "queued"``.
- Every event of the run is kept, in order, in the run's log: the event whose
  ``sequence_number`` is N is ``log[N]``. A stream (the create call's own, with ``stream: true``,
  or ``GET /v1/responses/{id}?stream=true&starting_after=N``) sends the log from N + 1 on, then
  follows the run live until its final event. ``starting_after`` past the end sends what is
  left: nothing more than the run still produces.
- Only a run created with ``stream: true`` can be streamed again (as OpenAI documents).
- Bounded: a finished run's log is kept for ``retention_s`` (then a resume is 404, the
  response itself stays retrievable), and all logs together hold at most ``max_bytes``: past
  that the oldest finished logs go first, and while live runs alone are over it, a new
  background request is refused (503, in OpenAI's error shape).

The decisions (where a resume starts, which logs expire or are evicted, whether a run may
start) are pure functions below; :class:`BackgroundRun` holds one run's state, and
:class:`BackgroundRuns` the server's runs.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["BackgroundRun", "BackgroundRuns", "admit", "evictions", "expired", "resume_start"]

# Final states of a response (API reference, "The response object": status).
FINAL = frozenset({"completed", "incomplete", "failed", "cancelled"})


# -- pure decisions ------------------------------------------------------------------------
def resume_start(starting_after: int | None) -> int:
    """The index in a run's log of the first event a stream sends: the one after
    ``starting_after`` (a sequence number), or the first when none is given."""
    return 0 if starting_after is None else starting_after + 1


def expired(finished_at: float | None, now: float, retention_s: float) -> bool:
    """Whether a run's log has outlived its retention (a live run's never has)."""
    return finished_at is not None and now - finished_at > retention_s


def evictions(finished: Iterable[tuple[str, int]], total: int, max_bytes: int) -> list[str]:
    """The finished runs (``(id, log bytes)``, oldest first) whose logs go so that ``total``
    comes within ``max_bytes``: the oldest first, no more than needed."""
    out = []
    for rid, size in finished:
        if total <= max_bytes:
            break
        out.append(rid)
        total -= size
    return out


def admit(live_bytes: int, max_bytes: int) -> bool:
    """Whether a new background run may start: only while the live runs' logs fit."""
    return live_bytes < max_bytes


# -- state -----------------------------------------------------------------------------------
@dataclass
class BackgroundRun:
    """One background response: its current response object (mutated in place as the run
    goes, so a stored copy and a ``GET`` see the same), its event log and its task."""

    rid: str
    response: dict[str, Any]
    streamable: bool
    log: list[bytes] = field(default_factory=list)
    nbytes: int = 0
    finished_at: float | None = None
    dropped: bool = False  # the log expired or was evicted
    task: asyncio.Task[Any] | None = None
    _changed: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def done(self) -> bool:
        return self.finished_at is not None

    def append(self, data: bytes) -> None:
        self.log.append(data)
        self.nbytes += len(data)
        self._wake()

    def finish(self, now: float) -> None:
        if self.finished_at is None:
            self.finished_at = now
        self._wake()

    def drop_log(self) -> None:
        self.log = []
        self.nbytes = 0
        self.dropped = True
        self._wake()

    def _wake(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def changed(self) -> None:
        """Wait until an event is appended, the run finishes or its log is dropped."""
        await self._changed.wait()


@dataclass
class BackgroundRuns:
    """The server's background runs, oldest first, within their retention and memory bounds."""

    retention_s: float
    max_bytes: int
    _runs: OrderedDict[str, BackgroundRun] = field(default_factory=OrderedDict)

    def get(self, rid: str) -> BackgroundRun | None:
        return self._runs.get(rid)

    def add(self, run: BackgroundRun) -> None:
        self._runs[run.rid] = run

    def forget(self, rid: str) -> None:
        """A deleted response: its run (cancelled if still live) and log are gone."""
        run = self._runs.pop(rid, None)
        if run is not None and run.task is not None and not run.task.done():
            run.task.cancel()

    def live_bytes(self) -> int:
        return sum(r.nbytes for r in self._runs.values() if not r.done)

    def total_bytes(self) -> int:
        return sum(r.nbytes for r in self._runs.values())

    def sweep(self, now: float) -> None:
        """Drop the logs past their retention, then the oldest finished ones over the bound;
        a run whose response is final and whose log is dropped is forgotten."""
        for run in list(self._runs.values()):
            if not run.dropped and expired(run.finished_at, now, self.retention_s):
                run.drop_log()
        finished = [(r.rid, r.nbytes) for r in self._runs.values() if r.done and not r.dropped]
        for rid in evictions(finished, self.total_bytes(), self.max_bytes):
            self._runs[rid].drop_log()
        for rid in [r.rid for r in self._runs.values() if r.dropped and r.done]:
            del self._runs[rid]

    async def stop(self) -> None:
        """Server shutdown: cancel the live runs and wait for them to close their engine streams."""
        tasks = [r.task for r in self._runs.values() if r.task is not None and not r.task.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def __len__(self) -> int:
        return len(self._runs)
