"""Fixtures for the client tests: in-process servers with exact faults (see fakeserver.py).

End-to-end tests against the live reference server use ``ref_server`` & co. from
tests/conftest.py (owned by the server work) and are skipped while that fixture is missing.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .fakeserver import H1Server, HypercornServer, make_cert

# The session's servers outlive any test, and llmclient's connections are shared process-wide,
# so one connection carries the calls of many tests, with idle gaps of any length between
# them. hypercorn does two things there that no test of a feature means to meet:
# * it closes a connection idle for keep_alive_s with no GOAWAY, so a call sent at that instant
#   fails as "Server disconnected" (a run of CI did; with the server in this process, sharing
#   the GIL, the window is milliseconds wide), and such a call is never provably unprocessed;
# * at keep_alive_max_requests it names the call that crossed the limit in GOAWAY's
#   last-stream-id and never answers it.
# Tests of those behaviours start their own server (test_client_fake.py, test_idle_learning.py).


def session_server(**kw: Any) -> HypercornServer:
    return HypercornServer(keep_alive_s=24 * 3600.0, max_requests=10**9, **kw).start()


@pytest.fixture(scope="session")
def fake() -> Iterator[HypercornServer]:
    server = session_server()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def fake_cert(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    return make_cert(Path(tmp_path_factory.mktemp("tls")))


@pytest.fixture(scope="session")
def fake_tls(fake_cert: tuple[str, str]) -> Iterator[HypercornServer]:
    server = session_server(certfile=fake_cert[0], keyfile=fake_cert[1])
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
    server = session_server(max_streams=2)
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def _no_openai_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_ORG_ID", raising=False)
    monkeypatch.delenv("OPENAI_PROJECT_ID", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key")
