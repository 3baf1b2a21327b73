"""The Locust file drives a real server through llmclient and reports TTFT and e2e."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_headless_locust_reports_llm_ttft_and_e2e(ref_server: Any, tmp_path: Path) -> None:
    # Never import locust here: importing it monkey-patches sockets and threads (gevent) for the
    # whole test process, which then starves every later test that uses real threads.
    if importlib.util.find_spec("locust") is None:
        pytest.skip("locust is not installed (the bench extra)")
    locust = shutil.which("locust", path=str(Path(sys.executable).parent)) or shutil.which("locust")
    if locust is None:
        pytest.skip("the locust command is not on PATH")
    env = {**os.environ, "LLM_THINK_S": "0.05", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [locust, "-f", "benchmarks/locustfile.py", "--host", ref_server.base_url, "--headless",
         "-u", "2", "-r", "2", "-t", "3s", "--only-summary", "--csv", str(tmp_path / "run")],
        cwd=ROOT, capture_output=True, text=True, env=env, timeout=50)
    assert proc.returncode == 0, proc.stderr[-3000:]
    stats = (tmp_path / "run_stats.csv").read_text().splitlines()
    rows = {line.split(",")[1]: line.split(",") for line in stats[1:]}
    assert {"e2e", "ttft"} <= set(rows)
    assert int(rows["e2e"][2]) > 0 and int(rows["e2e"][3]) == 0     # requests, failures
