"""What the suite prints while it runs.

On a terminal: the lines that stay (each scenario's start and result) scroll as usual, and one
status line below them is rewritten in place (the scenario running, its latest step, elapsed
time and the time left by the scenarios' measured costs); it is cut to the terminal's width so
it never wraps (a wrapped line cannot be rewritten). Anywhere else (a log file, a pipe, CI):
plain lines, one per message, no carriage returns and no bar frames.
"""

from __future__ import annotations

import shutil
import sys
import time
from typing import TextIO

__all__ = ["Progress", "fit", "status_text"]


def fit(text: str, width: int) -> str:
    """``text`` on one line of ``width`` columns: newlines flattened, cut with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[:max(width - 1, 0)] + "…"


def status_text(done: int, total: int, name: str, step: str, elapsed_s: float,
                left_s: float | None) -> str:
    """The status line: ``[3/14 http1] http1/stream: 5 requests x 2 variants · 34 s, ~120 s left``."""
    eta = f", ~{left_s:.0f} s left" if left_s is not None else ""
    return f"[{done}/{total} {name}] {step} · {elapsed_s:.0f} s{eta}"


class Progress:
    """The suite's output. ``line`` prints a line that stays; ``step`` the running scenario's
    latest step (the status line on a terminal, a plain line elsewhere); ``begin``/``end``
    bracket a scenario. ``costs``: each scenario's expected seconds, for the time left."""

    def __init__(self, names: list[str], costs: list[float | None] | None = None,
                 out: TextIO | None = None, tty: bool | None = None) -> None:
        self.out = out or sys.stdout
        self.tty = self.out.isatty() if tty is None else tty
        self.names, self.costs = names, costs or [None] * len(names)
        self.t0 = time.perf_counter()
        self.index = 0
        self.status = ""

    def _clear(self) -> None:
        if self.tty and self.status:
            self.out.write("\r\x1b[2K")
            self.status = ""

    def _draw(self, step: str) -> None:
        width = shutil.get_terminal_size((100, 24)).columns - 1
        self.status = fit(status_text(self.index, len(self.names), self.names[self.index - 1]
                                      if self.index else "-", step, time.perf_counter() - self.t0,
                                      self._left()), width)
        self.out.write("\r\x1b[2K" + self.status)
        self.out.flush()

    def _left(self) -> float | None:
        rest = self.costs[self.index:]
        if not rest or any(c is None for c in rest):
            return None
        return float(sum(c for c in rest if c is not None))

    def line(self, text: str) -> None:
        """A line that stays."""
        self._clear()
        self.out.write(text + "\n")
        self.out.flush()

    def step(self, text: str) -> None:
        """The running scenario's latest step."""
        if self.tty:
            self._draw(text.strip())
        else:
            self.line(text)

    def begin(self, text: str) -> None:
        self.index += 1
        self.line(text)
        if self.tty:
            self._draw("starting")

    def close(self) -> None:
        self._clear()
        self.out.flush()
