"""Two runs side by side, and the regression gate: fail on a P99 regression.

    python -m benchmarks compare A.json B.json --max-p99-regression 10%

First the savings rows of both runs side by side: each row's ratio on its own statistic with
its 95% interval and verdict, as each run's report gave them (this machine against another,
or one commit against another). Then every (scenario, variant, metric) present in both files,
for e2e latency and TTFT at p50 and p99: the change from A to B with a 95% bootstrap interval
(the same percentile bootstrap the reports use; the two runs are not paired, so each side is
resampled on its own). Exit status: 0 no P99 regression beyond the threshold, 1 at least one,
2 bad input (missing/unreadable file, not a result document, bad threshold).

A P99 counts as a regression only when its *whole* interval lies beyond the threshold: a
change the noise could have made does not fail the build. A P99 from fewer requests than it
takes to estimate one (``min_samples("p99")``, 200; ``--min-samples`` overrides) is printed
but does not gate.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["BadInput", "Delta", "compare_docs", "gate", "load_result", "main", "parse_threshold",
           "side_by_side"]

METRICS = ("latency_ms", "ttft_ms")
EXIT_OK, EXIT_REGRESSION, EXIT_BAD_INPUT = 0, 1, 2


class BadInput(ValueError):
    """Input the gate cannot judge; the message names the file or value."""


@dataclass(frozen=True)
class Delta:
    scenario: str
    variant: str
    metric: str
    quantile: str
    baseline: float
    current: float
    n_baseline: int
    n_current: int
    # 95% interval of current/baseline - 1 (None: not enough records stored to resample)
    change_low: float | None = None
    change_high: float | None = None

    @property
    def change(self) -> float:
        """Relative change: +0.10 is 10% slower."""
        return (self.current - self.baseline) / self.baseline if self.baseline > 0 else 0.0


def parse_threshold(text: str) -> float:
    """"10%" -> 0.10; "10" -> 0.10 (percent); "0.1" is refused as ambiguous."""
    raw = text.strip().removesuffix("%")
    try:
        value = float(raw)
    except ValueError:
        raise BadInput(f"--max-p99-regression {text!r}: expected a percentage like 10%") from None
    if not text.strip().endswith("%") and 0 < value < 1:
        raise BadInput(f"--max-p99-regression {text!r} is ambiguous: write it as a percentage "
                       "(e.g. 10%)")
    if value < 0:
        raise BadInput(f"--max-p99-regression {text!r} must not be negative")
    return value / 100.0


def load_result(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        raise BadInput(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadInput(f"{path}: not a readable JSON file ({exc})") from None
    from .report import SCHEMA

    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise BadInput(f"{path}: not a benchmark result (schema {SCHEMA!r} expected)")
    if not isinstance(doc.get("scenarios"), list):
        raise BadInput(f"{path}: result has no scenario list")
    return doc


COMPARE_ITERATIONS = 1000   # per delta: enough for a 95% interval, quick on full-run files


def _records(doc: Mapping[str, Any]) -> dict[tuple[str, str], list[Any]]:
    return {(scen["name"], variant): recs for scen in doc["scenarios"]
            for variant, recs in (scen.get("records") or {}).items()}


def _quantiles(doc: Mapping[str, Any]) -> dict[tuple[str, str, str, str], tuple[float, int]]:
    out = {}
    for scen in doc["scenarios"]:
        for variant, summary in (scen.get("summaries") or {}).items():
            for metric in METRICS:
                stats = summary.get(metric) or {}
                for q in ("p50", "p99"):
                    if isinstance(stats.get(q), int | float):
                        out[(scen["name"], variant, metric, q)] = (float(stats[q]),
                                                                   int(stats.get("n", 0)))
    return out


def compare_docs(baseline: Mapping[str, Any], current: Mapping[str, Any],
                 min_samples: int | None = None) -> Iterator[Delta]:
    """Every quantile both runs have, with the interval of its change wherever both sides have
    enough stored records to estimate that quantile."""
    from .report import metric_values
    from .stats import bootstrap_ratio
    from .stats import min_samples as needed

    base, cur = _quantiles(baseline), _quantiles(current)
    base_recs, cur_recs = _records(baseline), _records(current)
    for key in sorted(base.keys() & cur.keys()):
        (b, nb), (c, nc) = base[key], cur[key]
        scenario, variant, metric, q = key
        low = high = None
        enough = needed(q) if min_samples is None else max(min_samples, 1)
        if min(nb, nc) >= enough and (scenario, variant) in base_recs \
                and (scenario, variant) in cur_recs:
            interval = bootstrap_ratio(metric_values(cur_recs[(scenario, variant)], metric),
                                       metric_values(base_recs[(scenario, variant)], metric),
                                       q, iterations=COMPARE_ITERATIONS, paired=False,
                                       seed=":".join(key))
            if interval is not None:
                low, high = interval[0] - 1.0, interval[1] - 1.0
        yield Delta(*key, baseline=b, current=c, n_baseline=nb, n_current=nc,
                    change_low=low, change_high=high)


def gate(deltas: list[Delta], threshold: float, min_samples: int | None = None) -> list[Delta]:
    """The P99 deltas that fail the gate: enough samples on both sides, and the whole 95%
    interval of the change beyond ``threshold`` (a delta stored without records to resample
    falls back to its point estimate)."""
    from .stats import min_samples as needed

    enough = needed("p99") if min_samples is None else min_samples
    failed = []
    for d in deltas:
        if d.quantile != "p99" or min(d.n_baseline, d.n_current) < enough:
            continue
        sure = d.change_low if d.change_low is not None else d.change
        if sure > threshold:
            failed.append(d)
    return failed


def _row_cell(row: Mapping[str, Any] | None) -> str:
    from .report import interval_text

    if row is None:
        return "-"
    if "verdict" not in row:   # a result written before rows had intervals
        x = row.get("ratio_p50")
        return f"{x:.2f}x at p50 (no interval stored)" if x else "-"
    verdict = row["verdict"]
    return interval_text(row) + ("" if verdict.startswith("too few") else f" {verdict}")


def side_by_side(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """The savings rows of two runs, one line each: row, statistic, A's ratio and interval,
    B's ratio and interval."""
    def rows(doc: Mapping[str, Any]) -> dict[tuple[str, str], Mapping[str, Any]]:
        return {(scen["name"], r["label"] + ("" if r.get("statistic", "p50") == "p50"
                                             else f" [{r['statistic']}]")): r
                for scen in doc["scenarios"] if not scen.get("skipped")
                for r in scen.get("rows", [])}

    ra, rb = rows(a), rows(b)
    keys = list(dict.fromkeys([*ra, *rb]))
    lines = [f"{'row':<62} {'A':<46} {'B'}"]
    for key in keys:
        lines.append(f"{key[1][:62]:<62} {_row_cell(ra.get(key))[:46]:<46} "
                     f"{_row_cell(rb.get(key))}")
    return lines


