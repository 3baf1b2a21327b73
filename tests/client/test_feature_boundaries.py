"""The rooms of llmclient and what they may import: the face over the api over the chain of
layers over the features, the cache, the plain data of a call (pipeline), the wire and the
transport. A feature sees a Port, never the client; a layer sees the client's Context. Read from
the source, so that a shortcut back up fails here rather than in a review (the same rule is an
import-linter contract in pyproject.toml, which ``make lint`` runs)."""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._graph import find_loop

ROOT = Path(__file__).resolve().parents[2] / "llmclient"

# What a feature or a layer must never import: the client, its I/O, its resources, its chain.
CLIENT_MODULES = {"_client", "_async.client", "_sync.client", "api.resources", "api.passthrough",
                  "api._async.resources", "api._sync.resources", "layers._async.chain", "layers._sync.chain"}
FEATURES = [*(f"features/{p.name}" for p in sorted((ROOT / "features").glob("*.py"))),
            *(f"cache/{p.name}" for p in sorted((ROOT / "cache").glob("*.py"))),
            *(f"layers/{p.relative_to(ROOT / 'layers')}" for p in sorted((ROOT / "layers").rglob("*.py"))
              if "chain.py" not in p.name)]
# The client core: the layers are reached through its chain, never imported in a function.
CORE = ["_client.py", "_async/client.py", "_sync/client.py"]


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
    tree = _tree(name)
    for module, line in _imports(tree):
        bare = module.lstrip(".").removeprefix("llmclient.")
        assert bare not in CLIENT_MODULES, f"llmclient/{name}:{line} imports {module}"


@pytest.mark.parametrize("name", FEATURES)
def test_a_feature_reaches_no_private_part_of_the_port_or_a_client(name: str) -> None:
    tree = _tree(name)
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in ("client", "port", "owner") and node.attr.startswith("_")):
            pytest.fail(f"llmclient/{name}:{node.lineno} reaches {node.value.id}.{node.attr}")
        if isinstance(node, ast.arg) and node.arg == "client":
            pytest.fail(f"llmclient/{name}:{node.lineno} takes a client")


@pytest.mark.parametrize("name", CORE)
def test_the_client_core_imports_no_feature_inside_a_function(name: str) -> None:
    tree = _tree(name)
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            for module, line in _imports(fn):
                pytest.fail(f"llmclient/{name}:{line} imports {module} inside {fn.name}()")


# --- the rooms: llmclient's import graph ---------------------------------------------------------

