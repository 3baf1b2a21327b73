"""Happy Eyeballs (RFC 8305) for every connect: ``transport/eyeballs.py`` (the order and the
timing, pure) and ``transport/connect.py`` (the sync and async races).

For real: a network namespace (``benchmarks.netem.DualStackLink``) where a name resolves to an
IPv6 address, then an IPv4 one, of a reference server on the host, and every packet from the
IPv6 address is dropped (nftables). A client that tries the addresses in turn waits out its
connect timeout on IPv6; ours starts IPv4 250 ms later. The clients run inside the namespace
(its own resolver), through the benchmark's probe (``benchmarks.reliability``), sync, async,
direct and through a forward proxy known by the same dual-stack name, with the official client
as the control. Skipped, naming why, where this machine cannot make namespaces.
"""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from benchmarks import reliability
from benchmarks.harness.serverproc import ServerProcess, start_server
from benchmarks.netem import DualStackLink, dualstack_supported
from llmclient.transport import connect, eyeballs

V6 = (socket.AF_INET6, socket.SOCK_STREAM, 6, "", ("fd00::1", 80, 0, 0))
V6B = (socket.AF_INET6, socket.SOCK_STREAM, 6, "", ("fd00::2", 80, 0, 0))
V4 = (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("198.18.0.1", 80))
V4B = (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("198.18.0.5", 80))


def test_addresses_alternate_by_family_starting_with_the_resolvers_first() -> None:
    assert eyeballs.interleave([V6, V6B, V4, V4B]) == [V6, V4, V6B, V4B]
    assert eyeballs.interleave([V4, V4B, V6]) == [V4, V6, V4B]
    assert eyeballs.interleave([V6, V6B]) == [V6, V6B]
    assert eyeballs.interleave([]) == []


def test_the_next_attempt_starts_after_the_delay_or_at_once_when_none_is_in_flight() -> None:
    assert eyeballs.CONNECTION_ATTEMPT_DELAY_S == 0.25  # RFC 8305 section 5's recommendation
    assert eyeballs.next_start(None, 0) == float("-inf")  # the first: now
    assert eyeballs.next_start(10.0, 1) == 10.25  # one in flight: 250 ms after it started
    assert eyeballs.next_start(10.0, 0) == float("-inf")  # every earlier one failed: now


