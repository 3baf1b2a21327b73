"""Addresses for tests that need a connection refused: a loopback port held so that nothing
listens there (:func:`dead_port`), and one that is not a loopback address: a refused connect to
127.0.0.1 fails at once (llmclient/pipeline/retry.py), so a test of what a *retried* refusal
does (its log line, its retry count) needs another address of this machine."""

from __future__ import annotations

import contextlib
import ipaddress
import os
import socket
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

import pytest

# Bound, never listening: a connect there is refused (a SYN gets a RST), and no parallel test's
# server can take the port while this test process runs. A port merely found free can be bound
# a moment later: the nginx fixture's dead upstream once proxied to another xdist worker's TLS
# listener ("400 The plain HTTP request was sent to HTTPS port", a 50-run loop under -n 4).
_HELD: list[socket.socket] = []


def dead_port() -> int:
    """A loopback port where nothing listens, held for the rest of the test process."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    _HELD.append(sock)
    return int(sock.getsockname()[1])


def _socket_inodes(pid: int) -> set[str]:
    """The socket inodes of process ``pid`` and its children (nginx's master and workers)."""
    pids = [str(pid)]
    with contextlib.suppress(OSError):
        pids += Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    inodes: set[str] = set()
    for p in pids:
        with contextlib.suppress(OSError):
            for fd in Path(f"/proc/{p}/fd").iterdir():
                with contextlib.suppress(OSError):
                    target = os.readlink(fd)
                    if target.startswith("socket:["):
                        inodes.add(target[8:-1])
    return inodes


def foreign_listeners(pid: int, ports: Iterable[int]) -> list[int]:
    """The ``ports`` where a listening socket is not process ``pid``'s (or its
    children's), or where nothing listens (Linux's /proc; elsewhere: none known).

    A port found free and then bound by a server can be taken in between by another xdist
    worker's server: nginx then keeps the ports it bound and exits after retrying the taken
    one; granian and a second granian both listen with SO_REUSEPORT, and the kernel spreads
    connections over the two. Either way a test talks to the wrong process."""
    table: list[str] = []
    for name in ("tcp", "tcp6"):
        try:
            table += Path(f"/proc/net/{name}").read_text().splitlines()[1:]
        except OSError:
            if name == "tcp":
                return []
    listeners: dict[int, set[str]] = {}
    for line in table:
        fields = line.split()
        local, state, inode = fields[1], fields[3], fields[9]
        if state == "0A":  # LISTEN, on any address
            listeners.setdefault(int(local.rsplit(":", 1)[1], 16), set()).add(inode)
    ours = _socket_inodes(pid)
    return [port for port in ports if not listeners.get(port) or not listeners[port] <= ours]


Started = TypeVar("Started")
START_ATTEMPTS = 3


def start_holding_ports(start: Callable[[], Started], owner: Callable[[Started], tuple[int, Iterable[int]]],
                        stop: Callable[[Started], None], what: str) -> Started:
    """``start()`` a server, again on new ports while another process also listens on one of
    them (:func:`foreign_listeners`; ``owner`` gives the server's pid and ports), at most
    :data:`START_ATTEMPTS` times."""
    for _ in range(START_ATTEMPTS):
        server = start()
        pid, ports = owner(server)
        taken = foreign_listeners(pid, ports)
        if not taken:
            return server
        warnings.warn(f"{what}: ports {taken} are also another process's; starting again on new ports",
                      stacklevel=3)
        stop(server)
    raise RuntimeError(f"{what}: another process had one of its ports, {START_ATTEMPTS} times")


def local_non_loopback() -> str:
    """An IPv4 address of one of this machine's own interfaces that is not a loopback one (no
    packet is sent: a UDP socket's connect only picks the route); skips the test without one."""
    # documentation addresses (RFC 5737), unicast: a broadcast one (x.x.x.255) needs
    # SO_BROADCAST and fails with EACCES. The source address the route picks is ours.
    for destination in ("198.51.100.1", "203.0.113.1", "192.0.2.1"):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            try:
                probe.connect((destination, 9))
            except OSError:
                continue
            ip = ipaddress.ip_address(str(probe.getsockname()[0]))
        if not (ip.is_loopback or ip.is_unspecified):
            return str(ip)
    pytest.skip("this machine has no non-loopback IPv4 address")


def refused_url(path: str = "/v1") -> str:
    """An http:// URL of this machine, not loopback, whose port refuses connections."""
    host = local_non_loopback()
    with socket.socket() as sock:
        sock.bind((host, 0))
        port = int(sock.getsockname()[1])
    return f"http://{host}:{port}{path}"
