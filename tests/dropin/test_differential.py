"""The differential drop-in suite: every snippet runs with the official client and with
llmclient against the reference server (through a recording proxy); their results (ids and
timestamps aside), exceptions and requests on the wire must be the same."""

from __future__ import annotations

import pytest

from . import (  # noqa: F401  (register their snippets)
    snippets_basic,
    snippets_http,
    snippets_passthrough,
    snippets_responses,
    snippets_structured,
    snippets_types,
)
from .harness import SNIPPETS, run
from .wire import WireProxy

# Snippets whose results still differ, and why (strict: one that starts passing fails here).
KNOWN_DIFFERENT: dict[str, str] = {}


def _params() -> list[object]:
    return [pytest.param(name, marks=pytest.mark.xfail(reason=KNOWN_DIFFERENT[name], strict=True))
            if name in KNOWN_DIFFERENT else name for name in sorted(SNIPPETS)]


@pytest.mark.parametrize("name", _params())
def test_same_as_official(name: str, wire_proxy: WireProxy, monkeypatch: pytest.MonkeyPatch) -> None:
    official = run("openai", SNIPPETS[name], wire_proxy, monkeypatch)
    ours = run("llmclient", SNIPPETS[name], wire_proxy, monkeypatch)
    assert "raised" not in official or official["raised"] != "AttributeError", official
    assert ours == official
