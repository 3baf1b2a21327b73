"""The features (images, cache, speculation, hedging) attach to the pipeline through the hooks in
``llmclient/pipeline/hooks.py`` and see a Port, never the client: read from the source, so that a
shortcut back into the client fails here rather than in a review."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "llmclient"

# What a feature must never import: the client, its pipelines, its resources.
CLIENT_MODULES = {"_client", "_async.pipeline", "_sync.pipeline", "api.resources", "api.passthrough"}
FEATURES = ["pipeline/hooks.py", "features/prefetch.py", "features/images.py", "features/hedge.py",
            "features/hedge_run.py",
            *(f"cache/{p.name}" for p in sorted((ROOT / "cache").glob("*.py")))]
# The client core: features are reached through ``self._features``, never imported in a function.
CORE = ["_client.py", "_async/pipeline.py", "_sync/pipeline.py"]


def _imports(tree: ast.AST) -> list[tuple[str, int]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            dots = "." * node.level
            if node.module is None:  # from . import _prefetch
                found += [(dots + a.name, node.lineno) for a in node.names]
            else:
                found.append((dots + node.module, node.lineno))
        elif isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names]
    return found


@pytest.mark.parametrize("name", FEATURES)
def test_a_feature_imports_nothing_of_the_client(name: str) -> None:
    tree = ast.parse((ROOT / name).read_text())
    for module, line in _imports(tree):
        bare = module.lstrip(".").removeprefix("llmclient.")
        assert bare not in CLIENT_MODULES, f"llmclient/{name}:{line} imports {module}"


@pytest.mark.parametrize("name", FEATURES)
def test_a_feature_reaches_no_private_part_of_the_port_or_a_client(name: str) -> None:
    tree = ast.parse((ROOT / name).read_text())
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in ("client", "port", "owner") and node.attr.startswith("_")):
            pytest.fail(f"llmclient/{name}:{node.lineno} reaches {node.value.id}.{node.attr}")
        if isinstance(node, ast.arg) and node.arg == "client":
            pytest.fail(f"llmclient/{name}:{node.lineno} takes a client")


@pytest.mark.parametrize("name", CORE)
def test_the_client_core_imports_no_feature_inside_a_function(name: str) -> None:
    tree = ast.parse((ROOT / name).read_text())
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            for module, line in _imports(fn):
                pytest.fail(f"llmclient/{name}:{line} imports {module} inside {fn.name}()")
