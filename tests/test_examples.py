"""Every script in examples/ runs as written against the reference server."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted(p.name for p in (ROOT / "examples").glob("*.py"))


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_runs(ref_server: Any, name: str) -> None:
    env = {**os.environ, "OPENAI_BASE_URL": ref_server.base_url, "OPENAI_API_KEY": "sk-example",
           "MODEL": "sim-zero", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / name)], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip()
    assert "sk-example" not in proc.stdout + proc.stderr


def test_the_methods_docs_and_examples_call_are_the_clients_own() -> None:
    """``client.warmup()`` (the connection) and ``client.warm(...)`` (the prefix cache) are two
    methods: every ``client.<name>(`` the README, docs/ and the examples write exists on both
    clients, so a reader never copies a spelling that is not there."""
    import re

    import llmclient

    texts = [ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *(ROOT / "examples").glob("*.py")]
    called = {name for path in texts
              for name in re.findall(r"\bclient\.([a-z_]+)\(", path.read_text())}
    assert {"warm", "warmup"} <= called
    for name in sorted(called):
        assert hasattr(llmclient.OpenAI, name) and hasattr(llmclient.AsyncOpenAI, name), name
