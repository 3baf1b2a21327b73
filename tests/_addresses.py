"""Addresses for tests that need a connection refused: a loopback port held so that nothing
listens there (:func:`dead_port`), and one that is not a loopback address: a refused connect to
127.0.0.1 fails at once (llmclient/pipeline/retry.py), so a test of what a *retried* refusal
does (its log line, its retry count) needs another address of this machine."""

from __future__ import annotations

import ipaddress
import socket

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
