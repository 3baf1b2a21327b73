"""`Network`: the emulated path in front of a server, and `measure_network`: what it achieves."""

from __future__ import annotations

import socket
import ssl
import statistics
import struct
import time
from typing import Any

from ._forwarder import Forwarder
from ._netns import NetnsLink
from ._probe import ProbeServer
from ._profiles import PROFILES, NetworkProfile, get_profile

__all__ = ["Network", "measure_network"]


class Network:
    """A shaped path to `upstream`; clients connect to `net.host:net.port` (or `net.url`).

        with Network(profile="wan", upstream=("127.0.0.1", 8000)) as net:
            client = OpenAI(base_url=net.url + "/v1")

    With `netns` (a started NetnsLink whose namespace runs the server), bandwidth comes from
    tbf on the veth and the forwarder adds delay, jitter, loss and the handshake only.
    """

    def __init__(
        self,
        profile: str | NetworkProfile = "wan",
        upstream: tuple[str, int] = ("127.0.0.1", 8000),
        *,
        listen: tuple[str, int] = ("127.0.0.1", 0),
        seed: int | None = None,
        netns: NetnsLink | None = None,
    ) -> None:
        host, port = upstream
        if not isinstance(port, int) or not 0 < port < 65536:
            raise ValueError(f"upstream port must be an int in 1..65535, got {port!r}")
        self.profile = get_profile(profile)
        self.upstream = (host, port)
        self.netns = netns
        self.seed = seed
        self._forwarder = Forwarder(
            self.profile, self.upstream, listen=listen, seed=seed, shape_bandwidth=netns is None
        )

    @property
    def host(self) -> str:
        return self._forwarder.address[0]

    @property
    def port(self) -> int:
        return self._forwarder.address[1]

    @property
    def address(self) -> tuple[str, int]:
        return self._forwarder.address

    @property
    def url(self) -> str:
        return self.origin("http")

    def origin(self, scheme: str = "http") -> str:
        return f"{scheme}://{self.host}:{self.port}"

    @property
    def stats(self) -> dict[str, Any]:
        return self._forwarder.stats.as_dict()

    def start(self) -> Network:
        self._forwarder.start()
        return self

    def close(self) -> None:
        self._forwarder.stop()

    def __enter__(self) -> Network:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


# -- measurement ---------------------------------------------------------------------------


def _connect(address: tuple[str, int]) -> socket.socket:
    sock = socket.create_connection(address, timeout=30)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        data = sock.recv(n - len(buf))
        if not data:
            raise ConnectionError("peer closed during a measurement")
        buf += data
    return bytes(buf)


def echo_times(address: tuple[str, int], samples: int) -> tuple[float, list[float]]:
    """(connect + first echo, [echo round trips on the same connection]) in seconds."""
    t0 = time.perf_counter()
    with _connect(address) as sock:
        sock.sendall(b"Ex")
        _recv_exact(sock, 1)
        fresh = time.perf_counter() - t0
        rtts = []
        for _ in range(samples):
            t = time.perf_counter()
            sock.sendall(b"y")
            _recv_exact(sock, 1)
            rtts.append(time.perf_counter() - t)
    return fresh, rtts


def download_mbit(address: tuple[str, int], nbytes: int) -> float:
    """Rate between the first and the last byte of an n-byte download."""
    with _connect(address) as sock:
        sock.sendall(b"S" + struct.pack(">Q", nbytes))
        first = sock.recv(1 << 20)
        t_first = time.monotonic()
        got = len(first)
        while got < nbytes:
            data = sock.recv(1 << 20)
            if not data:
                raise ConnectionError("download ended early")
            got += len(data)
        t_last = time.monotonic()
    return (nbytes - len(first)) * 8 / max(t_last - t_first, 1e-9) / 1e6


def upload_mbit(address: tuple[str, int], nbytes: int) -> float:
    """Rate between the first and the last byte the sink received of an n-byte upload."""
    with _connect(address) as sock:
        sock.sendall(b"K" + struct.pack(">Q", nbytes))
        block = b"\x5a" * (256 * 1024)
        left = nbytes
        while left > 0:
            sock.sendall(block[: min(left, len(block))])
            left -= min(left, len(block))
        first, last, first_len = struct.unpack(">ddQ", _recv_exact(sock, 24))
    return (nbytes - first_len) * 8 / max(last - first, 1e-9) / 1e6


def tls_handshake_times(
    address: tuple[str, int], context: ssl.SSLContext, server_hostname: str | None, samples: int
) -> list[float]:
    """TCP connect + TLS handshake through the path, on fresh connections (seconds)."""
    out = []
    for _ in range(samples):
        t0 = time.perf_counter()
        with _connect(address) as raw, context.wrap_socket(raw, server_hostname=server_hostname):
            out.append(time.perf_counter() - t0)
    return out


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


