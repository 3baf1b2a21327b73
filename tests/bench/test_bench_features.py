"""The cache, encoding and combined scenarios: their workload generators, and one real run."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from benchmarks.harness._scenario import ChatRequest
from benchmarks.harness.load import zipf_indices
from benchmarks.scenarios.features import _json_size, conversation

ROOT = Path(__file__).resolve().parents[2]


def test_zipf_draws_follow_the_rank_frequency_law() -> None:
    draws = zipf_indices(200_000, 40, 1.1, random.Random(3))
    counts = Counter(draws)
    assert set(counts) <= set(range(40))
    # P(rank 1) / P(rank 2) = 2 ** 1.1 and P(1) / P(10) = 10 ** 1.1, within sampling noise.
    assert counts[0] / counts[1] == pytest.approx(2 ** 1.1, rel=0.05)
    assert counts[0] / counts[9] == pytest.approx(10 ** 1.1, rel=0.08)


def test_zipf_names_bad_arguments() -> None:
    with pytest.raises(ValueError, match="distinct"):
        zipf_indices(5, 0, 1.1, random.Random(0))


def test_conversations_are_ten_turns_of_about_16_kb_and_never_identical() -> None:
    rng = random.Random(5)
    a, b = conversation(rng), conversation(rng)
    assert len(a) == 1 + 2 * 9 + 1 and a[-1]["role"] == "user"
    size = len(_json_size(ChatRequest(messages=a), "m"))
    assert 13_000 < size < 20_000
    assert a[0] != b[0]  # tagged: no two share a server-side prefix


@pytest.mark.slow
@pytest.mark.timeout(110)
def test_cache_and_encoding_rows_from_a_real_run(tmp_path: Path) -> None:
    pytest.importorskip("openai")
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", "--scenarios", "cache,encoding",
         "--network", "loopback", "--profile", "zero", "--out", str(tmp_path), "--seed", "2"],
        cwd=ROOT, capture_output=True, text=True, timeout=100)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "cache alone: llmclient -> llmclient+cache" in proc.stdout
    (run_dir,) = list(tmp_path.iterdir())
    doc = json.loads((run_dir / "result.json").read_text())
    cache, encoding = doc["scenarios"]
    served = Counter(r["extra"].get("cache") for r in cache["records"]["llmclient+cache"])
    picks = cache["series"]["requests"]
    assert served["hit"] + served.get("join", 0) == cache["series"]["served"].get("hit", 0) + \
        cache["series"]["served"].get("join", 0) > 0
    assert all(r["extra"].get("cache") in (None, "miss", "bypass") for r in cache["records"]["llmclient"])
    assert len(cache["records"]["openai"]) == picks
    wires = {r["extra"].get("wire") for r in encoding["records"]["llmclient+protobuf"]}
    assert wires == {"protobuf"}
    sent = encoding["series"]["median_bytes_sent"]
    assert sent["llmclient+protobuf"] < encoding["series"]["request_json_bytes"]
    assert sent["llmclient"] < encoding["series"]["request_json_bytes"] / 2  # zstd after the first
