"""Savings rows judged once: the row objects every section of a report reads.

``judge`` turns a scenario's :class:`~benchmarks.harness.records.Row` (a ratio on a statistic)
or :class:`~benchmarks.harness.records.Rate` (a count of events) into one dict: both sides'
figures, the interval, the verdict word and its :data:`~benchmarks.harness.stats.OUTCOMES`
value, the claim's name and the effort (derived from the candidate arm's options). The
headline, the savings chart, the tables and the advice all read these dicts through
:func:`claim_rows`, and nothing else decides a verdict, so no section can call a technique a
win while another calls it no difference. Pure functions of data.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .records import EFFORTS, Arm, Rate, Row, arm_of, effort_of
from .stats import (
    CONFIDENCE,
    MIN_TRIALS,
    NO_DIFFERENCE,
    TOO_FEW,
    UNDECIDED,
    WIN,
    bootstrap_ratio,
    min_samples,
    newcombe_difference,
    outcome,
    rate_verdict,
    ratio,
    verdict,
    wilson,
)

__all__ = ["claim_rows", "claims", "derive_effort", "interval_text", "judge", "metric_values",
           "rate_json", "row_json", "row_outcome", "short_interval"]


def metric_values(records: Sequence[Any], metric: str) -> list[float | None]:
    """Per request, in send order: ``metric`` of a success, None for a failure (or a success
    without that metric). Reads RequestRecords or their stored JSON alike."""
    out: list[float | None] = []
    for rec in records:
        get = rec.get if isinstance(rec, Mapping) else lambda k, r=rec: getattr(r, k, None)
        status, value = get("status"), get(metric)
        ok = get("error_kind") is None and status is not None and status < 400
        out.append(float(value) if ok and value is not None else None)
    return out


def derive_effort(row: Row | Rate, arms: Mapping[str, Arm]) -> str:
    """What a user does to get ``row``'s candidate, from that arm's options; a row whose
    candidate has no declared arm keeps the effort it was given (a document or a test that
    declares none), "default" when it was given none. A row whose given effort contradicts
    its arm's options is an error: one of the two is wrong."""
    arm = arm_of(arms, row.candidate)
    if arm is None:
        return row.effort or "default"
    derived = effort_of(arm)
    if row.effort is not None and row.effort != derived:
        raise ValueError(f"row {row.label!r}: effort {row.effort!r} written by hand, but its "
                         f"candidate {row.candidate!r} has options {dict(arm.options)} "
                         f"({derived!r})")
    return derived


def row_json(row: Row, summaries: Mapping[str, Mapping[str, Any]],
             records: Mapping[str, Sequence[Any]], seed: int | str = 0,
             effort: str | None = None) -> dict[str, Any]:
    """One ratio row as data: both sides' p50/p99, and the row's own statistic with a
    bootstrap interval on the ratio and the verdict it allows."""
    base, cand = summaries.get(row.baseline, {}), summaries.get(row.candidate, {})
    b, c = base.get(row.metric, {}), cand.get(row.metric, {})
    statistic = row.statistic
    b_values = metric_values(records.get(row.baseline, []), row.metric)
    c_values = metric_values(records.get(row.candidate, []), row.metric)
    n_b, n_c = b.get("n", 0), c.get("n", 0)
    interval = bootstrap_ratio(b_values, c_values, statistic, seed=f"{seed}:{row.label}") \
        if min(n_b, n_c) >= min_samples(statistic) else None
    b_stat, c_stat = b.get(statistic), c.get(statistic)
    judged = verdict(interval, n_b, n_c, statistic)
    return {
        "kind": "ratio", "label": row.label, "baseline": row.baseline,
        "candidate": row.candidate, "metric": row.metric,
        "statistic": statistic, "technique": row.technique or row.label,
        "effort": effort or row.effort or "default", "context": row.context,
        "baseline_stat": b_stat, "candidate_stat": c_stat,
        "ratio": ratio(b_stat, c_stat),
        "ci_low": interval[0] if interval else None, "ci_high": interval[1] if interval else None,
        "confidence": CONFIDENCE,
        "min_samples": min_samples(statistic),
        "verdict": judged, "outcome": outcome(judged),
        "baseline_p50": b.get("p50"), "baseline_p99": b.get("p99"),
        "candidate_p50": c.get("p50"), "candidate_p99": c.get("p99"),
        "ratio_p50": ratio(b.get("p50"), c.get("p50")),
        "ratio_p99": ratio(b.get("p99"), c.get("p99")),
        # n_*: samples behind the statistic (successes); requests_*: everything sent.
        "n_baseline": n_b, "n_candidate": n_c,
        "requests_baseline": base.get("n", 0), "requests_candidate": cand.get("n", 0),
        "failed_baseline": base.get("n_failed", 0), "failed_candidate": cand.get("n_failed", 0),
    }


