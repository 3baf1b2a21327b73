"""The savings suite's scenarios, discovered by module.

Every module in this package that defines ``SCENARIOS`` (a sequence of objects following
``benchmarks.harness._scenario.Scenario``) contributes them; add a file, edit nothing here.
Order in the suite is the modules' ``ORDER`` (an int, default 100) then the module name.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass

from ..harness._scenario import Scenario

__all__ = ["DiscoveryError", "discover", "select"]


@dataclass(frozen=True)
class DiscoveryError:
    module: str
    error: str


def discover() -> tuple[list[Scenario], list[DiscoveryError]]:
    """Import every scenario module; a module that fails to import is reported, not fatal
    (a teammate's half-built scenario must not stop the rest of the suite)."""
    found: list[tuple[int, str, Scenario]] = []
    errors: list[DiscoveryError] = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        qualified = f"{__name__}.{info.name}"
        try:
            module = importlib.import_module(qualified)
        except Exception as exc:  # report any import failure by module name
            errors.append(DiscoveryError(qualified, f"{type(exc).__name__}: {exc}"))
            continue
        order = int(getattr(module, "ORDER", 100))
        for scenario in getattr(module, "SCENARIOS", ()):
            if not isinstance(scenario, Scenario):
                errors.append(DiscoveryError(qualified, f"{scenario!r} is not a Scenario"))
                continue
            found.append((order, info.name, scenario))
    found.sort(key=lambda item: (item[0], item[1]))
    names = [s.name for _, _, s in found]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        errors.append(DiscoveryError(__name__, f"duplicate scenario names: {duplicates}"))
    return [s for _, _, s in found], errors


def select(scenarios: list[Scenario], wanted: list[str] | None) -> list[Scenario]:
    """Keep the named scenarios in the order given; unknown names raise ValueError."""
    if not wanted:
        return scenarios
    by_name = {s.name: s for s in scenarios}
    unknown = [w for w in wanted if w not in by_name]
    if unknown:
        raise ValueError(f"unknown scenario(s) {unknown}; known: {sorted(by_name)}")
    return [by_name[w] for w in wanted]
