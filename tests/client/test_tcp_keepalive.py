"""TCP keepalive on every connection llmclient opens (issue 32): a flow silent for minutes must
not be forgotten by a NAT or load balancer, and a dead peer must be found by the kernel.

The decision (which ``setsockopt`` calls, per platform) is pure and checked for Linux, macOS and
Windows; the live tests read the kernel's own view of the client's sockets with ``ss -o`` (a
keepalive timer on the established connection) after real calls to the reference server:
HTTP/2 and HTTP/1.1, cleartext and TLS, sync and async, and through a real forward proxy
(tinyproxy) where the socket is the one to the proxy.
"""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator

import pytest

import llmclient
from llmclient.transport.connect import (
    KEEPALIVE_COUNT,
    KEEPALIVE_IDLE_S,
    KEEPALIVE_INTERVAL_S,
    keepalive_options,
)
from tests._both import Drive
from tests.interop.tinyproxy import start_tinyproxy, stop_tinyproxy

MSG = [{"role": "user", "content": "hi"}]


def test_keepalive_is_shorter_than_the_middleboxes_idle_timeouts() -> None:
    # Azure's load balancer and NAT forget an idle flow after 240 s, AWS NAT gateway after 350 s.
    assert KEEPALIVE_IDLE_S + KEEPALIVE_INTERVAL_S < 240
    assert KEEPALIVE_IDLE_S + KEEPALIVE_INTERVAL_S * KEEPALIVE_COUNT <= 180  # a dead peer: 2 min


@pytest.mark.parametrize("platform,expected", [
    ("linux", [(1, 9, 1), (6, 4, 60), (6, 5, 15), (6, 6, 4)]),
    ("darwin", [(0xFFFF, 0x8, 1), (6, 0x10, 60), (6, 0x101, 15), (6, 0x102, 4)]),
    ("win32", [(0xFFFF, 0x8, 1), (6, 3, 60), (6, 17, 15), (6, 16, 4)]),
])
def test_the_socket_options_per_platform(platform: str, expected: list[tuple[int, int, int]]) -> None:
    assert keepalive_options(platform) == expected


def test_an_unknown_platform_gets_so_keepalive_alone() -> None:
    assert keepalive_options("plan9") == [(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)]


def test_the_linux_numbers_are_the_socket_modules() -> None:
    # The table's Linux row against the running system's own constants.
    if not hasattr(socket, "TCP_KEEPIDLE"):
        pytest.skip("no TCP_KEEPIDLE here")
    assert keepalive_options("linux") == [
        (socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1), (socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, 60),
        (socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, 15), (socket.IPPROTO_TCP, socket.TCP_KEEPCNT, 4)]


def _timers(port: int) -> dict[str, str]:
    """Each established connection to 127.0.0.1:port (the client's side): its local address
    and its ``timer:(...)`` (``none`` without a timer)."""
    out = subprocess.run(["ss", "-tnoH", "state", "established", f"( dport = :{port} )"],
                         capture_output=True, text=True, check=True).stdout
    timers = {}
    for line in out.splitlines():
        if line.strip():
            local = line.split()[2]
            m = re.search(r"timer:\(([^)]*)\)", line)
            timers[local] = m.group(1) if m else "none"
    return timers


def _has_keepalive(port: int, new: set[str]) -> None:
    """The connections in ``new`` (opened by the call under test: other clients in this process
    keep their own to the shared server) show the keepalive timer. The kernel shows one timer per
    socket, and a retransmission timer (``on``) takes its place while data awaits its ACK: that
    is waited out (polled for up to 10 s), any other answer fails at once."""
    assert new, f"the call opened no connection to port {port}"
    deadline = time.monotonic() + 10
    while True:
        timers = {local: t for local, t in _timers(port).items() if local in new}
        kinds = [[*timer.split(","), "", ""][:3] for timer in timers.values()]
        if not any(k[0] == "on" for k in kinds) or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert timers, f"the connections {new} to port {port} are gone"
    for kind, left, _ in kinds:
        assert kind == "keepalive", timers
        assert _seconds(left) <= KEEPALIVE_IDLE_S, timers


def _seconds(left: str) -> float:
    """ss's time left (``59sec``, ``1min``, ``1min2sec``, ``500ms``) in seconds."""
    m = re.fullmatch(r"(?:(\d+)min)?(?:(\d+(?:\.\d+)?)sec)?(?:(\d+)ms)?", left)
    assert m is not None and left, f"unexpected ss timer {left!r}"
    minutes, secs, ms = m.groups()
    return int(minutes or 0) * 60 + float(secs or 0) + int(ms or 0) / 1000


needs_ss = pytest.mark.skipif(shutil.which("ss") is None, reason="ss (iproute2) is not installed")


@pytest.fixture(autouse=True)
def _fresh_connections() -> Iterator[None]:
    llmclient.close_all()
    yield
    llmclient.close_all()


@needs_ss
@pytest.mark.parametrize("kind", ["h2", "h1", "tls"])
def test_every_connection_to_the_origin_keeps_alive(drive: Drive, kind: str, ref_server,
                                                    ref_server_h1, ref_server_tls) -> None:
    server = {"h2": ref_server, "h1": ref_server_h1, "tls": ref_server_tls}[kind]
    client = drive.client(base_url=server.base_url, api_key="k", max_retries=0,
                          verify=server.ca_path or True)
    before = set(_timers(server.port))
    r = drive(client.chat.completions.create(model="gpt-4o-mini", messages=MSG, max_tokens=4))
    assert r.choices[0].message.content
    _has_keepalive(server.port, set(_timers(server.port)) - before)


@needs_ss
@pytest.mark.skipif(shutil.which("tinyproxy") is None, reason="tinyproxy is not installed")
def test_the_connection_to_a_proxy_keeps_alive(drive: Drive, ref_server_tls) -> None:
    proxy = start_tinyproxy()
    try:
        client = drive.client(base_url=ref_server_tls.base_url, api_key="k", max_retries=0,
                              verify=ref_server_tls.ca_path, proxy=proxy.url)
        r = drive(client.chat.completions.create(model="gpt-4o-mini", messages=MSG, max_tokens=4))
        assert r.choices[0].message.content
        assert any(line.startswith("CONNECT") for line in proxy.requests())
        _has_keepalive(proxy.port, set(_timers(proxy.port)))  # a new proxy: all are the call's
    finally:
        stop_tinyproxy(proxy)
