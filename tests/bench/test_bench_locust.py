"""The Locust file drives a real server through llmclient and reports TTFT and e2e."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.timeout(200)
def test_headless_locust_reports_llm_ttft_and_e2e(ref_server: Any) -> None:
    # Never import locust here: importing it monkey-patches sockets and threads (gevent) for the
    # whole test process, which then starves every later test that uses real threads.
    if importlib.util.find_spec("locust") is None:
        pytest.skip("locust is not installed (the bench extra)")
    locust = shutil.which("locust", path=str(Path(sys.executable).parent)) or shutil.which("locust")
    if locust is None:
        pytest.skip("the locust command is not on PATH")
    # The run ends after 4 finished calls, not after a few seconds that a busy machine may
    # spend starting up (it once ended before any call finished); -t is only the upper bound.
    # The stats come from --json, written at shutdown (the CSV files are refreshed once a
    # second, so a short run can end before they hold its calls).
    env = {**os.environ, "LLM_THINK_S": "0.05", "LLM_STOP_AFTER": "4", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [locust, "-f", "benchmarks/locustfile.py", "--host", ref_server.base_url, "--headless",
         "-u", "2", "-r", "2", "-t", "120s", "--json"],
        cwd=ROOT, capture_output=True, text=True, env=env, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = {entry["name"]: entry for entry in json.loads(proc.stdout)}
    assert rows["e2e"]["method"] == rows["ttft"]["method"] == "LLM"
    # the run ended on the count (the other user may finish a call more), not at 120 s
    assert 4 <= rows["e2e"]["num_requests"] <= 10 and rows["e2e"]["num_failures"] == 0
    assert rows["ttft"]["num_requests"] >= 4
