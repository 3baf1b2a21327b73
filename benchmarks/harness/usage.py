"""What a stretch of the run cost: wall time, the CPU of this process tree, and how busy the
whole machine was (other people's work included), read from ``/proc`` (Linux; elsewhere the
CPU figures are None and only wall time is kept).

The suite reads one :class:`Usage` per scenario, so a result says what each scenario cost and
how loaded the machine was while it ran: on a shared 2-core machine a slow scenario can be one
that waited for the cores rather than one that did more.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Usage", "machine_cpu_s", "summarise_usage", "tree_cpu_s"]


def _stat_fields(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError, ValueError):
        return None


def tree_cpu_s(pid: int | None = None) -> float | None:
    """CPU seconds (user + system) used so far by ``pid`` (default: this process), every living
    descendant, and the descendants that have exited and been waited for (a process's
    ``cutime``/``cstime``): a server started and stopped within a stretch counts in it. None
    off Linux."""
    root = os.getpid() if pid is None else pid
    stats: dict[int, list[str]] = {}
    with contextlib.suppress(OSError):
        for name in os.listdir("/proc"):
            if name.isdigit() and (fields := _stat_fields(int(name))) is not None:
                stats[int(name)] = fields
    if root not in stats:
        return None
    tree, frontier = {root}, [root]
    while frontier:
        parent = str(frontier.pop())
        for child, fields in stats.items():
            if child not in tree and fields[1] == parent:
                tree.add(child)
                frontier.append(child)
    # fields after the command: state(0) ppid(1) ... utime(11) stime(12) cutime(13) cstime(14)
    ticks = sum(int(stats[p][11]) + int(stats[p][12]) + int(stats[p][13]) + int(stats[p][14])
                for p in tree)
    return ticks / os.sysconf("SC_CLK_TCK")


def machine_cpu_s() -> tuple[float, float] | None:
    """(busy, total) CPU seconds of the whole machine so far, over every core (``/proc/stat``)."""
    try:
        with open("/proc/stat", encoding="ascii") as f:
            values = [int(v) for v in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    tick = os.sysconf("SC_CLK_TCK")
    idle = values[3] + (values[4] if len(values) > 4 else 0)  # idle + iowait
    return (sum(values) - idle) / tick, sum(values) / tick


@dataclass
class Usage:
    """A stretch of the run, from its creation to :meth:`summary`."""

    t0: float
    cpu0: float | None
    machine0: tuple[float, float] | None

    @classmethod
    def start(cls) -> Usage:
        return cls(time.perf_counter(), tree_cpu_s(), machine_cpu_s())

    def summary(self) -> dict[str, Any]:
        return summarise_usage(time.perf_counter() - self.t0, self.cpu0, tree_cpu_s(),
                               self.machine0, machine_cpu_s(), os.cpu_count() or 1)


def summarise_usage(wall_s: float, cpu_before: float | None, cpu_after: float | None,
                    machine_before: tuple[float, float] | None,
                    machine_after: tuple[float, float] | None, cores: int) -> dict[str, Any]:
    """Pure. ``wall_s``; ``cpu_s``: this process tree's CPU seconds; ``machine_busy``: the
    share of all ``cores`` the machine had busy (everyone's work); ``others_cores``: cores
    other processes kept busy on average (the load the run shared the machine with)."""
    cpu = None if cpu_before is None or cpu_after is None else max(cpu_after - cpu_before, 0.0)
    busy = others = None
    if machine_before and machine_after and machine_after[1] > machine_before[1]:
        spent = machine_after[0] - machine_before[0]
        busy = spent / (machine_after[1] - machine_before[1])
        if cpu is not None and wall_s > 0:
            others = max(spent - cpu, 0.0) / wall_s
    return {"wall_s": round(wall_s, 1), "cpu_s": None if cpu is None else round(cpu, 1),
            "machine_busy": None if busy is None else round(busy, 3),
            "others_cores": None if others is None else round(others, 2), "cores": cores}


def describe_usage(u: Mapping[str, Any]) -> str:
    """"12.3 s, CPU 4.1 s, machine 83% busy (others 1.1 cores)"."""
    parts = [f"{u['wall_s']:.1f} s"]
    if u.get("cpu_s") is not None:
        parts.append(f"CPU {u['cpu_s']:.1f} s")
    if u.get("machine_busy") is not None:
        parts.append(f"machine {u['machine_busy']:.0%} busy"
                     + (f" (others {u['others_cores']:.1f} of {u['cores']} cores)"
                        if u.get("others_cores") is not None else ""))
    return ", ".join(parts)
