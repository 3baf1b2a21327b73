"""The regression gate: compare two result files, fail on a P99 regression.

    python -m benchmarks compare BASELINE.json CURRENT.json --max-p99-regression 10%

Compares every (scenario, variant, metric) present in both files, for e2e latency and TTFT, at
p50 and p99, and prints the change. Exit status: 0 no P99 regression beyond the threshold,
1 at least one, 2 bad input (missing/unreadable file, not a result document, bad threshold).
A P99 from fewer than ``min_samples`` requests on either side is printed but does not gate:
with so few samples it is mostly noise.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["BadInput", "Delta", "compare_docs", "load_result", "main", "parse_threshold"]

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


def compare_docs(baseline: Mapping[str, Any], current: Mapping[str, Any]) -> Iterator[Delta]:
    base, cur = _quantiles(baseline), _quantiles(current)
    for key in sorted(base.keys() & cur.keys()):
        (b, nb), (c, nc) = base[key], cur[key]
        yield Delta(*key, baseline=b, current=c, n_baseline=nb, n_current=nc)


def gate(deltas: list[Delta], threshold: float, min_samples: int = 20) -> list[Delta]:
    """The P99 deltas that fail the gate."""
    return [d for d in deltas if d.quantile == "p99" and d.change > threshold
            and min(d.n_baseline, d.n_current) >= min_samples]


def main(baseline_path: str, current_path: str, threshold_text: str,
         min_samples: int = 20, out: Any = None) -> int:
    import sys

    out = out or sys.stdout
    try:
        threshold = parse_threshold(threshold_text)
        baseline, current = load_result(Path(baseline_path)), load_result(Path(current_path))
    except BadInput as exc:
        print(f"compare: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    deltas = list(compare_docs(baseline, current))
    if not deltas:
        print("compare: the two results share no scenario/variant/metric to compare",
              file=sys.stderr)
        return EXIT_BAD_INPUT
    failed = gate(deltas, threshold, min_samples)
    print(f"{'scenario':<12} {'variant':<28} {'metric':<10} {'q':<4} {'baseline':>9} "
          f"{'current':>9} {'change':>8}  n b/c", file=out)
    for d in deltas:
        flag = "  REGRESSION" if d in failed else ""
        if d.quantile == "p99" and min(d.n_baseline, d.n_current) < min_samples:
            flag = f"  (n < {min_samples}: not gated)"
        print(f"{d.scenario:<12} {d.variant[:28]:<28} {d.metric:<10} {d.quantile:<4} "
              f"{d.baseline:>9.1f} {d.current:>9.1f} {d.change:>+8.1%}  "
              f"{d.n_baseline}/{d.n_current}{flag}", file=out)
    if failed:
        print(f"FAIL: {len(failed)} P99 regression(s) beyond {threshold:.0%}", file=out)
        return EXIT_REGRESSION
    print(f"OK: no P99 regression beyond {threshold:.0%}", file=out)
    return EXIT_OK
