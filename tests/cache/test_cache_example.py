"""examples/caching.py runs as written (it starts the reference server itself)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_caching_example_runs(redis_url: str) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "OPENAI_API_KEY")}
    env["LLMCLIENT_REDIS_URL"] = redis_url
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "caching.py")], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=90)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for backend in ("memory", "sqlite", "redis"):
        assert f"{backend:7} first: miss" in proc.stdout
        assert f"{backend:7} stream replay: hit" in proc.stdout
    assert proc.stdout.count("second: hit") == 3