def rate_json(rate: Rate, records: Mapping[str, Sequence[Any]],
              effort: str | None = None) -> dict[str, Any]:
    """One rate row as data: each side's events among its trials with a Wilson interval, the
    difference (candidate - baseline) with Newcombe's interval, and the verdict it allows."""
    if rate.tallies is not None:
        kb, nb, kc, nc = rate.tallies
    else:
        kb, nb = rate.tally(records.get(rate.baseline, []))
        kc, nc = rate.tally(records.get(rate.candidate, []))
    decided = min(nb, nc) >= MIN_TRIALS
    interval = newcombe_difference(kb, nb, kc, nc) if decided else None
    judged = rate_verdict(interval, nb, nc, rate.higher_is_better)
    return {
        "kind": "rate", "label": rate.label, "baseline": rate.baseline,
        "candidate": rate.candidate, "metric": None, "statistic": "rate", "event": rate.event,
        "higher_is_better": rate.higher_is_better, "technique": rate.technique or rate.label,
        "effort": effort or rate.effort or "default", "context": rate.context,
        "baseline_events": kb, "baseline_trials": nb,
        "candidate_events": kc, "candidate_trials": nc,
        "baseline_rate": kb / nb if nb else None, "candidate_rate": kc / nc if nc else None,
        "baseline_ci": list(wilson(kb, nb)) if nb else None,
        "candidate_ci": list(wilson(kc, nc)) if nc else None,
        "difference": kc / nc - kb / nb if nb and nc else None,
        "ci_low": interval[0] if interval else None, "ci_high": interval[1] if interval else None,
        "confidence": CONFIDENCE, "min_samples": MIN_TRIALS,
        "verdict": judged, "outcome": outcome(judged),
        "n_baseline": nb, "n_candidate": nc,
        "requests_baseline": len(records.get(rate.baseline, [])) if rate.tallies is None else nb,
        "requests_candidate": len(records.get(rate.candidate, [])) if rate.tallies is None else nc,
    }


def judge(row: Row | Rate, summaries: Mapping[str, Mapping[str, Any]],
          records: Mapping[str, Sequence[Any]], arms: Mapping[str, Arm],
          seed: int | str = 0) -> dict[str, Any]:
    effort = derive_effort(row, arms)
    if isinstance(row, Rate):
        return rate_json(row, records, effort)
    return row_json(row, summaries, records, seed=seed, effort=effort)


def row_outcome(row: Mapping[str, Any]) -> str:
    """A stored row's outcome (rows written before outcomes existed: from their verdict)."""
    found = row.get("outcome")
    if found is not None:
        return str(found)
    return outcome(str(row.get("verdict", TOO_FEW))) if "verdict" in row else UNDECIDED


