"""Fixtures for the client tests: in-process servers with exact faults (see fakeserver.py).

End-to-end tests against the live reference server use ``ref_server`` & co. from
tests/conftest.py (owned by the server work) and are skipped while that fixture is missing.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .fakeserver import H1Server, HypercornServer, make_cert


@pytest.fixture(scope="session")
def fake() -> Iterator[HypercornServer]:
    server = HypercornServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def fake_cert(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    return make_cert(Path(tmp_path_factory.mktemp("tls")))


@pytest.fixture(scope="session")
def fake_tls(fake_cert: tuple[str, str]) -> Iterator[HypercornServer]:
    server = HypercornServer(certfile=fake_cert[0], keyfile=fake_cert[1]).start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def fake_h1() -> Iterator[H1Server]:
    server = H1Server().start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def fake_narrow() -> Iterator[HypercornServer]:
    """A server allowing only 2 concurrent HTTP/2 streams per connection."""
    server = HypercornServer(max_streams=2).start()
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def _no_openai_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_ORG_ID", raising=False)
    monkeypatch.delenv("OPENAI_PROJECT_ID", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key")
