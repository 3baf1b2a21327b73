"""The harness has no import loop: records first, then stats / drivers / load, then the scenario
context and the report. Each module is imported alone in a fresh interpreter and must not pull in
a module above it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT

# module -> the harness modules it may not load (directly or through others)
_BELOW = {
    "benchmarks.records": {"benchmarks._scenario", "benchmarks.drivers", "benchmarks.load", "benchmarks.stats",
                           "benchmarks.report", "benchmarks.cli"},
    "benchmarks.stats": {"benchmarks._scenario", "benchmarks.drivers", "benchmarks.load", "benchmarks.report"},
    "benchmarks.drivers": {"benchmarks._scenario", "benchmarks.load", "benchmarks.report"},
    "benchmarks.load": {"benchmarks._scenario", "benchmarks.report"},
}


@pytest.mark.parametrize("module", sorted(_BELOW))
def test_a_harness_module_does_not_import_the_layers_above_it(module: str) -> None:
    code = f"import sys, {module}; print(' '.join(m for m in sys.modules if m.startswith('benchmarks')))"
    loaded = set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                cwd=ROOT).stdout.split())
    assert module in loaded
    assert not loaded & _BELOW[module], f"{module} loads {sorted(loaded & _BELOW[module])}"
