"""Fixtures for the cache tests: a real redis-server on a free loopback port, per session."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator

import pytest

from llmclient.cache import RedisBackend

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for_redis(port: int, proc: subprocess.Popen[bytes], deadline: float) -> None:
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"redis-server exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2) as sock:
                sock.sendall(b"PING\r\n")
                if sock.recv(16).startswith(b"+PONG"):
                    return
        except OSError:
            time.sleep(0.02)
    raise RuntimeError("redis-server did not answer PING within 10 s")


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    if not os.path.exists(REDIS_SERVER):
        pytest.skip(f"redis-server binary not found at {REDIS_SERVER} (apt-get install redis-server)")
    proc: subprocess.Popen[bytes] | None = None
    for _ in range(3):  # another process may grab the free port between probe and bind
        port = _free_port()
        proc = subprocess.Popen(
            [REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--protected-mode", "yes"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        try:
            _wait_for_redis(port, proc, time.monotonic() + 10)
            break
        except RuntimeError:
            proc.kill()
            proc.wait()
            proc = None
    if proc is None:
        raise RuntimeError("could not start redis-server on a free port")
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture
def redis_backend(redis_url: str) -> Iterator[RedisBackend]:
    # A fresh prefix per test isolates tests that share the session's server.
    backend = RedisBackend(redis_url, prefix=f"t-{uuid.uuid4().hex[:12]}:")
    try:
        yield backend
    finally:
        backend.clear()
        backend.close()