def test_a_refused_first_address_moves_to_the_next_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # 127.0.0.2 refuses (nothing listens there on this port); the listener is on 127.0.0.1
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    infos = [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.2", port)),
             (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]
    monkeypatch.setattr(connect, "_resolve", lambda host, p: infos)  # two addresses for one name
    try:
        sock, tried = connect.connect_tcp_sync("two.test", port, 10.0, delay=60.0)
        assert tried == 2 and sock.getpeername()[0] == "127.0.0.1"  # not 60 s later: at once
        sock.close()
    finally:
        listener.close()


def test_every_address_refused_names_each_error() -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    listener.close()  # nothing listens now
    with pytest.raises(ConnectionRefusedError, match="Connection refused"):
        connect.connect_tcp_sync("127.0.0.1", port, 5.0)

    async def go() -> None:
        await connect.connect_tcp_async("127.0.0.1", port, asyncio.Protocol)

    with pytest.raises(ConnectionRefusedError):
        asyncio.run(go())


# -- for real: a namespace whose IPv6 route blackholes ------------------------------------------------


@pytest.fixture(scope="module")
def dual() -> Iterator[tuple[DualStackLink, ServerProcess]]:
    ok, why = dualstack_supported()
    if not ok:
        pytest.skip(f"no network namespace here: {why}")
    with DualStackLink() as link:
        link.blackhole_ipv6()
        server = start_server("zero", extra_args=("--host", link.host_address))
        try:
            yield link, server
        finally:
            server.stop()


CONNECT_TIMEOUT_S = 20.0  # what a client that tries IPv6 first waits out


@pytest.mark.parametrize("client", ["llmclient", "llmclient-async"])
def test_a_new_connection_to_a_name_whose_ipv6_blackholes_goes_over_ipv4_without_waiting(
        dual: tuple[DualStackLink, ServerProcess], client: str) -> None:
    link, server = dual
    url = f"http://{link.NAME}:{server.port}/v1"
    rows = reliability.run_probe(link, url, client, 2, CONNECT_TIMEOUT_S)
    for row in rows:
        assert "error" not in row, row
        assert row["family"] == "IPv4" and row["address"] == link.host_address
        assert row["attempts"] == 2  # the IPv6 address was tried first, then IPv4 won
        # a hang guard, not a timing: a client that waited for IPv6 would take the 20 s timeout
        assert row["connect_ms"] < CONNECT_TIMEOUT_S * 1000 / 2


def test_the_official_client_waits_out_its_connect_timeout_there(dual: tuple[DualStackLink, ServerProcess]) -> None:
    # the control: socket.create_connection tries the IPv6 address until the connect timeout
    link, server = dual
    url = f"http://{link.NAME}:{server.port}/v1"
    rows = reliability.run_probe(link, url, "openai", 1, 2.0)
    assert "error" not in rows[0], rows
    assert rows[0]["wall_ms"] >= 2000.0  # it could only be slower on a busy machine, never faster


class _ConnectProxy:
    """A minimal forward proxy (CONNECT and absolute-form) on the host end's IPv4 address, for
    the dual-stack name: the proxy, not only the origin, is reached by Happy Eyeballs."""

    def __init__(self, host: str) -> None:
        self.listener = socket.create_server((host, 0))
        self.port = self.listener.getsockname()[1]
        self.requests: list[bytes] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = client.recv(65536)
            if not chunk:
                client.close()
                return
            head += chunk
        line = head.split(b"\r\n", 1)[0]
        self.requests.append(line)
        method, target, _ = line.split(b" ", 2)
        if method == b"CONNECT":
            host, port = target.rsplit(b":", 1)
            upstream = socket.create_connection((host.decode(), int(port)))
            client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            rest = head.split(b"\r\n\r\n", 1)[1]
            if rest:
                upstream.sendall(rest)
        else:  # absolute-form: http://host:port/path
            authority = target.split(b"/", 3)[2]
            host, port = authority.rsplit(b":", 1)
            upstream = socket.create_connection((host.decode(), int(port)))
            upstream.sendall(head)
        for a, b in ((client, upstream), (upstream, client)):
            threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        self.listener.close()


_PROXY_PROBE = """
import asyncio, json, sys, time
import llmclient
url, proxy, kind = sys.argv[1:4]
t0 = time.perf_counter()
if kind == "async":
    async def go():
        c = llmclient.AsyncOpenAI(base_url=url, api_key="k", proxy=proxy, max_retries=0, timeout=30)
        try:
            return await c.chat.completions.create(model="sim-zero", messages=[{"role": "user", "content": "hi"}], max_tokens=2)
        finally:
            await c.close()
    answer = asyncio.run(go())
else:
    c = llmclient.OpenAI(base_url=url, api_key="k", proxy=proxy, max_retries=0, timeout=30)
    answer = c.chat.completions.create(model="sim-zero", messages=[{"role": "user", "content": "hi"}], max_tokens=2)
r = answer.timings
print(json.dumps({"wall_ms": (time.perf_counter() - t0) * 1000, "family": r.address_family,
                  "address": r.remote_address, "connect_ms": r.connect_ms}))
"""


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_proxy_known_by_a_dual_stack_name_is_reached_over_ipv4_without_waiting(
        dual: tuple[DualStackLink, ServerProcess], kind: str) -> None:
    import json

    link, server = dual
    proxy = _ConnectProxy(link.host_address)
    try:
        # the origin by address (the proxy resolves it), the proxy by the dual-stack name
        url = f"http://{link.host_address}:{server.port}/v1"
        argv = link.command([sys.executable, "-c", _PROXY_PROBE, url, f"http://{link.NAME}:{proxy.port}", kind])
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False,
                              env=_env(), cwd=str(reliability.Path(reliability.__file__).parent.parent))
        assert done.returncode == 0, done.stderr[-3000:]
        row: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    finally:
        time.sleep(0.1)
        proxy.close()
    assert proxy.requests, "the call did not go through the proxy"
    assert row["family"] == "IPv4" and row["address"] == link.host_address  # the proxy's address
    assert row["wall_ms"] < CONNECT_TIMEOUT_S * 1000 / 2  # hang guard: no connect timeout waited out


def _env() -> dict[str, str]:
    import os

    root = str(reliability.Path(reliability.__file__).resolve().parent.parent)
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p),
            "NO_PROXY": "", "no_proxy": ""}
