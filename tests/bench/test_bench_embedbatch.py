"""The ``embedbatch`` scenario end to end, through ``python -m benchmarks`` against a reference
server started apart from the suite: it runs (reaching into the batching client's state as the
chain keeps it), and both its rows are judged from the batcher's own counts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def test_the_scenario_runs_and_counts_the_requests_the_batcher_sent(tmp_path: Path, ref_server: Any) -> None:
    done = subprocess.run([sys.executable, "-m", "benchmarks", "--quick", "--scenarios", "embedbatch",
                           "--base-url", ref_server.base_url, "--api-key", "k", "--out", str(tmp_path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    (result,) = tmp_path.glob("*/result.json")
    doc = json.loads(result.read_text())
    (scenario,) = doc["scenarios"] if isinstance(doc["scenarios"], list) else doc["scenarios"].values()
    assert not scenario["skipped"], scenario["skipped"]
    counts = scenario["series"]["embedbatch"]
    # 64 callers at once, 5 rounds (one warm-up): the window gathers them, far fewer requests
    assert counts["calls"] == 5 * 64 and 0 < counts["requests"] < counts["calls"]
    rows = {row["label"]: row for row in scenario["rows"]}
    sent = rows["embeddings, 64 concurrent callers: requests sent per call"]
    assert sent["verdict"] == "better", sent
    assert all(r["status"] == 200 for recs in scenario["records"].values() for r in recs)
