"""The reference server speaks llmclient's wire formats through their public surface
(``llmclient.wire`` and the names it exports), never a private module nor one of the codec
modules behind it (``llmclient.wire.codec`` ...): a server anyone could write the same way."""

from __future__ import annotations

import ast
from pathlib import Path

import llmclient.wire
from tests.conftest import ROOT

# llmclient.wire itself and what it exports; its submodules are its implementation.
WIRE = {"llmclient.wire", *(f"llmclient.wire.{name}" for name in llmclient.wire.__all__)}


def test_the_reference_server_imports_no_private_llmclient_module() -> None:
    private: list[str] = []
    for path in sorted((Path(ROOT) / "benchmarks" / "server").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for name in names:
                parts = name.split(".")
                inside_wire = name.startswith("llmclient.wire.") and name not in WIRE
                if parts[0] == "llmclient" and (any(p.startswith("_") for p in parts[1:])
                                                or inside_wire):
                    private.append(f"{path.relative_to(ROOT)}:{node.lineno}: {name}")
    assert not private, "\n".join(private)
