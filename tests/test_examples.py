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
