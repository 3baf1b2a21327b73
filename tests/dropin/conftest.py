"""Fixtures for the differential drop-in suite: a recording proxy in front of the reference
server (``wire.WireProxy``), and the environment the snippets expect (``OPENAI_BASE_URL`` and
``OPENAI_API_KEY``, as an application sets them)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .wire import WireProxy


@pytest.fixture(scope="session")
def wire_proxy(ref_server) -> Iterator[WireProxy]:  # type: ignore[no-untyped-def]
    proxy = WireProxy(ref_server.url)
    yield proxy
    proxy.close()
