"""Servers that close connections under a long-lived client: uvicorn closing connections idle
for a second (``--keep-alive-s 1``, the short keep-alive of a busy deployment) while callers
pause now and then, and the reference server restarted mid-run. Each call either answers or
raises a public error; none reaches the server twice; calls after the restart work at once.
Sync and async (``drive``); the upstream's access log counts what reached it by each call's
``x-request-id``.
"""

from __future__ import annotations

import random
import re
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

import llmclient
from tests._both import Drive
from tests.conftest import RefServer, start_ref_server, stop_ref_server

MSG = [{"role": "user", "content": "hello"}]
_POST = re.compile(r"request_id=(\S+) .* POST /v1/chat/completions (\d+)")


def _seen(server: RefServer, ids: list[str]) -> Counter[str]:
    assert server.log_path is not None
    deadline = time.monotonic() + 10
    while True:
        seen = Counter(m.group(1) for m in _POST.finditer(server.log_path.read_text()))
        if all(seen[i] for i in ids) or time.monotonic() > deadline:
            return seen
        time.sleep(0.05)


@pytest.fixture
def uvicorn_1s() -> Iterator[RefServer]:
    server = start_ref_server("--server", "uvicorn", "--keep-alive-s", "1", "--access-log")
    yield server
    stop_ref_server(server)


def test_uvicorn_closing_idle_connections_every_second_loses_and_repeats_nothing(
        drive: Drive, uvicorn_1s: RefServer) -> None:
    c = drive.client(base_url=uvicorn_1s.base_url, api_key="k", timeout=20)
    rng = random.Random(7)
    pauses = [rng.uniform(0.8, 1.3) if rng.random() < 0.3 else 0.0 for _ in range(64)]
    ids = [f"churn-{time.monotonic_ns()}-{i}" for i in range(64)]

    def one(i: int) -> Any:
        def call() -> Any:
            return c.chat.completions.create(model="sim-zero", messages=MSG, max_tokens=2,
                                             extra_headers={"x-request-id": ids[i]})
        return call

    results: list[Any] = []
    for start in range(0, 64, 8):  # 8 at a time, then some callers' connections sit idle ~1 s
        results += drive.gather([one(i) for i in range(start, start + 8)], workers=8)
        drive.sleep(max(pauses[start:start + 8]))
    assert all(r.choices[0].message.content for r in results)
    seen = _seen(uvicorn_1s, ids)
    twice = {i: seen[i] for i in ids if seen[i] != 1}
    assert not twice, f"requests that reached uvicorn other than once: {twice}"
    assert sum(not r.timings.connection_reused for r in results) > 1  # it did close some under us


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_reference_server_restarted_mid_run_costs_nothing_after_it_is_back(drive: Drive) -> None:
    port = _free_port()
    server = start_ref_server("--port", str(port), "--access-log")
    c = drive.client(base_url=server.base_url, api_key="k", timeout=20, max_retries=2)
    outcomes: list[tuple[float, str, Any]] = []
    back = threading.Event()
    back_at = [0.0]

    failed: list[BaseException] = []

    def restart() -> None:
        nonlocal server
        try:
            time.sleep(0.3)
            stop_ref_server(server)
            server = start_ref_server("--port", str(port), "--access-log")
            back_at[0] = time.monotonic()
        except BaseException as exc:  # the test says why, rather than waiting for a server
            failed.append(exc)
        finally:
            back.set()

    worker = threading.Thread(target=restart)
    worker.start()
    try:
        deadline = time.monotonic() + 180  # a hang guard: a loaded machine restarts slowly
        n = since_back = 0
        # Until 10 calls have started after the server is back: a call begun while it was down
        # may still be in a retry's backoff when it comes back (and end well past it).
        while time.monotonic() < deadline and since_back < 10:
            rid = f"restart-{time.monotonic_ns()}-{n}"
            n += 1
            t0 = time.monotonic()
            try:
                got: Any = drive(c.chat.completions.create(model="sim-zero", messages=MSG, max_tokens=2,
                                                           extra_headers={"x-request-id": rid}))
            except llmclient.APIError as exc:  # a public error, never a traceback from inside
                got = exc
            outcomes.append((t0, rid, got))
            since_back += back.is_set() and t0 > back_at[0]
            drive.sleep(0.02)
        assert not failed, f"the reference server did not restart: {failed[0]!r}"
        after = [got for t0, _, got in outcomes if back.is_set() and t0 > back_at[0]]
        assert after and all(not isinstance(g, BaseException) for g in after), after[:3]
        assert all(isinstance(g, llmclient.APIConnectionError) or not isinstance(g, BaseException)
                   for _, _, g in outcomes)
        later = [rid for t0, rid, _ in outcomes if t0 > back_at[0]]
        seen = _seen(server, later)
        assert all(seen[rid] == 1 for rid in later)  # each reached the new server once
    finally:
        worker.join(60)
        stop_ref_server(server)
