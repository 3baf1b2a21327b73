"""Which replica already holds how much of a prompt: the client's picture of each replica's
prefix cache, built from the calls it sent there (``key.RouteKey.blocks``).

A conversation's next turn starts with the whole of its last turn, so its longest match is the
replica that served it, even when its first block (the ring's choice) lives elsewhere because
that replica was full when the conversation began. The picture is bounded (least recently
used blocks are forgotten, as the server evicts them) and forgotten for a replica that failed
(a restarted server's cache is empty).

Pure: no clock, no I/O.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

__all__ = ["DEFAULT_CAPACITY", "PrefixIndex"]

DEFAULT_CAPACITY = 16384  # block hashes remembered per replica (~4 MiB of leading text)


class PrefixIndex:
    __slots__ = ("_blocks", "capacity")

    def __init__(self, replicas: int, capacity: int = DEFAULT_CAPACITY) -> None:
        self._blocks: list[OrderedDict[int, None]] = [OrderedDict() for _ in range(replicas)]
        self.capacity = capacity

    def match(self, replica: int, blocks: Sequence[int]) -> int:
        """How many leading ``blocks`` this replica is believed to hold."""
        held = self._blocks[replica]
        depth = 0
        for block in blocks:
            if block not in held:
                break
            depth += 1
        return depth

    def best(self, blocks: Sequence[int], eligible: Sequence[int]) -> tuple[int | None, int]:
        """(the eligible replica holding the longest prefix, its depth); (None, 0) when none
        holds any. Ties go to the earlier replica of ``eligible``."""
        best, depth = None, 0
        if blocks:
            for replica in eligible:
                d = self.match(replica, blocks)
                if d > depth:
                    best, depth = replica, d
        return best, depth

    def record(self, replica: int, blocks: Sequence[int]) -> None:
        """The replica computed (and so caches) these blocks."""
        held = self._blocks[replica]
        for block in blocks:
            if block in held:
                held.move_to_end(block)
            else:
                held[block] = None
        while len(held) > self.capacity:
            held.popitem(last=False)

    def forget(self, replica: int) -> None:
        self._blocks[replica].clear()
