"""Happy Eyeballs (RFC 8305): which address to try next, and when. Pure: no I/O, no clock.

``socket.create_connection`` and ``loop.create_connection`` (without ``happy_eyeballs_delay``)
try a name's addresses one after another, each until it fails: on a network whose IPv6 route
is broken (SYNs vanish: no reset, no ICMP), every new connection waits out the connect
timeout on the IPv6 address before it tries IPv4. RFC 8305, as browsers, curl and aiohttp
do it, instead:

* orders the addresses as the resolver did (``getaddrinfo`` sorts them by RFC 6724), then
  interleaves the two families, starting with the family of the first address (section 4,
  "First Address Family Count" of 1);
* starts the next attempt :data:`CONNECTION_ATTEMPT_DELAY_S` after the previous one started
  (section 5: "a recommended value is 250 ms"), or at once when every attempt started so far
  has failed, without giving up on the earlier ones;
* the first attempt to connect wins; the others are closed.

The drivers are ``connect.connect_tcp_sync`` (non-blocking sockets and one selector) and
``connect.connect_tcp_async`` (``loop.sock_connect`` tasks); both follow :func:`interleave`
and :func:`next_start` here. Not done: section 3's separate AAAA and A queries
(``getaddrinfo`` answers once it has both).
"""

from __future__ import annotations

import socket
from collections.abc import Sequence
from typing import Any, Final, TypeVar

__all__ = ["CONNECTION_ATTEMPT_DELAY_S", "family_name", "interleave", "next_start"]

# RFC 8305 section 5: "a recommended value is 250 ms", at least 100 ms, at most 2 s.
CONNECTION_ATTEMPT_DELAY_S: Final = 0.25

_T = TypeVar("_T", bound=Sequence[Any])


def interleave(infos: Sequence[_T]) -> list[_T]:
    """``getaddrinfo`` results (``family`` first in each) in the order to try them: the
    resolver's order within each family, the families alternating, starting with the first
    result's family (RFC 8305 section 4)."""
    if not infos:
        return []
    first = infos[0][0]
    same = [info for info in infos if info[0] == first]
    other = [info for info in infos if info[0] != first]
    out: list[_T] = []
    for i in range(max(len(same), len(other))):
        if i < len(same):
            out.append(same[i])
        if i < len(other):
            out.append(other[i])
    return out


def next_start(last_start: float | None, in_flight: int, delay: float = CONNECTION_ATTEMPT_DELAY_S) -> float:
    """When the next attempt starts (a time on the caller's clock): at once when none is in
    flight (the first, or every earlier one failed), else ``delay`` after the last start."""
    if last_start is None or in_flight == 0:
        return float("-inf")
    return last_start + delay


def family_name(family: int) -> str:
    """``"IPv6"``, ``"IPv4"`` or the family's name (a Unix socket ...)."""
    if family == socket.AF_INET6:
        return "IPv6"
    if family == socket.AF_INET:
        return "IPv4"
    try:
        return socket.AddressFamily(family).name
    except ValueError:
        return str(family)