def claim_rows(doc: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any], str, bool]]:
    """Every savings row of ``doc`` as (scenario, row, claim name, judges the claim).

    A claim is named by the row's technique (its label when it has none). Rows that name the
    same technique are one claim, judged by the first of them, when they agree on the outcome;
    when they do not, each is a claim of its own, named with its label as well, so that no name
    is a win in one place and no difference in another."""
    rows = [(str(scen["name"]), r) for scen in doc.get("scenarios", [])
            if not scen.get("skipped") for r in scen.get("rows", [])]
    by_name: dict[str, list[Mapping[str, Any]]] = {}
    for _, r in rows:
        by_name.setdefault(str(r.get("technique") or r["label"]), []).append(r)
    split = {name for name, rs in by_name.items() if len({row_outcome(r) for r in rs}) > 1}
    out, seen = [], set()
    for scen, r in rows:
        name = str(r.get("technique") or r["label"])
        if name in split:
            name = f"{name} ({r['label']})" if r["label"] != name else name
        out.append((scen, r, name, name not in seen))
        seen.add(name)
    return out


def claims(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The claims of ``doc``, in report order: each judging row with its ``claim`` name and
    ``outcome``. What the headline, the chart and the advice speak about."""
    return [{**r, "claim": name, "outcome": row_outcome(r)}
            for _, r, name, judging in claim_rows(doc) if judging]


def _xr(value: float | None) -> str:
    """A ratio with the digits it deserves: 1.004x, 1.30x, 12.0x, 1,100x."""
    if value is None:
        return "-"
    if value >= 100:
        return f"{value:,.0f}x"
    if value >= 10:
        return f"{value:.1f}x"
    return f"{value:.3f}x" if abs(value - 1.0) < 0.01 else f"{value:.2f}x"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _points(low: float, high: float) -> str:
    return f"{low * 100:+.0f} to {high * 100:+.0f} points"


def short_interval(row: Mapping[str, Any]) -> str:
    """The interval alone, for a list of rows that did not pay: "0.99-1.02x", "-10 to +12
    points"."""
    if row.get("ci_low") is None:
        return "not measured"
    if row.get("kind") == "rate":
        return _points(row["ci_low"], row["ci_high"])
    return f"{_xr(row['ci_low']).removesuffix('x')}-{_xr(row['ci_high'])}"


def interval_text(row: Mapping[str, Any]) -> str:
    """"1.30x (95% CI 1.21-1.42x)"; for a rate "5/5 -> 0/5 (100% -> 0%, difference 95% CI -100
    to -57 points)"; a row the run could not judge says why instead."""
    v = row.get("verdict")
    conf = f"{float(row.get('confidence', CONFIDENCE)):.0%}"
    if row.get("kind") == "rate":
        if v == TOO_FEW:
            return (f"needs --full (a rate needs {row.get('min_samples')} trials a side, has "
                    f"{min(row.get('n_baseline', 0), row.get('n_candidate', 0))})")
        counts = (f"{row['baseline_events']}/{row['baseline_trials']} -> "
                  f"{row['candidate_events']}/{row['candidate_trials']}")
        if row.get("ci_low") is None:
            return f"{counts} (not measured)"
        return (f"{counts} ({_pct(row['baseline_rate'])} -> {_pct(row['candidate_rate'])}, "
                f"difference {conf} CI {_points(row['ci_low'], row['ci_high'])})")
    if v == TOO_FEW:
        return (f"needs --full ({row.get('statistic')} needs {row.get('min_samples')} samples "
                f"a side, has {min(row.get('n_baseline', 0), row.get('n_candidate', 0))})")
    if row.get("ci_low") is None:
        return "not measured"
    return (f"{_xr(row.get('ratio'))} ({conf} CI {_xr(row['ci_low']).removesuffix('x')}-"
            f"{_xr(row['ci_high'])})")


def effort_groups(rows: Sequence[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    """``rows`` by effort, in :data:`EFFORTS` order; empty groups left out."""
    groups: dict[str, list[Mapping[str, Any]]] = {effort: [] for effort in EFFORTS}
    for r in rows:
        groups.setdefault(str(r.get("effort") or "default"), []).append(r)
    return {k: v for k, v in groups.items() if v}


def is_win(row: Mapping[str, Any]) -> bool:
    return row_outcome(row) == WIN


def no_difference(row: Mapping[str, Any]) -> bool:
    return row.get("verdict") == NO_DIFFERENCE