def _summary(values: list[float]) -> dict[str, float | int]:
    ordered = sorted(values)
    return {
        "median": _ms(statistics.median(ordered)),
        "p90": _ms(ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]),
        "min": _ms(ordered[0]),
        "n": len(ordered),
    }


def _transfer_bytes(mbit: float | None, seconds: float) -> int:
    if mbit is None:
        return 16 * 1024 * 1024
    return int(min(16 * 1024 * 1024, max(256 * 1024, mbit * 1e6 / 8 * seconds)))


def measure_network(
    net: Network,
    *,
    samples: int = 15,
    transfer_seconds: float = 0.5,
    ssl_context: ssl.SSLContext | None = None,
    server_hostname: str | None = None,
) -> dict[str, Any]:
    """Measure what `net`'s profile really achieves, before a benchmark relies on it.

    RTT, handshake and bandwidth go through a second forwarder with the same profile (and
    the same namespace, when there is one) to an in-process probe server, because the real
    upstream speaks HTTP, not an echo protocol. The TLS handshake goes through `net` itself
    to the real upstream when `ssl_context` is given. The forwarder's own cost is the echo
    RTT through a `loopback`-profile forwarder minus the RTT of a direct connection.
    """
    profile = net.profile
    result: dict[str, Any] = {"profile": profile.name, "target": profile.as_dict()}
    probe_host = net.netns.server_host if net.netns is not None else "127.0.0.1"
    netns_name = net.netns.name if net.netns is not None else None
    with ProbeServer(probe_host, netns=netns_name) as probe:
        with Network(profile, probe.address, seed=net.seed, netns=net.netns) as shaped:
            fresh = []
            rtts: list[float] = []
            for _ in range(3):
                first, more = echo_times(shaped.address, samples)
                fresh.append(first)
                rtts += more
            result["rtt_ms"] = _summary(rtts)
            result["fresh_connection_ms"] = _summary(fresh)
            # A fresh connection pays the handshake before its first round trip.
            result["handshake_ms"] = _ms(statistics.median(fresh) - statistics.median(rtts))
            down_n = _transfer_bytes(profile.down_mbit, transfer_seconds)
            up_n = _transfer_bytes(profile.up_mbit, transfer_seconds)
            result["down_mbit"] = round(download_mbit(shaped.address, down_n), 3)
            result["up_mbit"] = round(upload_mbit(shaped.address, up_n), 3)
            result["transfer_bytes"] = {"down": down_n, "up": up_n}
            result["forwarder"] = shaped.stats
        if net.netns is None:
            result["forwarder_overhead"] = _overhead(probe.address, samples)
    if ssl_context is not None:
        # The certificate names the real server, not the forwarder in front of it.
        hostname = server_hostname or net.upstream[0]
        times = tls_handshake_times(net.address, ssl_context, hostname, 3)
        result["tls_connect_ms"] = _summary(times)
    return result


def _overhead(address: tuple[str, int], samples: int) -> dict[str, Any]:
    """Echo RTT direct vs through a zero-delay forwarder, interleaved so noise hits both."""
    direct: list[float] = []
    relayed: list[float] = []
    with Network(PROFILES["loopback"], address) as zero:
        for _ in range(3):
            direct += echo_times(address, samples)[1]
            relayed += echo_times(zero.address, samples)[1]
    d, r = statistics.median(direct), statistics.median(relayed)
    return {
        "direct_rtt_ms": _ms(d),
        "forwarded_rtt_ms": _ms(r),
        "added_rtt_ms": _ms(r - d),
        "n": len(direct),
    }


def format_measurement(result: dict[str, Any]) -> str:
    """One human-readable block of the achieved figures."""
    t = result["target"]
    lines = [
        f"profile {result['profile']}: target rtt {t['rtt_ms']} ms (jitter {t['jitter_ms']}), "
        f"down {t['down_mbit']} Mbit/s, up {t['up_mbit']} Mbit/s, loss {t['loss']}",
        f"  rtt        median {result['rtt_ms']['median']} ms  p90 {result['rtt_ms']['p90']} ms"
        f"  (n={result['rtt_ms']['n']})",
        f"  handshake  {result['handshake_ms']} ms (fresh connection "
        f"{result['fresh_connection_ms']['median']} ms to first echo)",
        f"  bandwidth  down {result['down_mbit']} Mbit/s, up {result['up_mbit']} Mbit/s",
    ]
    if "tls_connect_ms" in result:
        lines.append(f"  tls        connect+handshake {result['tls_connect_ms']['median']} ms")
    if "forwarder_overhead" in result:
        o = result["forwarder_overhead"]
        lines.append(
            f"  forwarder  +{o['added_rtt_ms']} ms per round trip "
            f"(direct {o['direct_rtt_ms']} ms, relayed {o['forwarded_rtt_ms']} ms, n={o['n']})"
        )
    late = result["forwarder"]["write_lateness_ms"]
    lines.append(f"  timer      writes late by p50 {late['p50']} ms, p99 {late['p99']} ms")
    return "\n".join(lines)
