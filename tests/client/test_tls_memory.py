"""The socket of a sync HTTP/2 connection, which one thread reads while others write.

llmclient/transport/tls.py (TLS in memory over a plain socket) against peers nobody here wrote:
``openssl s_server`` (TLS 1.3 KeyUpdate, TLS 1.2 renegotiation, close_notify, a wrong
hostname) and the reference server's TLS listener through both clients (an untrusted
certificate); and the read and write timeouts kept apart in the kernel."""

from __future__ import annotations

import os
import shutil
import socket
import ssl
import struct
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import llmclient
from benchmarks.server.tls import CertPaths, generate_certs
from llmclient.transport.tls import MemoryTLS
from tests._both import Drive


class SServer:
    """``openssl s_server`` on a free port: what a client sends shows on its stdout, what is
    written to its stdin goes to the client, and a line ``K`` / ``q`` is a command (KeyUpdate
    asking for one back, ``r``: TLS 1.2 renegotiation, ``q``: close the connection)."""

    def __init__(self, cert: Path, key: Path, version: str) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.proc = subprocess.Popen(
            ["stdbuf", "-oL", "openssl", "s_server", "-accept", f"127.0.0.1:{self.port}", "-cert", str(cert),
             "-key", str(key), version],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise RuntimeError("openssl s_server did not start") from None
                time.sleep(0.05)

    def command(self, line: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()

    def read_until(self, line: bytes) -> None:
        """Its output up to the line ``line`` (what the client sent, decrypted)."""
        assert self.proc.stdout is not None
        seen = []
        while True:
            got = self.proc.stdout.readline()
            seen.append(got)
            if got == line + b"\n":
                return
            assert got, f"s_server ended before {line!r}: {b''.join(seen[-8:])!r}"


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> CertPaths:
    return generate_certs(tmp_path_factory.mktemp("s_server"))


@pytest.fixture(params=["-tls1_3"])
def s_server(certs: CertPaths, request: pytest.FixtureRequest) -> Iterator[SServer]:
    if shutil.which("openssl") is None:
        why = "openssl is not installed: scripts/ensure-system-deps.sh installs it (as root)"
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    server = SServer(certs.cert, certs.key, request.param)
    yield server
    server.proc.kill()
    server.proc.wait()


def _connect(port: int, ca: Path, hostname: str = "localhost") -> MemoryTLS:
    raw = socket.create_connection(("127.0.0.1", port), timeout=5)
    tls = MemoryTLS(raw, ssl.create_default_context(cafile=str(ca)), hostname)
    tls.handshake(5)
    raw.settimeout(5)
    return tls


def test_a_key_update_is_answered_and_data_flows_both_ways(s_server: SServer, certs: CertPaths) -> None:
    tls = _connect(s_server.port, certs.ca)
    assert tls.version() == "TLSv1.3"
    tls.sendall(b"before\n")
    s_server.read_until(b"before")
    s_server.command(b"K")  # KeyUpdate with update_requested: we must send ours back
    s_server.read_until(b"SSL_do_handshake -> 1")  # sent (stdin read together would be one line)
    s_server.command(b"after the update")
    assert tls.recv() == b"after the update\n"
    tls.sendall(b"from us, under our new key\n")  # undecryptable if our KeyUpdate had not gone
    s_server.read_until(b"from us, under our new key")
    tls.close()


@pytest.mark.parametrize("s_server", ["-tls1_2"], indirect=True)
def test_what_a_read_must_answer_leaves_with_the_read(s_server: SServer, certs: CertPaths) -> None:
    """A TLS 1.2 renegotiation, with the client only reading: each handshake message it reads
    makes one it must send (ClientHello, then its key exchange and Finished) before the server
    goes on; no write comes to carry them. (HTTP/2 forbids renegotiation, RFC 9113 section
    9.2.1; it is the one thing a server can send that a read must answer.)"""
    tls = _connect(s_server.port, certs.ca)
    assert tls.version() == "TLSv1.2"
    tls.sendall(b"before\n")
    s_server.read_until(b"before")
    s_server.command(b"r")  # HelloRequest
    s_server.read_until(b"SSL_do_handshake -> 1")
    s_server.command(b"one")
    s_server.command(b"two")  # the server sends it once the renegotiation is done
    got = b""
    while got.count(b"\n") < 2:
        part = tls.recv()
        assert part, "the connection ended"
        got += part
    assert got == b"one\ntwo\n"
    # The renegotiation ends once the server has our answers: until then a write says so
    # (and is refused); reading on lets the handshake's next messages in.
    tls.raw.settimeout(0.1)
    deadline = time.monotonic() + 5
    while True:
        try:
            tls.sendall(b"still talking\n")
            break
        except ssl.SSLError as exc:
            assert "renegotiated" in str(exc) and time.monotonic() < deadline, exc
        with pytest.raises(TimeoutError):
            tls.recv()
    s_server.read_until(b"still talking")
    tls.close()


def test_close_notify_reads_as_the_end(s_server: SServer, certs: CertPaths) -> None:
    tls = _connect(s_server.port, certs.ca)
    tls.sendall(b"hi\n")
    s_server.read_until(b"hi")
    s_server.command(b"q")  # close_notify, then the socket closes
    assert tls.recv() == b""
    assert tls.recv() == b""  # and stays ended
    tls.close()


def test_a_wrong_hostname_fails_the_handshake(s_server: SServer, certs: CertPaths) -> None:
    with pytest.raises(ssl.SSLCertVerificationError, match=r"Hostname mismatch|doesn.t match"):
        _connect(s_server.port, certs.ca, hostname="not-this-host.example")


def test_an_untrusted_certificate_is_refused(drive: Drive, ref_server_tls: Any) -> None:
    """The sync client's HTTP/2 TLS handshake is its own now (llmclient/transport/tls.py): it still
    verifies, against the system's CAs by default, and says so clearly."""
    c = drive.client(base_url=ref_server_tls.base_url, api_key="k", max_retries=0)
    with pytest.raises(llmclient.APIConnectionError, match="CERTIFICATE_VERIFY_FAILED"):
        drive(c.chat.completions.create(model="sim-zero", messages=[{"role": "user", "content": "x"}]))



@pytest.mark.parametrize("fixture", ["ref_server", "ref_server_tls"])
def test_a_writer_never_sets_the_readers_timeout(request: pytest.FixtureRequest, fixture: str) -> None:
    """One thread reads a sync HTTP/2 connection while others write. With one timeout for both
    directions a writer's short write timeout (``httpx.Timeout(60, write=0.05)``) could land on
    the socket just before the reader's ``recv``, which then timed out at 0.05 s; the kernel
    keeps the two apart (to the kernel's tick), and each side now sets its own."""
    import httpx

    from llmclient.transport.http2.sync_driver import connect_sync

    server = request.getfixturevalue(fixture)
    context = ssl.create_default_context(cafile=server.ca_path) if server.ca_path else ssl.create_default_context()
    url = httpx.URL(server.base_url)
    conn = connect_sync(url, context, httpx.Request("GET", url, extensions={"timeout": {"connect": 5}}))
    try:
        raw = conn._raw

        def kernel(option: int) -> float:
            sec, usec = struct.unpack("ll", raw.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("ll")))
            return sec + usec / 1e6

        conn._set_timeout(60.0, write=False)  # the reader's
        conn._set_timeout(0.05, write=True)  # a writer's, meanwhile
        assert kernel(socket.SO_RCVTIMEO) == pytest.approx(60.0, abs=0.01)
        assert kernel(socket.SO_SNDTIMEO) == pytest.approx(0.05, abs=0.01)
        conn._set_timeout(None, write=False)  # no read timeout: blocking reads
        assert kernel(socket.SO_RCVTIMEO) == 0.0 and kernel(socket.SO_SNDTIMEO) == pytest.approx(0.05, abs=0.01)
    finally:
        conn.close()


class _SilentPeer:
    """A TCP listener that accepts and then says nothing (``close=False``) or hangs up at once
    (``close=True``): a TLS handshake with it must end at the connect timeout, or at once."""

    def __init__(self, close: bool) -> None:
        import threading

        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._held: list[socket.socket] = []
        self._close = close
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            if self._close:
                conn.close()
            else:
                self._held.append(conn)

    def stop(self) -> None:
        self._listener.close()
        for conn in self._held:
            conn.close()


@pytest.mark.parametrize("close", [False, True], ids=["silent", "hangs-up"])
def test_a_handshake_that_goes_nowhere_ends_at_the_connect_timeout_or_at_once(drive: Drive, close: bool) -> None:
    import httpx

    peer = _SilentPeer(close)
    try:
        # A peer that hangs up must fail long before a 10 s connect timeout; a silent one at
        # its 0.5 s connect timeout, long before the 30 s read timeout.
        c = drive.client(base_url=f"https://127.0.0.1:{peer.port}/v1", api_key="k", max_retries=0,
                         timeout=httpx.Timeout(30.0, connect=10.0 if close else 0.5))
        started = time.monotonic()
        error = llmclient.APIConnectionError  # APITimeoutError is one too
        with pytest.raises(error) as info:
            drive(c.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}]))
        elapsed = time.monotonic() - started
    finally:
        peer.stop()
    if close:
        assert not isinstance(info.value, llmclient.APITimeoutError), info.value
        assert elapsed < 5, elapsed  # decided now, not at the timeout
    else:
        assert isinstance(info.value, llmclient.APITimeoutError), info.value
        assert elapsed < 10, elapsed  # the connect timeout (0.5 s), not the read timeout (30 s)