def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(ROOT.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        parts = ("llmclient", *path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _runtime_imports(node: ast.AST, in_function: bool = False
                     ) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import under ``node`` that can run, and whether it sits in a function (the bodies
    of ``if TYPE_CHECKING:`` are skipped)."""
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        yield node, in_function
        return
    if isinstance(node, ast.If) and _is_type_checking(node.test):
        for child in node.orelse:
            yield from _runtime_imports(child, in_function)
        return
    inner = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
    for child in ast.iter_child_nodes(node):
        yield from _runtime_imports(child, inner)


def _bases(name: str, node: ast.Import | ast.ImportFrom) -> tuple[list[str], list[str]]:
    """The absolute modules an import names, and the names it takes from them."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names], []
    if node.level:
        package = name if MODULES[name].name == "__init__.py" else name.rpartition(".")[0]
        anchor = package.split(".")
        anchor = anchor[:len(anchor) - (node.level - 1)]
        base = ".".join([*anchor, *([node.module] if node.module else [])])
    else:
        base = node.module or ""
    return [base], [alias.name for alias in node.names]


def _targets(name: str, node: ast.Import | ast.ImportFrom) -> set[str]:
    """The llmclient modules an import loads (``from . import x`` names the submodule x)."""
    found: set[str] = set()
    bases, names = _bases(name, node)
    for base in bases:
        submodules = [f"{base}.{n}" for n in names if f"{base}.{n}" in MODULES]
        found.update(submodules or ([base] if base in MODULES else []))
    return found


def _parse(name: str) -> ast.Module:
    return TREES[name]


# Every module parsed once, when the tests are collected: CPython 3.11's ast.parse can fail
# with "AST constructor recursion depth mismatch" after another test in the same worker hit a
# RecursionError, which says nothing about the source.
TREES = {name: ast.parse(path.read_text(encoding="utf-8")) for name, path in MODULES.items()}


def _tree(relative: str) -> ast.Module:
    """The parsed module at ``relative`` (a path under llmclient/)."""
    parts = ("llmclient", *Path(relative).with_suffix("").parts)
    return TREES[".".join(parts[:-1] if parts[-1] == "__init__" else parts)]


GRAPH = {name: {t for node, _ in _runtime_imports(_parse(name)) for t in _targets(name, node)} - {name}
         for name in MODULES}
FUNCTION_IMPORTS = [(name, node) for name in MODULES for node, inside in _runtime_imports(_parse(name))
                    if inside]


def _guarded(tree: ast.AST) -> set[int]:
    """The line numbers of imports inside ``try: ... except ImportError``: optional dependencies."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(
                isinstance(h.type, ast.Name) and h.type.id in ("ImportError", "ModuleNotFoundError")
                for h in node.handlers):
            found.update(n.lineno for child in node.body for n in ast.walk(child)
                         if isinstance(n, (ast.Import, ast.ImportFrom)))
    return found

# The modules every room may use: errors, logging, redaction, the version; the registry that
# makes classes the official ones' kind, the keyword check, the sync/async waits and the hints
# errors carry (none of them imports anything of llmclient above the base).
BASE = ("llmclient._errors", "llmclient._logging", "llmclient._redact", "llmclient._version",
        "llmclient._official", "llmclient._keywords", "llmclient._synchronization", "llmclient._hints")
# Top-down: face (llmclient, _client, _config, _azure, _module_client, _doctor, _async/_sync
# client) -> api (+ lib, types) -> layers -> features -> cache -> pipeline (a call's plain data and
# the sans-I/O parts) -> wire, transport. room -> the rooms below it that it may import.
_BELOW = ["llmclient.layers", "llmclient.features", "llmclient.cache", "llmclient.pipeline", "llmclient.wire",
          "llmclient.transport"]
MAY_IMPORT: dict[str, tuple[str, ...]] = {
    "llmclient.transport": (),
    "llmclient.wire": (),
    "llmclient.pipeline": ("llmclient.wire",),
    "llmclient.cache": ("llmclient.pipeline", "llmclient.wire"),
    "llmclient.features": ("llmclient.cache", "llmclient.pipeline", "llmclient.wire"),
    "llmclient.layers": ("llmclient.features", "llmclient.cache", "llmclient.pipeline", "llmclient.wire",
                         "llmclient.transport"),
    "llmclient.lib": ("llmclient.api", *_BELOW),
    "llmclient.api": ("llmclient.lib", *_BELOW),
}
# A room's module that may reach up into the client, and why.
UP_TO_THE_CLIENT: dict[str, str] = {}


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def test_the_graph_sees_the_imports_it_checks() -> None:
    # The checks below are only as good as this parse: spot-check known edges.
    assert "llmclient.transport.http2" in GRAPH["llmclient.transport.lanes"]
    assert "llmclient.layers._async.chain" in GRAPH["llmclient._async.client"]
    assert "llmclient.features.otel" in GRAPH["llmclient.layers._async.trace"]  # from ...features import otel
    assert "llmclient.features.images" in GRAPH["llmclient.layers._async.images"]  # inside a function
    assert "llmclient._client" not in GRAPH["llmclient.api.resources"]  # under TYPE_CHECKING only
    assert any(name == "llmclient.layers._async.images" for name, _ in FUNCTION_IMPORTS)
    assert {"llmclient.api", "llmclient.layers", "llmclient.pipeline", "llmclient.features", "llmclient.transport",
            "llmclient.wire", "llmclient.cache"} <= set(MODULES)


def test_no_import_loop() -> None:
    loop = find_loop(GRAPH)
    if loop:
        pytest.fail("import loop: " + " -> ".join(loop))


@pytest.mark.parametrize("room", sorted(MAY_IMPORT))
def test_a_room_imports_only_the_rooms_below_it(room: str) -> None:
    allowed = (room, *BASE, *MAY_IMPORT[room])
    bad = [f"{name} imports {target}" for name in MODULES if _within(name, room)
           for target in sorted(GRAPH[name])
           if not any(_within(target, a) for a in allowed)
           and not (target == "llmclient._client" and name in UP_TO_THE_CLIENT)]
    assert not bad, "\n".join(bad)


def test_only_the_face_imports_the_client() -> None:
    face = ("llmclient", "llmclient.__main__", "llmclient._doctor", "llmclient._azure", "llmclient._module_client",
            "llmclient._client_async", "llmclient._anthropic", "llmclient._anthropic_async",
            *UP_TO_THE_CLIENT)
    bad = sorted(name for name, imported in GRAPH.items()
                 if "llmclient._client" in imported and name not in face)
    assert not bad, f"these import llmclient._client: {bad}"


def _loaded_by_import_llmclient() -> set[str]:
    code = "import sys, llmclient; print(' '.join(sys.modules))"
    return set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              check=True).stdout.split())


def _eager(base: str, names: list[str], loaded: set[str]) -> list[str]:
    """What of ``from base import names`` (or ``import base``) is loaded already."""
    if base not in loaded:
        return []
    if not names:
        return [base]
    found = []
    for n in names:
        sub = f"{base}.{n}"
        try:
            is_module = sub in MODULES or importlib.util.find_spec(sub) is not None
        except ModuleNotFoundError:  # base is a module, not a package: n is a name in it
            is_module = False
        if not is_module or sub in loaded:
            found.append(sub if is_module else base)
    return found


def test_an_import_inside_a_function_is_lazy_and_says_why() -> None:
    loaded = _loaded_by_import_llmclient()
    import_lines = {name: {i for n in ast.walk(_parse(name)) if isinstance(n, (ast.Import, ast.ImportFrom))
                           for i in range(n.lineno - 1, n.end_lineno)} for name in MODULES}
    bad = []
    for name, node in FUNCTION_IMPORTS:
        lines = MODULES[name].read_text(encoding="utf-8").splitlines()
        where = f"{MODULES[name].relative_to(ROOT.parent)}:{node.lineno}"
        above = node.lineno - 2  # the line above, past the imports of the same group
        while above in import_lines[name]:
            above -= 1
        said = any("#" in line for line in lines[node.lineno - 1:node.end_lineno]) or \
            lines[above].lstrip().startswith("#")
        if not said:
            bad.append(f"{where}: an import inside a function without a one-line reason")
        if node.lineno in _guarded(_parse(name)):
            continue  # an optional dependency, tried where it is used
        bases, names = _bases(name, node)
        eager = sorted({m for b in bases for m in _eager(b, names, loaded)})
        if eager:
            bad.append(f"{where}: imports {eager} inside a function, but `import llmclient` loads "
                       "it anyway: import it at the top (a lazy import of a loaded module only hides a loop)")
    assert not bad, "\n".join(bad)
