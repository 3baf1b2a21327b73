"""Consistent hashing with bounded loads (Mirrokni, Thorup and Zadimoghaddam, 2016; HAProxy's
``hash-balance-factor``; the rule KubeAI uses for prefix-cache affinity).

Each replica owns ``VNODES x weight`` points on a 64-bit ring. A key goes to the first replica
clockwise from its hash, unless that replica is above its bound: ``ceil(c x (m + 1) x w / W)``
in-flight calls, where ``m`` is the fleet's in-flight total, ``w`` the replica's weight and
``W`` the sum of the weights. Then it walks on to the next replica on the ring. A replica that
joins or leaves moves only the keys whose first choice it is (or becomes); a key stays on its
replica until that replica is overloaded.

Pure: no clock, no I/O, no state but the points.
"""

from __future__ import annotations

import bisect
import hashlib
import math
from collections.abc import Callable, Sequence

__all__ = ["VNODES", "Ring", "bound", "hash64", "pick_bounded"]

VNODES = 160  # points per unit of weight: the spread of a replica's share is ~1/sqrt(VNODES)


def hash64(data: bytes) -> int:
    """A stable 64-bit hash (the same in every process: never Python's salted ``hash``)."""
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "big")


class Ring:
    """The points of ``names`` (distinct) with their ``weights``; ``walk(key)`` the replicas in
    the order the key meets them."""

    __slots__ = ("_hashes", "_owners", "names")

    def __init__(self, names: Sequence[str], weights: Sequence[float] | None = None) -> None:
        if len(set(names)) != len(names):
            raise ValueError("ring names must be distinct")
        weights = weights or [1.0] * len(names)
        points: list[tuple[int, int]] = []
        for index, (name, weight) in enumerate(zip(names, weights, strict=True)):
            for v in range(max(1, round(VNODES * weight))):
                points.append((hash64(f"{name}#{v}".encode()), index))
        points.sort()
        self.names = tuple(names)
        self._hashes = [h for h, _ in points]
        self._owners = [i for _, i in points]

    def walk(self, key: int) -> list[int]:
        """Every replica's index once, in ring order from ``key``'s position."""
        n = len(self.names)
        order: list[int] = []
        seen = [False] * n
        owners = self._owners
        start = bisect.bisect_left(self._hashes, key)
        total = len(owners)
        for step in range(total):
            owner = owners[(start + step) % total]
            if not seen[owner]:
                seen[owner] = True
                order.append(owner)
                if len(order) == n:
                    break
        return order


def bound(c: float, total_load: int, weight: float, total_weight: float) -> int:
    """The most in-flight calls a replica may hold once it takes one more:
    ``ceil(c x (m + 1) x w / W)``; at least 1."""
    return max(1, math.ceil(c * (total_load + 1) * weight / total_weight))


def pick_bounded(order: Sequence[int], load: Callable[[int], int], weight: Callable[[int], float],
                 c: float) -> int:
    """The first replica of ``order`` (a ring walk over the eligible replicas) whose load is
    below its bound. One always is, since the bounds sum to more than the load."""
    total_load = sum(load(i) for i in order)
    total_weight = sum(weight(i) for i in order)
    for i in order:
        if load(i) < bound(c, total_load, weight(i), total_weight):
            return i
    return order[0]  # not reached for c >= 1; a safe answer all the same
