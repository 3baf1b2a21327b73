"""The userspace forwarder over real sockets: delay, bandwidth, handshake, integrity.

Timing checks here are lower bounds only: bytes must never arrive earlier than the profile
allows, a bound that a busy machine cannot break (load only ever adds delay). How close the
achieved figures come to the profile is a measurement, not a test: every benchmark run
reports it (the trust line of its headline), and the shaper's arithmetic is tested exactly
on a virtual clock in test_netem_shaper.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import socket
import ssl
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks.netem import Network, NetworkProfile, measure_network
from benchmarks.netem._network import _connect, _recv_exact, echo_times
from benchmarks.netem._probe import ProbeServer

RTT = 0.040
MODEST = NetworkProfile("modest", rtt_ms=RTT * 1000, down_mbit=8.0, up_mbit=8.0)
# Timer slack: the forwarder's timers may fire up to a millisecond early; 2% of a 0.2 s
# transfer is 4 ms.
EARLY = 0.98


@pytest.fixture(scope="module")
def probe() -> Iterator[ProbeServer]:
    with ProbeServer() as server:
        yield server


def download_seconds(address: tuple[str, int], nbytes: int) -> float:
    """From before connecting to the last byte of an n-byte download from the probe."""
    t0 = time.monotonic()
    with _connect(address) as sock:
        sock.sendall(b"S" + struct.pack(">Q", nbytes))
        got = 0
        while got < nbytes:
            data = sock.recv(1 << 20)
            assert data, "download ended early"
            got += len(data)
    return time.monotonic() - t0


def upload_seconds(address: tuple[str, int], nbytes: int) -> float:
    """From before connecting until the probe says it has every byte of an n-byte upload."""
    t0 = time.monotonic()
    with _connect(address) as sock:
        sock.sendall(b"K" + struct.pack(">Q", nbytes) + b"\x5a" * nbytes)
        _recv_exact(sock, 24)
    return time.monotonic() - t0


def serialization_s(nbytes: int, mbit: float) -> float:
    return nbytes * 8 / (mbit * 1e6)


def test_round_trip_pays_the_rtt(probe: ProbeServer) -> None:
    with Network(MODEST, probe.address) as net:
        assert min(echo_times(net.address, 8)[1]) >= RTT * 0.99


def test_fresh_connection_pays_one_more_round_trip_than_a_reused_one(probe: ProbeServer) -> None:
    with Network(MODEST, probe.address) as net:
        fresh, reused = echo_times(net.address, 3)
    # The TCP handshake (one RTT) before the first echo (another): never less than two.
    assert fresh >= 2 * RTT * 0.99
    assert min(reused) >= RTT * 0.99


def test_bandwidth_each_way_is_never_exceeded(probe: ProbeServer) -> None:
    with Network(MODEST, probe.address) as net:
        assert download_seconds(net.address, 400_000) >= EARLY * serialization_s(400_000, 8.0)
        assert upload_seconds(net.address, 400_000) >= EARLY * serialization_s(400_000, 8.0)


def test_asymmetric_rates_apply_to_their_directions(probe: ProbeServer) -> None:
    profile = NetworkProfile("asym", rtt_ms=10, down_mbit=16.0, up_mbit=4.0)
    with Network(profile, probe.address) as net:
        # 200 kB up at 4 Mbit/s takes 0.4 s; at the download's 16 Mbit/s (directions swapped)
        # it would take 0.1 s, and unshaped far less: this lower bound catches both.
        assert upload_seconds(net.address, 200_000) >= EARLY * serialization_s(200_000, 4.0)
        assert download_seconds(net.address, 400_000) >= EARLY * serialization_s(400_000, 16.0)


def _echo_server() -> tuple[socket.socket, tuple[str, int]]:
    server = socket.create_server(("127.0.0.1", 0))

    def serve(conn: socket.socket) -> None:
        with conn:
            while data := conn.recv(1 << 16):
                conn.sendall(data)

    def accept() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    return server, server.getsockname()[:2]


def test_bytes_survive_shaping_jitter_and_loss_both_ways() -> None:
    profile = NetworkProfile(
        "rough", rtt_ms=10, jitter_ms=4, down_mbit=200.0, up_mbit=100.0, loss=0.01
    )
    server, address = _echo_server()
    payload = os.urandom(3 * 1024 * 1024)
    received = bytearray()
    with (
        server,
        Network(profile, address, seed=1234) as net,
        socket.create_connection(net.address) as sock,
    ):

        def read() -> None:
            while len(received) < len(payload) and (data := sock.recv(1 << 20)):
                received.extend(data)

        reader = threading.Thread(target=read)
        reader.start()
        view = memoryview(payload)
        for offset in range(0, len(payload), 100_000):  # uneven writes
            sock.sendall(view[offset : offset + 100_000])
        reader.join(timeout=60)
        stats = net.stats
    assert hashlib.sha256(received).digest() == hashlib.sha256(payload).digest()
    assert stats["lost_segments"] > 0  # the loss path really ran
    assert stats["bytes_up"] == stats["bytes_down"] == len(payload)


def test_jitter_varies_arrival_but_keeps_the_stream_in_order() -> None:
    profile = NetworkProfile("jittery", rtt_ms=20, jitter_ms=8)
    server, address = _echo_server()
    with (
        server,
        Network(profile, address, seed=9) as net,
        socket.create_connection(net.address) as sock,
    ):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        rtts = []
        for i in range(30):
            t = time.perf_counter()
            sock.sendall(i.to_bytes(4, "big"))
            got = b""
            while len(got) < 4:
                got += sock.recv(4 - len(got))
            rtts.append(time.perf_counter() - t)
            assert int.from_bytes(got, "big") == i
    assert min(rtts) >= 0.020 - 0.016 - 0.0005  # rtt - 2 * jitter at the extreme
    assert max(rtts) - min(rtts) > 0.004


def test_half_close_reaches_the_server_after_the_data() -> None:
    server, address = _echo_server()
    with (
        server,
        Network(NetworkProfile("d", rtt_ms=10), address) as net,
        socket.create_connection(net.address) as sock,
    ):
        sock.sendall(b"hello")
        sock.shutdown(socket.SHUT_WR)
        data = b""
        while chunk := sock.recv(100):  # the echo server closes after our EOF reaches it
            data += chunk
    assert data == b"hello"


def test_unreachable_upstream_closes_the_client_connection() -> None:
    dead = socket.create_server(("127.0.0.1", 0))
    address = dead.getsockname()[:2]
    dead.close()
    with (
        Network(NetworkProfile("d", rtt_ms=2), address) as net,
        socket.create_connection(net.address) as sock,
    ):
        sock.settimeout(5)
        sock.sendall(b"x")
        try:
            assert sock.recv(10) == b""
        except ConnectionResetError:
            pass
        assert net.stats["upstream_errors"] == 1


def test_measure_network_reports_achieved_figures(probe: ProbeServer) -> None:
    with Network(MODEST, ("127.0.0.1", 9)) as net:
        result = measure_network(net, samples=5, transfer_seconds=0.3)
    assert result["profile"] == "modest"
    assert result["rtt_ms"]["min"] >= 40 * 0.99
    assert result["rtt_ms"]["min"] <= result["rtt_ms"]["median"] <= result["rtt_ms"]["p90"]
    assert result["fresh_connection_ms"]["min"] >= 80 * 0.99
    # The achieved rates are figures for the report (first to last byte, which a stalled and
    # then catching-up forwarder can put on either side of 8): here only that they are there.
    assert result["down_mbit"] > 0 and result["up_mbit"] > 0
    assert result["transfer_bytes"]["down"] > 0 and result["transfer_bytes"]["up"] > 0
    assert result["rtt_ms"]["n"] == 15 and result["fresh_connection_ms"]["n"] == 3
    overhead = result["forwarder_overhead"]
    assert overhead["n"] == 15
    assert overhead["forwarded_rtt_ms"] > 0 and overhead["direct_rtt_ms"] > 0
    assert "tls_connect_ms" not in result


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[tuple[str, int], Path]]:
    directory = tmp_path_factory.mktemp("tls")
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        [
            *shlex.split(
                "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
            ),
            *("-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=127.0.0.1"),
            *("-addext", "subjectAltName=IP:127.0.0.1"),
        ],
        check=True,
        capture_output=True,
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server = socket.create_server(("127.0.0.1", 0))

    def serve(raw: socket.socket) -> None:
        try:
            with context.wrap_socket(raw, server_side=True) as conn:
                conn.recv(1)
        except (OSError, ssl.SSLError):
            pass

    def accept() -> None:
        while True:
            try:
                raw, _ = server.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(raw,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    with server:
        yield server.getsockname()[:2], cert


def test_tls_handshake_pays_the_network(tls_server: tuple[tuple[str, int], Path]) -> None:
    address, ca = tls_server
    context = ssl.create_default_context(cafile=str(ca))
    profile = NetworkProfile("tls", rtt_ms=30)
    with Network(profile, address) as net:
        result = measure_network(net, samples=3, ssl_context=context, transfer_seconds=0.1)
    # TCP handshake (1 RTT) + TLS 1.3 ClientHello/ServerHello..Finished (1 RTT).
    assert result["tls_connect_ms"]["min"] >= 2 * 30 * 0.99
    assert result["tls_connect_ms"]["n"] == 3


def test_cli_measures_and_prints_json() -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.netem",
            "--profile",
            "rtt=20,down=50,up=50",
            *shlex.split("--upstream 127.0.0.1:9 --measure-only --json --seed 3"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert proc.returncode == 0, proc.stderr
    text, _, listening = proc.stdout.rpartition("LISTENING")
    result = json.loads(text)
    assert result["target"]["rtt_ms"] == 20
    assert result["rtt_ms"]["min"] >= 20 * 0.99
    assert listening.strip().endswith("-> 127.0.0.1:9")


def test_cli_rejects_a_bad_profile() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.netem", "--profile", "dialup", "--upstream", "1.2:x"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert proc.returncode == 2
    assert "HOST:PORT" in proc.stderr
