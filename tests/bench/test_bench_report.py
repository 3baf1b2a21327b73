"""Report generation from a stored result: table, JSON round trip, HTML sections, advice."""

from __future__ import annotations

import json
import re
from pathlib import Path

from benchmarks.harness._scenario import RequestRecord
from benchmarks.harness.advice import advise
from benchmarks.harness.report import render_html, render_table, write_result

from ._results import result_doc


def test_written_result_round_trips_and_keeps_per_request_records(tmp_path: Path) -> None:
    json_path, html_path = write_result(result_doc(), tmp_path)
    doc = json.loads(json_path.read_text())
    conn = doc["scenarios"][0]
    record = RequestRecord.from_json(conn["records"]["llmclient"][0])
    assert record.trace_id == "llmclient-0000" and record.status == 200
    assert conn["rows"][0]["ratio_p50"] > 2.5           # 300 ms baseline vs 100 ms median
    assert conn["summaries"]["llmclient"]["failures_by_status"] == {"429": 3}
    assert html_path.read_text().startswith("<!doctype html>")


def test_html_is_self_contained_and_has_every_section() -> None:
    page = render_html(result_doc())
    for section in ("savings", "advice", "cdfs", "breakdown", "sweep", "errors", "gpu",
                    "environment", "scenarios", "slowest"):
        assert f'id="{section}"' in page, section
    assert "<script" not in page and "http://" not in page.replace("http://www.w3.org/2000/svg", "")
    assert page.count("<svg") >= 6
    assert "knee 8" in page                              # the knee is marked on the sweep
    assert "not available: needs preprocess" in page
    assert "llmclient-" in page                          # slowest requests list trace ids


def test_html_leaves_out_gpu_plot_without_samples() -> None:
    doc = result_doc()
    doc["gpu_samples"] = []
    assert 'id="gpu"' not in render_html(doc)


def test_terminal_table_lists_rows_ratios_counts_and_skips() -> None:
    table = render_table(result_doc())
    line = next(ln for ln in table.splitlines() if ln.startswith("connection: fresh"))
    assert re.search(r"\d\.\d\dx", line) and "200/203" in line and "429:3" in line
    assert "not available: needs preprocess" in table
    assert "knee at 8 req/s" in table


def test_advice_reads_the_measurements() -> None:
    advice = advise(result_doc())
    text = "\n".join(advice)
    assert "connection setup" in text and "TCP + TLS" in text
    assert "8 req/s" in text                             # knee-based sizing
    assert "429" in text
    # Nothing to say about a scenario set with no rows, series or failures.
    assert advise({"scenarios": [], "network": {}}) == []


def test_advice_survives_a_row_whose_side_never_succeeded() -> None:
    # Against a third-party server a variant can fail every request (its p50 is None): the
    # advice skips that row instead of crashing the whole run.
    doc = result_doc()
    row = doc["scenarios"][0]["rows"][0]
    row["baseline_p50"], row["ratio_p50"] = None, None
    assert isinstance(advise(doc), list)


def test_advice_claims_no_saving_its_interval_or_sample_does_not_support() -> None:
    from ._results import quick_pass_doc

    text = "\n".join(advise(quick_pass_doc()))
    # a sentence per claim (the name the headline gives it), naming the row it stands on
    assert re.search(r"^image preparation \(12 MP photo\): llmclient cuts p50 latency by \d+% "
                     r"\(images 12MP: raw upload -> prepared: ", text, re.M)
    assert not re.search(r"^orjson \+ zstd request bodies:", text, re.M)  # CI includes 1.0x
    assert "slow replicas" not in text       # 8 requests cannot estimate its p95
