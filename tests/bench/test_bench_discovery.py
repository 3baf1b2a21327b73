"""Scenario discovery: modules register themselves; selection by name."""

from __future__ import annotations

import pytest

from benchmarks.harness._scenario import CAPABILITIES, Scenario
from benchmarks.scenarios import discover, select


def test_builtin_scenarios_are_discovered_with_known_capabilities() -> None:
    scenarios, _errors = discover()
    names = [s.name for s in scenarios]
    for name in ("connection", "concurrency", "steady", "sweep", "coldstart", "faults",
                 "tail", "longprompt"):
        assert name in names
    assert len(names) == len(set(names))
    for s in scenarios:
        assert isinstance(s, Scenario) and s.description
        assert set(s.requires) <= set(CAPABILITIES), (s.name, s.requires)


def test_select_keeps_the_given_order_and_names_unknown_scenarios() -> None:
    scenarios, _ = discover()
    assert [s.name for s in select(scenarios, ["steady", "connection"])] == ["steady", "connection"]
    assert select(scenarios, None) == scenarios
    with pytest.raises(ValueError, match="no-such-row"):
        select(scenarios, ["no-such-row"])
