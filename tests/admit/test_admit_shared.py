"""One budget for several processes through a real Redis (``redis=``): worker processes that
share an API key keep clear of 429s together; Redis down never fails a call."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator

import pytest

from tests.conftest import ROOT, RefServer, start_ref_server, stop_ref_server

PROCESSES = 3
CALLS = 4  # each 200 tokens: with the warm-up's 2, 2800 tokens against 2000 per 10 s
# A long window: its 5% headroom (budget.HEADROOM) is 0.5 s, more than a busy machine delays a
# call between its slot and the server.


@pytest.fixture(scope="module")
def limited() -> Iterator[RefServer]:
    server = start_ref_server("--tpm", "2000", "--rpm", "100000", "--ratelimit-window-s", "10")
    yield server
    stop_ref_server(server)


def _run_workers(server: RefServer, redis: str, kind: str) -> list[dict[str, object]]:
    key = f"shared-{uuid.uuid4().hex}"
    # One process first: its second call leaves the budget's size in Redis, so the workers pace
    # from their first call (the steady state; cold, each would send one call blind).
    subprocess.run([sys.executable, "-m", "tests.admit._worker", server.base_url, key, redis, "2", kind],
                   cwd=ROOT, check=True, capture_output=True, timeout=120)
    procs = [subprocess.Popen([sys.executable, "-m", "tests.admit._worker", server.base_url, key, redis,
                               str(CALLS), kind], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for _ in range(PROCESSES)]
    out = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=120)
        assert proc.returncode == 0, stderr.decode()[-2000:]
        out.append(json.loads(stdout.decode().strip().splitlines()[-1]))
    return out


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_processes_sharing_a_key_share_one_budget_and_earn_no_429(limited: RefServer, redis_url: str,
                                                                 kind: str) -> None:
    results = _run_workers(limited, redis_url, kind)
    assert all(r["answered"] == CALLS for r in results)
    assert all(r["shared"] for r in results)
    assert sum(int(r["refused_429"]) for r in results) == 0  # type: ignore[call-overload]


def _dead_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # closed again: nothing listens there


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_redis_down_means_local_pacing_and_every_call_answered(limited: RefServer, kind: str) -> None:
    results = _run_workers(limited, f"redis://127.0.0.1:{_dead_port()}/0", kind)
    assert all(r["answered"] == CALLS for r in results)
    assert not any(r["shared"] for r in results)
