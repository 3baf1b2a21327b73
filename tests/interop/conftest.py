"""Real third-party OpenAI-compatible servers, installed from the registry, as subprocesses.

``llama_server``: llama-cpp-python's server (``python -m llama_cpp.server``: FastAPI under
uvicorn, HTTP/1.1 only, starlette-context's request-id middleware that accepts only UUIDs,
streams it interrupts ended with ``[DONE]`` and no finish_reason) serving a tiny llama model
made here (``tinyllama.py``), on 127.0.0.1, once per session.

llama-cpp-python ships only a source distribution: the first install compiles llama.cpp
(about 7 minutes on 2 cores); pip keeps the wheel it built in its cache and later installs of
the same pinned version take it from there.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import httpx
import pytest

from benchmarks.fixtures.processes import stop_process

from .tinyllama import write_tiny_llama

START_TIMEOUT_S = 60.0
MODEL = "tiny"  # the --model_alias the server lists and answers to


@dataclass
class ThirdPartyServer:
    name: str
    version: str
    url: str
    log_path: Path

    @property
    def base_url(self) -> str:
        return self.url + "/v1"


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _require(module: str, dist: str) -> str:
    """The installed version of ``dist``; skips without it (fails under CI, where the test
    extra installs it)."""
    try:
        __import__(module)
    except ImportError as exc:
        message = f"{dist} is not installed (pip install -e '.[test]'): {exc}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return metadata.version(dist)


def _wait_ready(proc: subprocess.Popen[bytes], url: str, log_path: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        try:
            if httpx.get(url + "/v1/models", timeout=1.0).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    proc.kill()
    proc.wait()
    raise RuntimeError(f"the server at {url} did not start; its log:\n{log_path.read_text()[-4000:]}")


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThirdPartyServer]:
    version = _require("llama_cpp.server.app", "llama-cpp-python")
    work = tmp_path_factory.mktemp("llama_server")
    model = write_tiny_llama(work / "tiny-llama.gguf")
    port = _free_port()
    log_path = work / "server.log"
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", MODEL,
           "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096", "--n_threads", "1",
           "--seed", "7"]
    with log_path.open("wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(proc, url, log_path)
        yield ThirdPartyServer("llama-cpp-python", version, url, log_path)
    finally:
        stop_process(proc, timeout=10)
