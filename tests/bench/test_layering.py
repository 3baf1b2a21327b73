"""The layout of benchmarks/ holds: what is harness, tool, fixture and server stays apart.

- The harness (``benchmarks/harness``) is layered: ``records`` first (it loads nothing else of
  the harness), then ``stats`` / ``drivers`` / ``load``, then the scenario context and the
  report, then the command line. Each module is imported alone in a fresh interpreter and must
  not pull in a module above it.
- No import loop anywhere in benchmarks/: every import a module can run (at its top or inside a
  function; ``if TYPE_CHECKING:`` blocks aside) is an edge, and the graph has no cycle.
- The fixtures (``benchmarks/fixtures``) import nothing of benchmarks outside themselves, so a
  test can generate photos or start Redis without loading the suite.
- The reference server (``benchmarks/server``) is a separate program: it imports nothing of the
  harness, the tools, the fixtures or the scenarios.
- The tools at the top of benchmarks/ stand on the harness, not in it: the harness, the
  fixtures and the server import no tool, a tool imports no other tool, no scenario and no
  private (underscore) module. A scenario may reuse a tool's measurement (the images scenario
  measures photos with image_prep's code, so the two report the same figures).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._graph import find_loop
from tests.conftest import ROOT

BENCH = ROOT / "benchmarks"
H = "benchmarks.harness."

# module -> the harness modules it may not load (directly or through others)
_ABOVE = {
    H + "stats": {H + "_scenario", H + "drivers", H + "load", H + "report", H + "cli"},
    H + "drivers": {H + "_scenario", H + "load", H + "report", H + "cli"},
    H + "load": {H + "_scenario", H + "report", H + "cli"},
}
# module -> the only benchmarks modules it may load (prefixes; "benchmarks" is the package)
_ONLY = {
    H + "records": ("benchmarks", "benchmarks.harness", H + "records"),
    "benchmarks.fixtures.photos": ("benchmarks", "benchmarks.fixtures", "benchmarks.fixtures."),
    "benchmarks.fixtures.redis": ("benchmarks", "benchmarks.fixtures", "benchmarks.fixtures."),
    "benchmarks.fixtures.processes": ("benchmarks", "benchmarks.fixtures", "benchmarks.fixtures."),
    "benchmarks.server.app": ("benchmarks", "benchmarks.server", "benchmarks.server."),
}


def _loaded(module: str) -> set[str]:
    """The benchmarks modules a fresh interpreter has loaded after importing ``module``."""
    code = (f"import sys, {module}\n"
            "print(' '.join(m for m in sys.modules if m.startswith('benchmarks')))")
    return set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              check=True, cwd=ROOT).stdout.split())


def _allowed(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or (p.endswith(".") and name.startswith(p)) for p in prefixes)


@pytest.mark.parametrize("module", sorted(_ABOVE))
def test_a_harness_module_does_not_import_the_layers_above_it(module: str) -> None:
    loaded = _loaded(module)
    assert module in loaded
    assert not loaded & _ABOVE[module], f"{module} loads {sorted(loaded & _ABOVE[module])}"


@pytest.mark.parametrize("module", sorted(_ONLY))
def test_records_fixtures_and_server_load_nothing_outside_themselves(module: str) -> None:
    loaded = _loaded(module)
    assert module in loaded
    stray = sorted(m for m in loaded if not _allowed(m, _ONLY[module]))
    assert not stray, f"{module} loads {stray}"


# --- the static import graph ----------------------------------------------------------------

def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(BENCH.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        parts = ("benchmarks", *path.relative_to(BENCH).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


MODULES = _modules()
TOOLS = sorted(name for name, path in MODULES.items()
               if path.parent == BENCH and path.stem not in ("__init__", "__main__"))


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _import_nodes(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import under ``node`` that can run: the bodies of ``if TYPE_CHECKING:`` are skipped."""
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        yield node
        return
    if isinstance(node, ast.If) and _is_type_checking(node.test):
        for child in node.orelse:
            yield from _import_nodes(child)
        return
    for child in ast.iter_child_nodes(node):
        yield from _import_nodes(child)


