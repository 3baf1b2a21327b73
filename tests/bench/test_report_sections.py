"""The report's headline, log-scale savings chart, four-way latency split and waterfall (pure
functions of a result document)."""

from __future__ import annotations

import re
from typing import Any

from benchmarks.harness._scenario import Row, ScenarioResult
from benchmarks.harness.report import (
    build_result,
    headline,
    latency_split,
    render_html,
    svg_log_hbars,
    waterfall_segments,
)

from ._results import records


def _row(label: str, b: float, c: float, metric: str = "latency_ms") -> dict[str, Any]:
    return {"label": label, "baseline": "official", "candidate": "llmclient", "metric": metric,
            "baseline_p50": b, "candidate_p50": c, "baseline_p99": b, "candidate_p99": c,
            "ratio_p50": b / c, "ratio_p99": b / c, "n_baseline": 10, "n_candidate": 10,
            "requests_baseline": 10, "requests_candidate": 10}


SLOW = {"variant": "llmclient", "trace_id": "ab" * 16, "latency_ms": 300.0, "error_kind": None,
        "status": 200, "breakdown": {"client_queue": 1.0, "connect": 20.0, "tls": 30.0,
                                     "server.queue": 10.0, "server.prefill": 40.0,
                                     "server.decode": 60.0},
        "extra": {"request_sent_ms": 60.0, "first_byte_ms": 250.0}}
SUMMARY = {"latency_ms": {"p50": 200.0},
           "breakdown_p50_ms": {"connect": {"p50": 20.0}, "tls": {"p50": 30.0},
                                "server.queue": {"p50": 10.0}, "server.prefill": {"p50": 40.0},
                                "server.decode": {"p50": 60.0}, "server.serialize": {"p50": 2.0},
                                "client_queue": {"p50": 1.0}}}
DOC = {"schema": "llmclient-bench/1", "network": {"profile": "wan"}, "advice": [],
       "scenarios": [{"name": "connection", "description": "d", "skipped": None, "notes": [],
                      "rows": [_row("warm HTTP/2", 450.0, 350.0), _row("cache", 330.0, 0.3),
                               _row("compression", 672.0, 670.0),
                               _row("stream TTFT", 250.0, 150.0, "ttft_ms")],
                      "summaries": {"llmclient": SUMMARY}, "series": {},
                      "records": {"llmclient": [SLOW]}}]}


def test_headline_is_at_most_six_lines_biggest_wins_first_one_per_technique() -> None:
    variants, rows = {}, []
    for i, (tech, speedup) in enumerate((("a", 1.5), ("b", 6.0), ("c", 3.0), ("d", 2.0),
                                         ("e", 1.0))):
        variants[f"base/{tech}"] = records(f"base/{tech}", 600.0, n=20, seed=i)
        variants[f"llmc/{tech}"] = records(f"llmc/{tech}", 600.0 / speedup, n=20, seed=i + 10)
        rows.append(Row(f"row {tech}", f"base/{tech}", f"llmc/{tech}", technique=tech))
    # a second row of the biggest technique: the headline names a technique once
    rows.append(Row("row b again", "base/b", "llmc/b", technique="b"))
    doc = build_result([ScenarioResult("s", "d", variants=variants, rows=rows)],
                       {"network": {"profile": "wan"}})
    lines = headline(doc)
    assert len(lines) <= 6
    # the defaults' wins on one line, biggest first, each technique once
    lead, wins = lines[0].split(" — ", 1)
    assert lead == "What the defaults save (nothing to do)"
    assert [w.split(":")[0] for w in wins.split("; ")] == ["b", "c", "d", "and 1 more in the table."]
    assert re.match(r"b: \d+ ms -> \d+ ms p50 latency, [\d.]+x \(95% CI ", wins)
    assert lines[1].startswith("Did not pay on the wan network: no measurable difference")
    assert " e 0." in lines[1] and " a " not in lines[1]   # 1.5x is a win
    assert lines[-1].startswith("How far to trust this run (wan network)")


def test_savings_chart_is_log_scale_so_small_ratios_stay_visible() -> None:
    svg = svg_log_hbars([("cache", 1100.0), ("warm", 1.3), ("slower", 0.8)], "x", "t")
    widths = [float(w) for w in re.findall(r'<rect x="[\d.]+" y="\d+" width="([\d.]+)"', svg)]
    assert len(widths) == 3
    # linear: 1.3x would be 0.1% of the 1100x bar; on a log scale it is several percent
    assert widths[1] / widths[0] > 0.03
    assert "no change" in svg and ">1000x<" in svg  # the decade ticks


def test_latency_split_into_network_serialization_queue_inference() -> None:
    split = latency_split(SUMMARY)
    assert split == {"network": 20 + 30 + (200 - 163), "serialization": 2.0, "queue": 11.0,
                     "inference": 100.0}
    assert sum(split.values()) == 200.0  # the p50, all accounted for
    assert latency_split({"latency_ms": {"p50": 5.0}, "breakdown_p50_ms": {}}) is None


def test_waterfall_orders_phases_and_places_server_work_inside_the_wait() -> None:
    segs = waterfall_segments(SLOW)
    names = [n for n, _, _ in segs]
    assert names == ["client queue", "connect", "TLS", "send", "server queue", "prefill",
                     "decode", "last byte"]
    starts = [a for _, a, _ in segs]
    assert starts == sorted(starts)
    by = {n: (a, b) for n, a, b in segs}
    assert by["send"] == (51.0, 60.0)
    # 190 ms between sent and first byte, 110 of them server work: 40 ms each way
    assert by["server queue"][0] == 100.0 and by["decode"][1] == 210.0
    assert by["last byte"] == (250.0, 300.0)


def test_html_has_the_new_sections_in_order() -> None:
    page = render_html(DOC)
    ids = re.findall(r'<section id="(\w+)"', page)
    assert ids[0] == "headline" and ids[1] == "savings"
    assert "breakdown" in ids and "waterfall" in ids
    assert "ab" * 16 in page.split('id="waterfall"')[1]  # labelled with the trace id
