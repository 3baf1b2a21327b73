"""Shared fixtures: the reference server as a real subprocess (docs/CONTRACTS.md).

``ref_server`` (HTTP/1.1 + h2c), ``ref_server_tls`` (HTTPS, ALPN h2; ``.ca_path`` is the CA to
trust) and ``ref_server_h1`` (HTTP/1.1 only), each started once per session with
``python -m benchmarks.server --port 0 --profile zero --allow-fault-headers`` (tests inject
faults per request with the ``x-fault`` header) and killed at the end.

``drive`` runs a test on both clients, ``OpenAI`` and ``AsyncOpenAI`` (tests/_both.py).
"""

from __future__ import annotations

import os
import selectors
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from benchmarks.fixtures.processes import stop_process
from benchmarks.fixtures.redis import REDIS_SERVER, redis_server
from tests._addresses import start_holding_ports
from tests._both import KINDS, Drive

ROOT = Path(__file__).resolve().parents[1]
START_TIMEOUT_S = 60.0
# The server ignores x-fault headers unless started with this flag.
FAULT_HEADERS = "--allow-fault-headers"


@dataclass
class RefServer:
    url: str                      # origin, e.g. "http://127.0.0.1:41234"
    port: int
    ca_path: str | None = None    # CA bundle for the TLS server
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    log_path: Path | None = None  # the server's stderr (logs), for debugging a failure

    @property
    def base_url(self) -> str:
        return self.url + "/v1"


def _read_ready(proc: subprocess.Popen[bytes], log_path: Path) -> tuple[str, str | None]:
    assert proc.stdout is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    deadline, buf, ca = time.monotonic() + START_TIMEOUT_S, b"", None
    while time.monotonic() < deadline:
        if not sel.select(timeout=0.2):
            if proc.poll() is not None:
                break
            continue
        chunk = os.read(proc.stdout.fileno(), 4096)
        if not chunk:
            break
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            text = line.decode().strip()
            if text.startswith("CA "):
                ca = text[3:]
            elif text.startswith("READY "):
                return text[6:], ca
    proc.kill()
    raise RuntimeError(f"reference server did not start; its log:\n{log_path.read_text()[-4000:]}")


def start_ref_server(*extra: str, profile: str = "zero") -> RefServer:
    """Start ``python -m benchmarks.server`` on a free port; the caller must ``stop_ref_server``."""
    log_path = Path(tempfile.mkstemp(prefix="ref-server-", suffix=".log")[1])
    # A test's server stops at once (a stalled stream would hold a graceful stop for the
    # server's 3 s grace); a test that checks the drain passes its own --shutdown-grace-s.
    cmd = [sys.executable, "-m", "benchmarks.server", "--host", "127.0.0.1", "--port", "0",
           "--profile", profile, "--shutdown-grace-s", "0.2", *extra]

    def start() -> RefServer:
        with log_path.open("wb") as log:
            proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=log)
        url, ca = _read_ready(proc, log_path)
        return RefServer(url, int(url.rsplit(":", 1)[1]), ca, proc, log_path)

    def pid_and_port(server: RefServer) -> tuple[int, list[int]]:
        assert server.process is not None
        return server.process.pid, [server.port]

    # The server finds a free port, then binds it with SO_REUSEPORT (granian): another worker's
    # server may have bound the same one in between, and connections would be spread over the
    # two (tests/_addresses.foreign_listeners). Then it starts again.
    return start_holding_ports(start, pid_and_port, stop_ref_server, "reference server")


def stop_ref_server(server: RefServer) -> None:
    proc = server.process
    if proc is None or proc.poll() is not None:
        return
    stop_process(proc)
    if proc.stdout is not None:
        proc.stdout.close()


@pytest.fixture(scope="session")
def ref_server() -> Iterator[RefServer]:
    server = start_ref_server(FAULT_HEADERS)
    yield server
    stop_ref_server(server)


@pytest.fixture(scope="session")
def ref_server_tls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RefServer]:
    cert_dir = tmp_path_factory.mktemp("ref-server-tls")
    server = start_ref_server(FAULT_HEADERS, "--tls", "--cert-dir", str(cert_dir))
    yield server
    stop_ref_server(server)


@pytest.fixture(scope="session")
def ref_server_h1() -> Iterator[RefServer]:
    server = start_ref_server(FAULT_HEADERS, "--http1-only")
    yield server
    stop_ref_server(server)


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    """A real redis-server on a free loopback port (benchmarks.fixtures.redis, the launcher the
    cache tools use too), one per test module: state a module leaves (ejections, budgets, in-flight
    counts keyed by a replica's URL, whose port another module may get again) stays with it."""
    with redis_server() as url:
        if url is None:
            pytest.skip(f"redis-server not found at {REDIS_SERVER} (apt-get install redis-server)")
        yield url


@pytest.fixture(params=KINDS)
def drive(request: pytest.FixtureRequest) -> Iterator[Drive]:
    """The test body runs twice: on ``OpenAI`` (``[sync]``) and ``AsyncOpenAI`` (``[async]``);
    see tests/_both.py."""
    driver = Drive(request.param)
    try:
        yield driver
    finally:
        driver.close()


@pytest.fixture
def unhurried_quality_search(monkeypatch: pytest.MonkeyPatch) -> None:
    """The JPEG quality search without its wall-clock budget. On a busy machine the budget
    cuts the search short, sometimes before its first rung (then the quality is the
    fallback), so a test that compares one image's bytes across calls, or expects a measured
    quality, would fail for the machine's sake. The budget itself is tested on a virtual
    clock in tests/preprocess/test_quality.py."""
    import functools

    from llmclient.preprocess import _encode, _quality

    monkeypatch.setattr(_encode, "search_quality",
                        functools.partial(_quality.search_quality, budget_ms=600_000.0))
