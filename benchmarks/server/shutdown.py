"""SIGTERM / SIGINT: drain briefly, then exit, whatever is still running.

The HTTP servers' own graceful stop waits for every request in flight: a long stream, or a
thread still computing, kept the process alive for as long as they lasted. The first signal
asks the server to stop (no new connections; requests in flight go on) and starts a watchdog
thread; if the process is still alive ``grace_s`` later, the watchdog ends it. A second signal
ends it at once. The watchdog is a thread, not a loop callback, so it fires even when the event
loop or interpreter shutdown is stuck behind a busy worker thread.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Callable

from .limits import SHUTDOWN_GRACE_S

__all__ = ["configure", "on_signal"]

log = logging.getLogger("benchmarks.server.shutdown")


class _State:
    grace_s: float = SHUTDOWN_GRACE_S
    watchdog: threading.Timer | None = None


_state = _State()


def configure(grace_s: float) -> None:
    """How long requests in flight may run after the first signal (``--shutdown-grace-s``)."""
    _state.grace_s = grace_s


def on_signal(stop: Callable[[], object]) -> None:
    """The signal handler: ``stop`` the server and arm the watchdog; a second signal exits."""
    if _state.watchdog is not None:
        _exit("second signal: exiting now")
    log.info("stopping: requests in flight get %.1f s to finish", _state.grace_s)
    _state.watchdog = threading.Timer(
        _state.grace_s, _exit, (f"still running {_state.grace_s:g} s after the signal: exiting",))
    _state.watchdog.daemon = True
    _state.watchdog.start()
    stop()


def _exit(reason: str) -> None:
    log.warning(reason)
    for handler in logging.getLogger("benchmarks.server").handlers:
        handler.flush()
    sys.stdout.flush()
    # os._exit, not sys.exit: the point is not to wait for what is still running. Status 0:
    # stopping was asked for and it happened.
    os._exit(0)