def _imports(name: str) -> set[str]:
    """The benchmarks modules ``name`` imports (``llmclient_bench.x``, the installed name, counts
    as ``benchmarks.x``)."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in _import_nodes(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            bases = [alias.name for alias in node.names]
            names: list[str] = []
        else:
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - (node.level - 1)]
                bases = [".".join([*anchor, *([node.module] if node.module else [])])]
            else:
                bases = [node.module or ""]
            names = [alias.name for alias in node.names]
        for base in bases:
            top, _, rest = base.partition(".")
            if top == "llmclient_bench":
                base = "benchmarks" + ("." + rest if rest else "")
            elif top != "benchmarks":
                continue
            submodules = [f"{base}.{n}" for n in names if f"{base}.{n}" in MODULES]
            found.update(submodules or ([base] if base in MODULES else []))
    found.discard(name)
    return found


GRAPH = {name: _imports(name) for name in MODULES}
# Import edges that close a loop, each with why it is tolerated. Each must still exist: when the
# code stops making one, delete it here so the loop check covers that pair again.
KNOWN_LOOP_EDGES: dict[tuple[str, str], str] = {}


def test_the_graph_sees_the_imports_it_checks() -> None:
    # The checks below are only as good as this parse: spot-check known edges.
    assert H + "records" in GRAPH[H + "stats"]
    assert H + "cli" in GRAPH["benchmarks.__main__"]
    assert "benchmarks.scenarios" in GRAPH[H + "cli"]  # a function-level import
    assert H + "_scenario" not in GRAPH[H + "records"]  # under TYPE_CHECKING only
    assert "benchmarks.fixtures.photos" in GRAPH["benchmarks.scenarios.images"]  # from .. import x
    assert H + "load" in GRAPH["benchmarks.locustfile"]  # llmclient_bench.harness.load
    assert {"benchmarks.cache_hit", "benchmarks.client_overhead", "benchmarks.image_prep",
            "benchmarks.locustfile", "benchmarks.wire_bytes"} <= set(TOOLS)


def test_no_import_loop() -> None:
    stale = [edge for edge in KNOWN_LOOP_EDGES if edge[1] not in GRAPH[edge[0]]]
    assert not stale, f"no longer imported, remove from KNOWN_LOOP_EDGES: {stale}"
    graph = {name: {m for m in imported if (name, m) not in KNOWN_LOOP_EDGES}
             for name, imported in GRAPH.items()}
    loop = find_loop(graph)
    if loop:
        pytest.fail("import loop: " + " -> ".join(loop))


def _outside(name: str, own: str) -> list[str]:
    return sorted(m for m in GRAPH[name] if m != "benchmarks" and m != own
                  and not m.startswith(own + "."))


def test_fixtures_and_the_server_import_nothing_of_benchmarks_outside_themselves() -> None:
    bad = [f"{name} imports {_outside(name, own)}"
           for own in ("benchmarks.fixtures", "benchmarks.server")
           for name in MODULES if (name == own or name.startswith(own + "."))
           and _outside(name, own)]
    assert not bad, "\n".join(bad)


def test_tools_stand_on_the_harness_and_use_only_public_modules() -> None:
    bad = []
    for name, imported in GRAPH.items():
        if name.startswith(("benchmarks.harness", "benchmarks.fixtures", "benchmarks.server")) \
                or name in TOOLS:
            bad += [f"{name} imports the tool {tool}" for tool in sorted(imported & set(TOOLS))]
    for tool in TOOLS:
        for module in sorted(GRAPH[tool]):
            if any(part.startswith("_") for part in module.split(".")):
                bad.append(f"{tool} imports the private module {module}")
            elif module == "benchmarks.scenarios" or module.startswith("benchmarks.scenarios."):
                bad.append(f"{tool} imports the scenarios ({module})")
    assert not bad, "\n".join(bad)
