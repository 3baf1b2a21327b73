"""The regression gate's verdicts and exit codes on stored result files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.harness.compare import BadInput, compare_docs, gate, main, parse_threshold

from ._results import result_doc

ROOT = Path(__file__).resolve().parents[2]


def _store(tmp_path: Path, name: str, doc: object) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return str(path)


def test_threshold_accepts_percentages_and_refuses_ambiguous_values() -> None:
    assert parse_threshold("10%") == pytest.approx(0.10)
    assert parse_threshold("25") == pytest.approx(0.25)
    for bad in ("0.1", "ten", "-5%"):
        with pytest.raises(BadInput):
            parse_threshold(bad)


def test_same_result_passes_and_slower_llmclient_fails(tmp_path: Path) -> None:
    base = _store(tmp_path, "base.json", result_doc(100.0))
    same = _store(tmp_path, "same.json", result_doc(100.0))
    slower = _store(tmp_path, "slower.json", result_doc(150.0))
    assert main(base, same, "10%") == 0
    assert main(base, slower, "10%") == 1
    assert main(base, slower, "60%") == 0       # within a looser threshold
    assert main(slower, base, "10%") == 0       # an improvement is never a regression


def test_bad_input_exits_2(tmp_path: Path) -> None:
    good = _store(tmp_path, "good.json", result_doc())
    not_json = tmp_path / "broken.json"
    not_json.write_text("{not json")
    other = _store(tmp_path, "other.json", {"schema": "something-else", "scenarios": []})
    assert main(good, str(tmp_path / "missing.json"), "10%") == 2
    assert main(good, str(not_json), "10%") == 2
    assert main(good, other, "10%") == 2
    assert main(good, good, "abc") == 2


def test_small_samples_are_shown_but_not_gated() -> None:
    deltas = list(compare_docs(result_doc(100.0), result_doc(150.0)))
    sweep = [d for d in deltas if d.scenario == "sweep"]
    assert sweep, "sweep variant is compared"
    failed = gate(deltas, 0.10, min_samples=1000)
    assert failed == []                         # 200 requests < 1000: nothing gated


def test_cli_exit_codes_through_python_m_benchmarks(tmp_path: Path) -> None:
    base = _store(tmp_path, "base.json", result_doc(100.0))
    slower = _store(tmp_path, "slower.json", result_doc(150.0))
    run = lambda *a: subprocess.run([sys.executable, "-m", "benchmarks", "compare", *a],  # noqa: E731
                                    cwd=ROOT, capture_output=True, text=True, timeout=60)
    regressed = run(base, slower, "--max-p99-regression", "10%")
    assert regressed.returncode == 1 and "REGRESSION" in regressed.stdout
    assert run(base, base, "--max-p99-regression", "10%").returncode == 0
    assert run(base, str(tmp_path / "nope.json")).returncode == 2