def _describe(doc: Mapping[str, Any], path: str) -> str:
    host = doc.get("host", {})
    return (f"{path}: {doc.get('created', '?')}, {doc.get('network', {}).get('profile', '?')} "
            f"network, {'quick' if doc.get('quick') else 'full'}, "
            f"{host.get('cpus', '?')} CPUs, {host.get('platform', '?')}")


def _change(d: Delta) -> str:
    if d.change_low is None or d.change_high is None:
        return f"{d.change:>+8.1%} {'':<17}"
    return f"{d.change:>+8.1%} [{d.change_low:+.0%}, {d.change_high:+.0%}]".ljust(27)


def main(baseline_path: str, current_path: str, threshold_text: str,
         min_samples: int | None = None, out: Any = None) -> int:
    import sys

    out = out or sys.stdout
    try:
        threshold = parse_threshold(threshold_text)
        baseline, current = load_result(Path(baseline_path)), load_result(Path(current_path))
    except BadInput as exc:
        print(f"compare: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    deltas = list(compare_docs(baseline, current, min_samples))
    if not deltas:
        print("compare: the two results share no scenario/variant/metric to compare",
              file=sys.stderr)
        return EXIT_BAD_INPUT
    from .stats import min_samples as needed

    enough = needed("p99") if min_samples is None else min_samples
    failed = gate(deltas, threshold, min_samples)
    print(f"A = {_describe(baseline, baseline_path)}", file=out)
    print(f"B = {_describe(current, current_path)}", file=out)
    print("\nsavings rows (baseline / llmclient on each row's statistic, 95% interval):",
          file=out)
    for line in side_by_side(baseline, current):
        print(line, file=out)
    print("\nchange from A to B per variant (+ is slower; 95% interval in brackets):", file=out)
    print(f"{'scenario':<12} {'variant':<28} {'metric':<10} {'q':<4} {'A':>9} "
          f"{'B':>9} {'change [95% CI]':<27}  n A/B", file=out)
    for d in deltas:
        flag = "  REGRESSION" if d in failed else ""
        if d.quantile == "p99" and min(d.n_baseline, d.n_current) < enough:
            flag = f"  (n < {enough}: not gated)"
        print(f"{d.scenario:<12} {d.variant[:28]:<28} {d.metric:<10} {d.quantile:<4} "
              f"{d.baseline:>9.1f} {d.current:>9.1f} {_change(d)}  "
              f"{d.n_baseline}/{d.n_current}{flag}", file=out)
    if failed:
        print(f"FAIL: {len(failed)} P99 regression(s) whose 95% interval lies beyond "
              f"{threshold:.0%}", file=out)
        return EXIT_REGRESSION
    print(f"OK: no P99 regression beyond {threshold:.0%} (judged on 95% intervals)", file=out)
    return EXIT_OK
