"""Results as data, a terminal table and a self-contained HTML report (inline SVG, no JS).

``build_result`` turns scenario results into the JSON document (schema ``llmclient-bench/1``)
that ``compare`` and ``render_html`` read; everything after it is a pure function of that dict,
so a stored result can be re-rendered and tested without running anything.
"""

from __future__ import annotations

import html
import itertools
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .records import EFFORTS, RequestRecord, ScenarioResult
from .stats import (
    BEYOND_QUANTILE,
    BOOTSTRAP_ITERATIONS,
    LOSS,
    MIN_TRIALS,
    SLO,
    TIE,
    TOO_FEW,
    UNDECIDED,
    WIN,
    cdf,
    summarize,
)
from .verdicts import (
    claim_rows,
    claims,
    effort_groups,
    interval_text,
    judge,
    metric_values,
    row_json,
    row_outcome,
    short_interval,
)

__all__ = ["SCHEMA", "build_result", "chart_rows", "claims", "headline", "interval_text",
           "latency_split", "metric_values", "render_html", "render_table", "row_json",
           "svg_interval_chart", "svg_log_hbars", "svg_rate_chart", "waterfall_segments",
           "write_result"]

SCHEMA = "llmclient-bench/1"
# Goodput SLO used in reports unless the CLI is given others: interactive chat targets.
DEFAULT_SLO = SLO(ttft_ms=2000.0, tpot_ms=200.0, e2e_ms=30_000.0)
_COLOURS = ("#d1495b", "#2e86ab", "#edae49", "#66a182", "#8d6a9f", "#00798c", "#6c757d",
            "#e07a5f", "#3d405b", "#81b29a")


# ---- result document ------------------------------------------------------------------------
def scenario_json(result: ScenarioResult, slo: SLO = DEFAULT_SLO) -> dict[str, Any]:
    summaries = {name: summarize(recs, slo) for name, recs in result.variants.items()}
    return {
        "name": result.name,
        "description": result.description,
        "skipped": result.skipped,
        "notes": result.notes,
        "rows": [judge(row, summaries, result.variants, result.arms, seed=result.name)
                 for row in result.rows],
        "arms": {name: arm.to_json() for name, arm in result.arms.items()},
        "summaries": summaries,
        "series": _jsonable(result.series),
        "records": {name: [r.to_json() for r in recs] for name, recs in result.variants.items()},
    }


def _jsonable(value: Any) -> Any:
    if isinstance(value, RequestRecord):
        return value.to_json()
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items() if k != "records"}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def build_result(scenarios: Sequence[ScenarioResult], meta: Mapping[str, Any],
                 slo: SLO = DEFAULT_SLO) -> dict[str, Any]:
    """The result document. Each row is judged here, once (:func:`verdicts.judge`); its
    ``claim`` (the name the headline, chart and advice give it) is stored beside it."""
    from .advice import advise

    doc: dict[str, Any] = {"schema": SCHEMA, **meta,
                           "scenarios": [scenario_json(s, slo) for s in scenarios]}
    for _, row, name, _judging in claim_rows(doc):
        row["claim"] = name  # type: ignore[index]
    doc["advice"] = advise(doc)
    return doc


def write_result(doc: Mapping[str, Any], out_dir: Path) -> tuple[Path, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path, html_path = out_dir / "result.json", out_dir / "report.html"
    json_path.write_text(json.dumps(doc, indent=1, allow_nan=False, default=str))
    html_path.write_text(render_html(doc))
    return json_path, html_path


# ---- terminal ---------------------------------------------------------------------------------
def _ms(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.0f}" if value >= 100 else f"{value:.1f}"


def _x(value: float | None) -> str:
    if value is None:
        return "-"
    # Within 1% of no change, two decimals would print a measured 1.004x as a bare 1.00x.
    return f"{value:.3f}x" if abs(value - 1.0) < 0.01 else f"{value:.2f}x"


def _failures(summary: Mapping[str, Any]) -> str:
    parts = {**summary.get("failures_by_status", {}),
             **{k: v for k, v in summary.get("failures_by_kind", {}).items() if k != "http_error"}}
    return ",".join(f"{k}:{v}" for k, v in sorted(parts.items())) or "0"


def _ci(row: Mapping[str, Any]) -> str:
    if row.get("ci_low") is None:
        return "-"
    if row.get("kind") == "rate":
        return f"[{row['ci_low'] * 100:+.0f},{row['ci_high'] * 100:+.0f}] pt"
    # The ratio's own precision: "0.998x [0.996-1.01]", never a point outside its rounded interval.
    return f"[{_x(row['ci_low']).removesuffix('x')}-{_x(row['ci_high']).removesuffix('x')}]"


def _verdict_cell(row: Mapping[str, Any]) -> str:
    """The verdict as every table writes it (a row the pass cannot judge: what it lacks)."""
    if row.get("verdict") == TOO_FEW:
        return interval_text(row)
    return str(row.get("verdict", ""))


def _sides(row: Mapping[str, Any]) -> tuple[str, str]:
    """Both sides' figure: the statistic in ms, or events/trials of a rate; nothing for a
    statistic the pass cannot estimate."""
    if row.get("kind") == "rate":
        return (f"{row['baseline_events']}/{row['baseline_trials']}",
                f"{row['candidate_events']}/{row['candidate_trials']}")
    if row.get("verdict") == TOO_FEW:
        return "-", "-"
    return _ms(row.get("baseline_stat")), _ms(row.get("candidate_stat"))


def _stat_name(row: Mapping[str, Any]) -> str:
    if row.get("kind") == "rate":
        return "rate"
    return f"{'ttft' if row.get('metric') == 'ttft_ms' else 'e2e'} {row.get('statistic', 'p50')}"


TABLE_LEGEND = (
    ("stat", "the statistic the row is judged on: e2e or TTFT at p50/p95/p99 or the mean, or a "
             "rate (events among trials)"),
    ("base / llmc", "the baseline's and llmclient's value of it (ms), or events/trials"),
    ("ratio", "base / llmc: 2.00x means half the time"),
    ("95% CI", "the ratio's 95% bootstrap interval, or the rate difference's (llmc - base, in "
               "percentage points, Newcombe)"),
    ("verdict", "faster/slower (better/worse for a rate) only when the whole interval is on one "
                "side of no change"),
    ("requests", "requests sent by the baseline / by llmclient (failures included)"),
    ("failures b/c", "the baseline's / llmclient's failed requests, by status or kind"),
)


def render_table(doc: Mapping[str, Any]) -> str:
    """The savings table: one line per row (its own statistic, the ratio with its 95% interval
    and the verdict), then per-variant lines for row-less scenarios, the notes and what each
    column means."""
    head = (f"{'row':<52} {'stat':<8} {'base':>8} {'llmc':>8} {'ratio':>8} {'95% CI':<14} "
            f"{'verdict':<25} {'requests':>9} {'failures b/c'}")
    lines = [head, "-" * len(head)]
    for scen in doc.get("scenarios", []):
        if scen.get("skipped"):
            lines.append(f"{scen['name']:<52} not available: {scen['skipped']}")
            continue
        for row in scen["rows"]:
            s = scen["summaries"]
            base, cand = _sides(row)
            shown_ratio = None if row.get("verdict") == TOO_FEW else row.get("ratio")
            lines.append(
                f"{row['label'][:52]:<52} {_stat_name(row):<8} {base:>8} {cand:>8} "
                f"{_x(shown_ratio):>8} {_ci(row):<14} {_verdict_cell(row)[:25]:<25} "
                f"{row.get('requests_baseline', 0):>4}/{row.get('requests_candidate', 0):<4} "
                f"{_failures(s.get(row['baseline'], {}))}/{_failures(s.get(row['candidate'], {}))}"
                + (f"  ({row['context']})" if row.get("context") else ""))
        if not scen["rows"]:
            for name, s in scen["summaries"].items():
                lat = s["latency_ms"]
                lines.append(
                    f"{(scen['name'] + ': ' + name)[:52]:<52} e2e     p50 {_ms(lat.get('p50'))} "
                    f"p90 {_ms(lat.get('p90'))} p99 {_ms(lat.get('p99'))} "
                    f"p99.9 {_ms(lat.get('p999'))} ms, ttft p50 {_ms(s['ttft_ms'].get('p50'))}, "
                    f"n={s['n']} failures {_failures(s)}"
                    + (f", goodput {s['goodput_rps']:.1f}/s" if "goodput_rps" in s else ""))
        knee = scen.get("series", {}).get("knee_rate")
        if scen["name"] == "sweep":
            lines.append(f"{'':<52} knee at {knee} req/s" if knee else f"{'':<52} no knee found")
    for left in doc.get("full_only", []):
        lines.append(f"{left['name']:<52} in --full only: {left.get('adds') or left.get('description', '')}")
    notes = [f"  {scen['name']}: {note}" for scen in doc.get("scenarios", [])
             for note in scen.get("notes", [])]
    if notes:
        lines += ["", "notes:", *notes]
    lines += ["", "columns:", *(f"  {name}: {meaning}" for name, meaning in TABLE_LEGEND)]
    return "\n".join(lines)


# ---- SVG --------------------------------------------------------------------------------------
def _esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


class _Axes:
    """A plot area mapping data to pixels; log-x optional (latency CDFs span decades)."""

    def __init__(self, xs: Iterable[float], ys: Iterable[float], width: int = 560,
                 height: int = 260, log_x: bool = False, y_min: float | None = None) -> None:
        xs, ys = list(xs), list(ys)
        self.w, self.h, self.log_x = width, height, log_x and min(xs, default=1) > 0
        self.left, self.right, self.top, self.bottom = 60, 20, 20, 40
        self.x0, self.x1 = min(xs, default=0.0), max(xs, default=1.0)
        self.y0 = min(ys, default=0.0) if y_min is None else y_min
        self.y1 = max(ys, default=1.0)
        if self.x1 <= self.x0:
            self.x1 = self.x0 + 1.0
        if self.y1 <= self.y0:
            self.y1 = self.y0 + 1.0

    def _fx(self, x: float) -> float:
        if self.log_x:
            x, lo, hi = math.log10(max(x, 1e-9)), math.log10(self.x0), math.log10(self.x1)
        else:
            lo, hi = self.x0, self.x1
        return self.left + (x - lo) / ((hi - lo) or 1.0) * (self.w - self.left - self.right)

    def _fy(self, y: float) -> float:
        span = self.h - self.top - self.bottom
        return self.top + span - (y - self.y0) / (self.y1 - self.y0) * span

    def point(self, x: float, y: float) -> tuple[float, float]:
        return self._fx(x), self._fy(y)

    def frame(self, x_label: str, y_label: str) -> str:
        parts = [f'<rect x="{self.left}" y="{self.top}" width="{self.w - self.left - self.right}"'
                 f' height="{self.h - self.top - self.bottom}" fill="none" stroke="#999"/>']
        for i in range(5):
            fx = i / 4
            if self.log_x:
                xv = 10 ** (math.log10(self.x0) + fx * (math.log10(self.x1) - math.log10(self.x0)))
            else:
                xv = self.x0 + fx * (self.x1 - self.x0)
            yv = self.y0 + fx * (self.y1 - self.y0)
            px, py = self._fx(xv), self._fy(yv)
            parts.append(f'<text x="{px:.1f}" y="{self.h - self.bottom + 14}" font-size="10" '
                         f'text-anchor="middle">{_num(xv)}</text>')
            parts.append(f'<text x="{self.left - 4}" y="{py + 3:.1f}" font-size="10" '
                         f'text-anchor="end">{_num(yv)}</text>')
        parts.append(f'<text x="{self.w / 2:.0f}" y="{self.h - 6}" font-size="11" '
                     f'text-anchor="middle">{_esc(x_label)}</text>')
        parts.append(f'<text x="12" y="{self.h / 2:.0f}" font-size="11" text-anchor="middle" '
                     f'transform="rotate(-90 12 {self.h / 2:.0f})">{_esc(y_label)}</text>')
        return "".join(parts)


def _num(v: float) -> str:
    if abs(v) >= 1e9:
        return f"{v / 1e9:.1f}G"
    if abs(v) >= 1e6:
        return f"{v / 1e6:.1f}M"
    if abs(v) >= 100:
        return f"{v:.0f}"
    return f"{v:.2g}" if abs(v) < 1 else f"{v:.1f}"


def _svg(body: str, width: int, height: int, title: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'role="img" aria-label="{_esc(title)}"><title>{_esc(title)}</title>{body}</svg>')


def _legend(names: Sequence[str], x: int, y: int) -> str:
    return "".join(
        f'<rect x="{x}" y="{y + i * 14}" width="10" height="10" fill="{_COLOURS[i % 10]}"/>'
        f'<text x="{x + 14}" y="{y + i * 14 + 9}" font-size="10">{_esc(n)}</text>'
        for i, n in enumerate(names))


def svg_lines(series: Mapping[str, Sequence[tuple[float, float]]], x_label: str, y_label: str,
              title: str, log_x: bool = False, marker_x: float | None = None,
              step: bool = False) -> str:
    xs = [p[0] for pts in series.values() for p in pts]
    ys = [p[1] for pts in series.values() for p in pts]
    if not xs:
        return ""
    ax = _Axes(xs, ys, log_x=log_x, y_min=0.0)
    body = [ax.frame(x_label, y_label)]
    for i, (name, pts) in enumerate(series.items()):
        coords = []
        prev_y: float | None = None
        for x, y in pts:
            px, py = ax.point(x, y)
            if step and prev_y is not None:
                coords.append(f"{px:.1f},{prev_y:.1f}")
            coords.append(f"{px:.1f},{py:.1f}")
            prev_y = py
        body.append(f'<polyline fill="none" stroke="{_COLOURS[i % 10]}" stroke-width="2" '
                    f'points="{" ".join(coords)}"><title>{_esc(name)}</title></polyline>')
    if marker_x is not None:
        px, _ = ax.point(marker_x, ax.y0)
        body.append(f'<line x1="{px:.1f}" x2="{px:.1f}" y1="{ax.top}" y2="{ax.h - ax.bottom}" '
                    f'stroke="#000" stroke-dasharray="4 3"/><text x="{px + 4:.1f}" '
                    f'y="{ax.top + 12}" font-size="11">knee {_num(marker_x)}</text>')
    body.append(_legend(list(series), ax.left + 8, ax.top + 6))
    return _svg("".join(body), ax.w, ax.h, title)


def svg_hbars(bars: Sequence[tuple[str, Mapping[str, float]]], unit: str, title: str,
              stacked: bool = True, reference: float | None = None) -> str:
    """Horizontal bars; with several parts per bar they stack (latency breakdown). A
    ``reference`` value gets a dashed line (1.0x on the savings chart: no change)."""
    if not bars:
        return ""
    parts_order = list(dict.fromkeys(p for _, parts in bars for p in parts))
    total = max((sum(p.values()) if stacked else max(p.values(), default=0.0))
                for _, p in bars) or 1.0
    label_w, width, bar_h = 260, 760, 18
    scale = (width - label_w - 70) / total
    height = len(bars) * (bar_h + 6) + 30 + 14 * len(parts_order)
    body = []
    for i, (label, parts) in enumerate(bars):
        y = 10 + i * (bar_h + 6)
        body.append(f'<text x="{label_w - 6}" y="{y + 13}" font-size="11" '
                    f'text-anchor="end">{_esc(label[:44])}</text>')
        x = float(label_w)
        for name in parts_order:
            value = parts.get(name)
            if value is None or value <= 0:
                continue
            w = value * scale
            colour = _COLOURS[parts_order.index(name) % 10]
            body.append(f'<rect x="{x:.1f}" y="{y}" width="{max(w, 0.5):.1f}" height="{bar_h}" '
                        f'fill="{colour}"><title>{_esc(name)}: {value:.1f} {unit}</title></rect>')
            if stacked:
                x += w
        shown = sum(parts.values()) if stacked else max(parts.values(), default=0.0)
        body.append(f'<text x="{label_w + shown * scale + 4:.1f}" y="{y + 13}" '
                    f'font-size="10">{_num(shown)} {_esc(unit)}</text>')
    if reference is not None and reference <= total:
        rx = label_w + reference * scale
        body.append(f'<line x1="{rx:.1f}" x2="{rx:.1f}" y1="4" y2="{10 + len(bars) * (bar_h + 6)}"'
                    f' stroke="#000" stroke-dasharray="3 3"><title>{_num(reference)} {_esc(unit)}'
                    f'</title></line>')
    if len(parts_order) > 1 or stacked:
        body.append(_legend(parts_order, label_w, 10 + len(bars) * (bar_h + 6) + 4))
    return _svg("".join(body), width, height, title)


def svg_log_hbars(bars: Sequence[tuple[str, float]], unit: str, title: str,
                  reference: float = 1.0) -> str:
    """Horizontal bars on a log scale from ``reference`` (1.0x: no change): a 1,000x row and a
    1.3x row both stay readable. Bars below the reference go left of its line."""
    if not bars:
        return ""
    values = [v for _, v in bars if v and v > 0]
    lo = min([reference, *values]) / 1.25
    hi = max([reference, *values]) * 1.25
    label_w, width, bar_h = 260, 760, 18
    span = math.log10(hi) - math.log10(lo) or 1.0
    scale = (width - label_w - 70) / span

    def fx(v: float) -> float:
        return label_w + (math.log10(v) - math.log10(lo)) * scale

    ref_x = fx(reference)
    body = []
    for i, (label, value) in enumerate(bars):
        y = 10 + i * (bar_h + 6)
        body.append(f'<text x="{label_w - 6}" y="{y + 13}" font-size="11" '
                    f'text-anchor="end">{_esc(label[:44])}</text>')
        if not value or value <= 0:
            continue
        x0, x1 = sorted((ref_x, fx(value)))
        colour = _COLOURS[1] if value >= reference else _COLOURS[0]
        body.append(f'<rect x="{x0:.1f}" y="{y}" width="{max(x1 - x0, 0.5):.1f}" height="{bar_h}" '
                    f'fill="{colour}"><title>{_esc(label)}: {_num(value)} {unit}</title></rect>')
        body.append(f'<text x="{max(x1, ref_x) + 4:.1f}" y="{y + 13}" font-size="10">'
                    f'{_num(value)}{_esc(unit)}</text>')
    bottom = 10 + len(bars) * (bar_h + 6)
    body.append(f'<line x1="{ref_x:.1f}" x2="{ref_x:.1f}" y1="4" y2="{bottom}" stroke="#000" '
                f'stroke-dasharray="3 3"><title>{_num(reference)}{_esc(unit)}: no change</title></line>')
    decade = 10 ** math.floor(math.log10(lo))
    while decade <= hi:
        if decade >= lo:
            x = fx(decade)
            body.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{bottom}" y2="{bottom + 4}" stroke="#888"/>'
                        f'<text x="{x:.1f}" y="{bottom + 15}" font-size="9" text-anchor="middle">'
                        f'{_num(decade)}{_esc(unit)}</text>')
        decade *= 10
    return _svg("".join(body), width, bottom + 24, title)


HEADLINE_MAX_LINES = 6
# Wins named per effort line (the rest: "and N more", in the table and the chart).
HEADLINE_WINS = 3
# Ties named on the "did not pay" line (the rest: "and N more"); every loss is named, with why.
HEADLINE_FLAT = 8
HEADLINE_LEADS = {"default": "What the defaults save (nothing to do)",
                  "option": "With one option", "app": "With an app change"}


def _dur(ms: float | None) -> str:
    """A duration as a person says it: 0.3 ms, 350 ms, 1.9 s."""
    if ms is None:
        return "-"
    if ms >= 1000:
        return f"{ms / 1000:.1f} s"
    return f"{ms:.0f} ms" if ms >= 10 else f"{ms:.1f} ms"


def _xr(value: float | None) -> str:
    """A ratio with the digits it deserves: 1.3x, 12x, 1,100x."""
    if value is None:
        return "-"
    if value >= 100:
        return f"{value:,.0f}x"
    return f"{value:.1f}x" if value >= 10 else _x(value)


def _rows(doc: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [r for scen in doc.get("scenarios", []) if not scen.get("skipped")
            for r in scen.get("rows", [])]


def _trust_line(doc: Mapping[str, Any]) -> str:
    net = doc.get("network", {})
    target = net.get("target", {})
    parts = []
    rtt = net.get("rtt_ms")
    if isinstance(rtt, Mapping) and rtt.get("median") is not None:
        parts.append(f"RTT {rtt['median']:.0f} ms" + (f" (target {target['rtt_ms']:g})"
                                                       if target.get("rtt_ms") is not None else ""))
    for way in ("down", "up"):
        got = net.get(f"{way}_mbit")
        if got is not None:
            want = target.get(f"{way}_mbit")
            parts.append(f"{way} {got:.1f}" + (f"/{want:g}" if want else "") + " Mbit/s")
    lag = doc.get("harness_overhead", {}).get("lag_p99_ms")
    if lag is not None:
        parts.append(f"harness send lag p99 {lag:.1f} ms")
    scenarios = doc.get("scenarios", [])
    ran = sum(1 for s in scenarios if not s.get("skipped"))
    parts.append(f"{ran}/{len(scenarios)} scenarios ran")
    machine = doc.get("machine", {})
    if machine.get("busy") is not None:
        others = machine.get("others_cores")
        parts.append(f"machine {machine['busy']:.0%} busy" + (
            f" (others' work: {others:.1f} of {machine.get('cores')} cores)" if others is not None else ""))
    where = net.get("profile", "no")
    return f"How far to trust this run ({where} network): " + ", ".join(parts) + "."


def chart_rows(doc: Mapping[str, Any]) -> dict[str, list[Mapping[str, Any]]]:
    """Every claim (each technique once), grouped by what a user must do."""
    return effort_groups(claims(doc))


def win_text(claim: Mapping[str, Any]) -> str:
    """One win in user terms: "image preparation (12 MP photo): 1.9 s -> 470 ms p50 latency,
    4.05x (95% CI 3.93-4.15x) faster"; a rate: "... calls refused: 48% -> 1% of calls (...)
    better"."""
    name = claim["claim"]
    if claim.get("kind") == "rate":
        return (f"{name}: {claim['event']} {claim['baseline_events']}/{claim['baseline_trials']} "
                f"-> {claim['candidate_events']}/{claim['candidate_trials']} "
                f"({short_interval(claim)}) {claim['verdict']}")
    what = "time to first token" if claim.get("metric") == "ttft_ms" else "latency"
    return (f"{name}: {_dur(claim.get('baseline_stat'))} -> {_dur(claim.get('candidate_stat'))} "
            f"{claim['statistic']} {what}, {interval_text(claim)} {claim['verdict']}")


def _did_not_pay(flat: Sequence[Mapping[str, Any]], lost: Sequence[Mapping[str, Any]],
                 network: str) -> str:
    parts = []
    if flat:
        more = len(flat) - HEADLINE_FLAT
        parts.append("no measurable difference, the 95% interval includes 1.0x (what they save "
                     "is within this network's noise): "
                     + ", ".join(f"{c['claim']} {short_interval(c)}" for c in flat[:HEADLINE_FLAT])
                     + (f" and {more} more in the table" if more > 0 else ""))
    if lost:
        parts.append(("slower: " if all(c.get("kind") != "rate" for c in lost) else "worse: ")
                     + ", ".join(f"{c['claim']} {interval_text(c)}"
                                 + (f" ({c['context']})" if c.get("context") else "")
                                 for c in lost))
    return f"Did not pay on the {network} network: " + "; ".join(parts) + "."


def _full_adds(undecided: Sequence[Mapping[str, Any]], left: Sequence[Mapping[str, Any]]) -> str:
    parts = []
    if undecided:
        parts.append("Needs --full (too few samples in this pass for the statistic it targets): "
                     + ", ".join(f"{c['claim']} ({c['statistic']}, "
                                 f"{min(c.get('n_baseline', 0), c.get('n_candidate', 0))} of "
                                 f"{c.get('min_samples')})" for c in undecided))
    if left:
        what = ", ".join(f"{s['name']} ({s.get('adds') or s.get('description', '')})"
                         for s in left)
        parts.append(("--full also runs " if undecided else "--full adds ") + what
                     + ": not in the quick pass, which cannot decide them in its time; and the "
                       "p95/p99 rows of the scenarios it ran")
    return "; ".join(parts) + "."


def headline(doc: Mapping[str, Any]) -> list[str]:
    """At most six lines for a person, from the claims (the rows every section reads): what
    llmclient's defaults save, then what one option and an app change win, each its biggest
    measured wins first; one line of what did not pay here and why (the interval includes no
    change, or it was slower); one of what ``--full`` adds (claims this pass could not
    estimate, scenarios left out of the quick pass); one on how far to trust the run."""
    found = claims(doc)
    network = doc.get("network", {}).get("profile", "this")
    out: list[str] = []
    for effort, group in effort_groups([c for c in found if c["outcome"] == WIN]).items():
        ranked = sorted(group, key=_strength, reverse=True)
        shown = "; ".join(win_text(c) for c in ranked[:HEADLINE_WINS])
        more = len(ranked) - HEADLINE_WINS
        out.append(f"{HEADLINE_LEADS.get(effort, effort)} — {shown}"
                   + (f"; and {more} more in the table." if more > 0 else "."))
    if not out:
        out.append(f"No technique was measurably better than its baseline on the {network} "
                   "network in this run.")
    flat = [c for c in found if c["outcome"] == TIE]
    lost = [c for c in found if c["outcome"] == LOSS]
    if flat or lost:
        out.append(_did_not_pay(flat, lost, network))
    # UNDECIDED also holds "not measured" (a side without a success: the errors section says
    # why); only a statistic this pass has too few samples for is something --full adds
    undecided = [c for c in found if c.get("verdict") == TOO_FEW]
    left = list(doc.get("full_only", []))
    if undecided or left:
        out.append(_full_adds(undecided, left))
    out.append(_trust_line(doc))
    return out[:HEADLINE_MAX_LINES]


def _strength(claim: Mapping[str, Any]) -> float:
    """How big a win surely is, to rank wins of both kinds on one line: a ratio's lower 95%
    bound; for a rate, the same worst case in its terms: how many times more often the good
    event happens at least (llmclient's lower Wilson bound over the baseline's upper one), or
    the bad one less often."""
    if claim.get("kind") == "rate":
        b, c = claim.get("baseline_ci") or (0.0, 1.0), claim.get("candidate_ci") or (0.0, 1.0)
        good, bad = (c[0], b[1]) if claim.get("higher_is_better") else (b[0], c[1])
        return good / max(bad, 1e-3)
    return float(claim.get("ci_low") or claim.get("ratio") or 0.0)


# The field guide's four places a request's time goes, from client timings and Server-Timing.
_SPLIT = (("network", ("connect", "tls")), ("serialization", ("server.serialize", "image_prep")),
          ("queue", ("client_queue", "server.queue")),
          ("inference", ("server.prefill", "server.decode", "server.image")))


def latency_split(summary: Mapping[str, Any]) -> dict[str, float] | None:
    """p50 latency as network / serialization / queue / inference (ms): the named parts'
    medians; what they leave of the p50 (request and answer on the wire) counts as network."""
    parts = summary.get("breakdown_p50_ms", {})
    total = summary.get("latency_ms", {}).get("p50")
    if not parts or total is None:
        return None
    out = {name: sum(parts[k]["p50"] for k in keys if k in parts) for name, keys in _SPLIT}
    out["network"] += max(total - sum(out.values()), 0.0)
    return out


def waterfall_segments(rec: Mapping[str, Any]) -> list[tuple[str, float, float]]:
    """(phase, start ms, end ms) of one request: client queue, connect, TLS, send, server queue,
    prefill, decode (server work placed mid-way between request sent and first byte, the rest of
    that wait being the two one-way trips), last byte."""
    bd, extra = rec.get("breakdown", {}), rec.get("extra", {})
    total = float(rec.get("latency_ms") or 0.0)
    segs: list[tuple[str, float, float]] = []
    t = 0.0
    for name, key in (("client queue", "client_queue"), ("connect", "connect"), ("TLS", "tls")):
        d = bd.get(key)
        if d:
            segs.append((name, t, t + d))
            t += d
    sent = extra.get("request_sent_ms")
    first = extra.get("first_byte_ms")
    if sent is not None and sent > t:
        segs.append(("send", t, sent))
        t = sent
    server = [(n, bd[k]) for n, k in (("server queue", "server.queue"), ("prefill", "server.prefill"),
                                      ("decode", "server.decode")) if bd.get(k)]
    wait_end = first if first is not None and first >= t else total
    busy = sum(d for _, d in server)
    s = t + max((wait_end - t - busy) / 2.0, 0.0)
    for name, d in server:
        segs.append((name, s, s + d))
        s += d
    if first is not None and first < total:
        segs.append(("last byte", max(first, s), total))
    return segs


def _waterfall_section(doc: Mapping[str, Any], k: int = 5) -> str:
    everything = [(scen["name"], rec) for scen in doc.get("scenarios", [])
                  for recs in scen.get("records", {}).values() for rec in recs
                  if rec.get("error_kind") is None and rec.get("breakdown")]
    everything.sort(key=lambda item: item[1].get("latency_ms", 0.0), reverse=True)
    charts = []
    phases = ["client queue", "connect", "TLS", "send", "server queue", "prefill", "decode",
              "last byte"]
    for name, rec in everything[:k]:
        segs = waterfall_segments(rec)
        total = max([rec.get("latency_ms") or 0.0, *(e for _, _, e in segs)]) or 1.0
        label_w, width = 150, 760
        scale = (width - label_w - 60) / total
        body = []
        for i, (phase, a, b) in enumerate(segs):
            y = 8 + i * 16
            colour = _COLOURS[phases.index(phase) % 10] if phase in phases else _COLOURS[6]
            body.append(f'<text x="{label_w - 6}" y="{y + 11}" font-size="10" text-anchor="end">'
                        f'{_esc(phase)}</text><rect x="{label_w + a * scale:.1f}" y="{y}" '
                        f'width="{max((b - a) * scale, 0.5):.1f}" height="12" fill="{colour}">'
                        f'<title>{_esc(phase)}: {a:.1f}-{b:.1f} ms</title></rect>'
                        f'<text x="{label_w + b * scale + 3:.1f}" y="{y + 10}" font-size="9">'
                        f'{b - a:.1f} ms</text>')
        title = f"{name}/{rec.get('variant')} trace {rec.get('trace_id')}: {_ms(rec.get('latency_ms'))} ms"
        charts.append(f"<h3 class='note'>{_esc(title)}</h3>"
                      + _svg("".join(body), width, 16 + 16 * len(segs), title))
    return (f'<section id="waterfall"><h2>Where the slowest requests spent their time</h2>'
            f'{"".join(charts)}<p class="note">Client phases from llmclient\'s timings, server phases '
            f'from Server-Timing (placed mid-way between request sent and first byte; the rest of '
            f'that wait is the trip there and back). Search the server log or your tracing backend '
            f'for the trace id.</p></section>') if charts else ""


def _headline_section(doc: Mapping[str, Any]) -> str:
    lines = headline(doc)
    if not lines:
        return ""
    items = "".join(f"<li>{_esc(line)}</li>" for line in lines)
    return f'<section id="headline"><h2>In short</h2><ul class="headline">{items}</ul></section>'


# ---- HTML ------------------------------------------------------------------------------------
# The page takes the window's width (charts scale with it, through their viewBox); tables are
# as wide as the page, and a ratio or a verdict stays on one line (nowrap).
_CSS = """body{font-family:system-ui,sans-serif;margin:24px;color:#222}
table{border-collapse:collapse;font-size:13px;margin:8px 0}td,th{border:1px solid #ddd;
padding:3px 8px;text-align:right}th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}
table.savings{width:100%}table.savings td.nowrap{white-space:nowrap}
table.savings td.context{text-align:left;font-size:12px;color:#444}
svg.chart{width:100%;height:auto;display:block}dl.columns{font-size:13px;color:#444}
dl.columns dt{font-weight:bold;display:inline}dl.columns dd{display:inline;margin:0 16px 0 4px}
h2{margin-top:32px;border-bottom:1px solid #ccc}.note{color:#555;font-size:13px}
.advice li{margin:4px 0}section{margin-bottom:18px}code{background:#f5f5f5;padding:1px 4px}"""


def _table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    head = "".join(f"<th>{_esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{_esc(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


_OUTCOME_COLOUR = {WIN: _COLOURS[1], LOSS: _COLOURS[0], TIE: "#888", UNDECIDED: "#888"}


def _ticks(lo: float, hi: float) -> list[float]:
    """Log-scale ticks (1-2-5 per decade, only decades over a span of more than two) from the
    largest at or below ``lo`` to the smallest at or above ``hi``: the axis ends on a labelled
    tick at each side and covers both; at least two ticks."""
    hi = max(hi, lo * 1.0001)
    steps = (1.0, 2.0, 5.0) if math.log10(hi) - math.log10(lo) <= 2 else (1.0,)
    decade = 10.0 ** math.floor(math.log10(lo))  # at or below lo: the first candidate is
    seq: list[float] = []
    while True:
        for step in steps:
            seq.append(step * decade)
            if seq[-1] >= hi * (1 - 1e-9):
                first = max(t for t in seq if t <= lo * (1 + 1e-9))
                return [t for t in seq if t >= first]
        decade *= 10.0


def _label_width(texts: Iterable[str], floor: int = 200) -> int:
    """Pixels for right-aligned 11px labels: about 6.2 px a character."""
    return max(floor, int(max((len(t) for t in texts), default=0) * 6.2) + 12)


def _claim_label(row: Mapping[str, Any]) -> str:
    if row.get("kind") == "rate":
        return f"{row['claim']} (rate)"
    stat = f"{row.get('statistic', 'p50')} {'TTFT' if row.get('metric') == 'ttft_ms' else ''}"
    return f"{row['claim']} ({stat.strip()})"


def _chart_svg(body: str, width: int, height: int, title: str, plot: tuple[float, float],
               kind: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="chart {kind}" viewBox="0 0 {width} '
            f'{height}" width="{width}" height="{height}" preserveAspectRatio="xMinYMin meet" '
            f'data-plot-left="{plot[0]:.1f}" data-plot-right="{plot[1]:.1f}" role="img" '
            f'aria-label="{_esc(title)}"><title>{_esc(title)}</title>{body}</svg>')


_LINE_H, _PLOT_W = 22, 380


def _words(r: Mapping[str, Any]) -> str:
    """What the words column of a chart says of a claim: its figures and its verdict (a rate's
    event is in its name and the table)."""
    out = row_outcome(r)
    if r.get("kind") == "rate" and out != UNDECIDED and r.get("ci_low") is not None:
        text = (f"{r['baseline_events']}/{r['baseline_trials']} -> "
                f"{r['candidate_events']}/{r['candidate_trials']} ({short_interval(r)})")
    else:
        text = interval_text(r)
    return text + ("" if out == UNDECIDED else f" {r.get('verdict')}")


def chart_layout(rows: Iterable[Mapping[str, Any]]) -> tuple[int, int]:
    """(label column, words column) widths in pixels shared by every chart of a report, so that
    all of them are drawn at one scale (each fills the page's width through its viewBox)."""
    rows = list(rows)
    return (_label_width(_claim_label(r) for r in rows),
            _label_width((_words(r) for r in rows), floor=240))


def _group_heading(effort: str, y: int) -> str:
    return (f'<text x="4" y="{y + 14}" font-size="12" font-weight="bold">'
            f'What you do: {_esc(EFFORTS.get(effort, effort))}</text>')


def _claim_open(r: Mapping[str, Any], left: int, y: int) -> str:
    return (f'<g class="claim" data-claim="{_esc(r["claim"])}" data-outcome="{row_outcome(r)}">'
            f'<text x="{left - 8}" y="{y + 13}" font-size="11" text-anchor="end">'
            f'{_esc(_claim_label(r))}</text>')


def _claim_close(r: Mapping[str, Any], right: int, y: int) -> str:
    grey = row_outcome(r) == UNDECIDED
    return (f'<text x="{right + 10}" y="{y + 13}" font-size="11" fill="{"#555" if grey else "#222"}">'
            f'{_esc(_words(r))}</text></g>')


def _bar(x0: float, x1: float, y: float, h: float, fill: str, low: float, high: float,
         tip: str, opacity: float) -> str:
    return (f'<rect class="interval" data-low="{low:g}" data-high="{high:g}" x="{x0:.1f}" '
            f'y="{y}" width="{max(x1 - x0, 1.0):.1f}" height="{h}" fill="{fill}" '
            f'opacity="{opacity}"><title>{_esc(tip)}</title></rect>')


def _axis(ticks: Sequence[float], fx: Any, left: int, right: int, y: int, label: Any) -> str:
    parts = [f'<line x1="{left}" x2="{right}" y1="{y + 2}" y2="{y + 2}" stroke="#888"/>']
    for tick in ticks:
        x = fx(tick)
        parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{y + 2}" y2="{y + 6}" stroke="#888"/>'
                     f'<text class="tick" data-value="{tick:g}" x="{x:.1f}" y="{y + 17}" '
                     f'font-size="9" text-anchor="middle">{label(tick)}</text>')
    return "".join(parts)


def svg_interval_chart(groups: Mapping[str, Sequence[Mapping[str, Any]]], title: str,
                       layout: tuple[int, int] | None = None) -> str:
    """One line per ratio claim: its ratio as a dot and its 95% interval as a bar on a log
    scale around 1.0x (no change), under a heading per effort group. Three columns that never
    overlap: the claim's name (right-aligned), the plot (its axis from a tick at or below the
    smallest value to one at or above the largest, so every dot and bar is on it), and the
    ratio in words; a claim the run could not judge gets its reason in the words column. The
    1.0x line is drawn only inside the plot column, row by row, so no text crosses it."""
    rows = [r for rs in groups.values() for r in rs]
    if not rows:
        return ""
    values = [v for r in rows if r.get("ci_low") is not None
              for v in (r.get("ci_low"), r.get("ci_high"), r.get("ratio"))
              if isinstance(v, int | float) and v > 0]
    ticks = _ticks(min([1.0, *values]), max([1.0, *values]))
    lo, hi = ticks[0], ticks[-1]
    label_w, words_w = layout or chart_layout(rows)
    left, right = label_w, label_w + _PLOT_W
    span = math.log10(hi) - math.log10(lo)

    def fx(v: float) -> float:
        return left + (math.log10(min(max(v, lo), hi)) - math.log10(lo)) / span * _PLOT_W

    body, y = [], 8
    ref = fx(1.0)
    for effort, grouped in groups.items():
        body.append(_group_heading(effort, y))
        y += _LINE_H
        for r in grouped:
            colour = _OUTCOME_COLOUR[row_outcome(r)]
            body.append(_claim_open(r, left, y))
            body.append(f'<line class="reference" x1="{ref:.1f}" x2="{ref:.1f}" y1="{y}" '
                        f'y2="{y + _LINE_H}" stroke="#000" stroke-dasharray="3 3"/>')
            if r.get("ci_low") is not None:
                body.append(_bar(fx(r["ci_low"]), fx(r["ci_high"]), y + 6, 10, colour, r["ci_low"],
                                 r["ci_high"], f"{r['label']}: {interval_text(r)}", 0.55))
                if r.get("ratio"):
                    body.append(f'<circle class="dot" data-value="{r["ratio"]:g}" '
                                f'cx="{fx(r["ratio"]):.1f}" cy="{y + 11}" r="4" fill="{colour}"/>')
            body.append(_claim_close(r, right, y))
            y += _LINE_H
    body.append(_axis(ticks, fx, left, right, y, lambda t: f"{_num(t)}x"))
    return _chart_svg("".join(body), right + 10 + words_w, y + 24, title, (left, right), "ratios")


def svg_rate_chart(groups: Mapping[str, Sequence[Mapping[str, Any]]], title: str,
                   layout: tuple[int, int] | None = None) -> str:
    """One line per rate claim on a 0-100% axis: the baseline's share (hollow dot, grey bar:
    its Wilson 95% interval) and llmclient's (filled dot, coloured bar), under a heading per
    effort group, the counts and the verdict in the words column."""
    rows = [r for rs in groups.values() for r in rs]
    if not rows:
        return ""
    label_w, words_w = layout or chart_layout(rows)
    left, right = label_w, label_w + _PLOT_W

    def fx(v: float) -> float:
        return left + min(max(v, 0.0), 1.0) * _PLOT_W

    body, y = [], 8
    for effort, grouped in groups.items():
        body.append(_group_heading(effort, y))
        y += _LINE_H
        for r in grouped:
            colour = _OUTCOME_COLOUR[row_outcome(r)]
            body.append(_claim_open(r, left, y))
            for side, dy, fill in (("baseline", 3, "#bbb"), ("candidate", 12, colour)):
                ci, share = r.get(f"{side}_ci"), r.get(f"{side}_rate")
                if ci is None or share is None:
                    continue
                tip = f"{side}: {r[f'{side}_events']}/{r[f'{side}_trials']} {r['event']}"
                body.append(_bar(fx(ci[0]), fx(ci[1]), y + dy, 6, fill, ci[0], ci[1], tip, 0.7))
                style = 'fill="white" stroke="#666"' if side == "baseline" else f'fill="{colour}"'
                body.append(f'<circle class="dot" data-value="{share:g}" cx="{fx(share):.1f}" '
                            f'cy="{y + dy + 3}" r="3.5" {style}/>')
            body.append(_claim_close(r, right, y))
            y += _LINE_H
    body.append(_axis((0.0, 0.25, 0.5, 0.75, 1.0), fx, left, right, y, lambda t: f"{t:.0%}"))
    return _chart_svg("".join(body), right + 10 + words_w, y + 24, title, (left, right), "rates")


_EFFORT_SHORT = {"default": "nothing", "option": "one option", "app": "app change"}
# The savings table's columns and what each means (the header's title, and the list below it).
SAVINGS_COLUMNS = (
    ("row", "what was compared: baseline -> llmclient"),
    ("claim", "the name the headline, the chart and the advice give this row"),
    ("what you do", "to get it: nothing (llmclient's defaults), one option, or an app change; "
                    "from the options of llmclient's side"),
    ("statistic", "what the row is judged on: e2e latency or time to first token (TTFT) at "
                  "p50/p95/p99 or their mean, or a rate (how often an event happened)"),
    ("baseline", "the baseline's value of the statistic (ms), or its events/trials"),
    ("llmclient", "llmclient's value of it (ms), or its events/trials"),
    ("ratio (95% CI)", "baseline / llmclient with its 95% bootstrap interval (2.00x: half the "
                       "time); for a rate, both counts and the difference's 95% interval in "
                       "percentage points (Newcombe)"),
    ("verdict", "faster/slower (better/worse) only when the whole interval lies on one side of "
                "no change; no measurable difference when it includes it; needs --full when "
                "this pass has too few samples"),
    ("requests b/c", "requests sent by the baseline / by llmclient, failures included"),
    ("also measured", "what the row needs to be read right (hit rate, tokens wasted, load)"),
)


def _ratio_cell(r: Mapping[str, Any]) -> str:
    """The table's ratio column, short enough to stay on one line: "2.82x (95% CI 2.49-3.57x)";
    for a rate "0% -> 100% (95% CI +66 to +100 pt)" (the counts are in the columns before)."""
    if r.get("kind") != "rate":
        return interval_text(r)
    if r.get("ci_low") is None:
        return "not measured"
    return (f"{r['baseline_rate']:.0%} -> {r['candidate_rate']:.0%} "
            f"(95% CI {r['ci_low'] * 100:+.0f} to {r['ci_high'] * 100:+.0f} pt)")


def _savings_table(doc: Mapping[str, Any]) -> str:
    head = "".join(f'<th title="{_esc(meaning)}">{_esc(name)}</th>'
                   for name, meaning in SAVINGS_COLUMNS)
    body = []
    for scen, r, name, _judging in claim_rows(doc):
        base, cand = _sides(r)
        statistic = _stat_name(r).replace("ttft", "TTFT")
        ratio_cell = "-" if r.get("verdict") == TOO_FEW else _ratio_cell(r)
        cells = [
            f"<td>{_esc(r['label'])}</td>", f"<td>{_esc(name)}</td>",
            f"<td>{_esc(_EFFORT_SHORT.get(r.get('effort') or 'default', ''))}</td>",
            f'<td class="nowrap">{_esc(statistic)}</td>', f"<td>{_esc(base)}</td>",
            f"<td>{_esc(cand)}</td>", f'<td class="nowrap ratio">{_esc(ratio_cell)}</td>',
            f'<td class="verdict">{_esc(_verdict_cell(r).replace(TOO_FEW, "needs --full"))}</td>',
            f'<td class="nowrap">{r.get("requests_baseline")}/{r.get("requests_candidate")}</td>',
            f'<td class="context">{_esc(r.get("context", ""))}</td>']
        body.append(f'<tr data-claim="{_esc(name)}" data-outcome="{row_outcome(r)}" '
                    f'data-scenario="{_esc(scen)}">{"".join(cells)}</tr>')
    skipped = [f"<li>{_esc(s['name'])}: not available: {_esc(s['skipped'])}</li>"
               for s in doc.get("scenarios", []) if s.get("skipped")]
    legend = "".join(f"<dt>{_esc(name)}</dt><dd>{_esc(meaning)}</dd>"
                     for name, meaning in SAVINGS_COLUMNS)
    return (f'<table class="savings"><tr>{head}</tr>{"".join(body)}</table>'
            + (f'<ul class="note">{"".join(skipped)}</ul>' if skipped else "")
            + f'<dl class="columns">{legend}</dl>')


def _savings_section(doc: Mapping[str, Any]) -> str:
    found = claims(doc)
    layout = chart_layout(found)
    ratios = effort_groups([c for c in found if c.get("kind") != "rate"])
    rates = effort_groups([c for c in found if c.get("kind") == "rate"])
    # one ratio chart per effort group, each on its own axis: a 1,000x cache hit on the axis of
    # a 1.2x connection saving would squeeze the latter to a point
    chart = "".join(svg_interval_chart({effort: rows}, f"what you do: {EFFORTS.get(effort, effort)}"
                                       " - ratio and 95% interval, log scale", layout)
                    for effort, rows in ratios.items())
    rate_chart = svg_rate_chart(rates, "techniques judged on a rate: each side's share with its "
                                       "95% interval (hollow: the baseline)", layout)
    left = [f"<li>{_esc(s['name'])}: {_esc(s.get('adds') or s.get('description', ''))}</li>"
            for s in doc.get("full_only", [])]
    return (f'<section id="savings"><h2>Savings per technique</h2>{chart}{rate_chart}'
            f'{_savings_table(doc)}'
            + (f'<p class="note">In --full only (not decidable in the quick pass):</p>'
               f'<ul class="note">{"".join(left)}</ul>' if left else "")
            + f'<p class="note">Ratio = baseline / llmclient on the row\'s statistic (p50 for '
            f'latency techniques, p95/p99 for the ones that work on the tail, the mean for a '
            f'mixture such as an app session); 2.00x means half. Baseline and llmclient ran '
            f'interleaved (A B A B); the 95% interval is a bootstrap over those pairs '
            f'({doc.get("bootstrap_iterations", BOOTSTRAP_ITERATIONS)} resamples). A rate counts '
            f'how often something happened (answers completed after a cut, calls refused): each '
            f'side with its Wilson 95% interval, the difference with Newcombe\'s, judged on at '
            f'least {MIN_TRIALS} trials a side. "No measurable difference" means the interval '
            f'includes no change; "needs --full" means this pass has too few samples to estimate '
            f'the statistic at all (a quantile needs {BEYOND_QUANTILE} samples beyond it).</p>'
            f'</section>')


def _cdf_section(doc: Mapping[str, Any]) -> str:
    out = []
    for scen in doc.get("scenarios", []):
        records = scen.get("records", {})
        for r in scen.get("rows", []):
            key = "ttft_ms" if r["metric"] == "ttft_ms" else "latency_ms"
            series = {}
            for variant in (r["baseline"], r["candidate"]):
                values = [rec[key] for rec in records.get(variant, [])
                          if rec.get(key) is not None and rec.get("error_kind") is None
                          and (rec.get("status") or 0) < 400]
                if values:
                    series[variant] = cdf(values)
            if series:
                out.append(svg_lines(series, f"{key} (log scale)", "fraction <= x",
                                     f"{r['label']}: CDF", log_x=True, step=True))
    return (f'<section id="cdfs"><h2>Latency CDFs, baseline vs llmclient</h2>{"".join(out)}'
            '</section>') if out else ""


def _breakdown_section(doc: Mapping[str, Any]) -> str:
    bars = []
    for scen in doc.get("scenarios", []):
        for variant, s in scen.get("summaries", {}).items():
            split = latency_split(s)
            if split is not None:
                bars.append((f"{scen['name']}: {variant}", split))
    chart = svg_hbars(bars, "ms", "where the p50 went: network, serialization, queue, inference")
    return (f'<section id="breakdown"><h2>Latency breakdown</h2>{chart}<p class="note">Per '
            'scenario and variant, the medians of: network = connect + TLS + what the named parts '
            'leave of the p50 (request and answer on the wire); serialization = the server\'s '
            'serialize time + client image preparation; queue = client queue + server queue; '
            'inference = prefill + decode (+ image decode). Client timings from llmclient, '
            'server ones from Server-Timing; variants without them (the official client) show '
            'only the server parts they got.</p></section>') if chart else ""


def _sweep_section(doc: Mapping[str, Any]) -> str:
    for scen in doc.get("scenarios", []):
        points = scen.get("series", {}).get("points")
        if not points:
            continue
        series = {q: [(p["rate"], p["latency_ms"][q]) for p in points if q in p["latency_ms"]]
                  for q in ("p50", "p99")}
        chart = svg_lines(series, "offered rate (req/s)", "latency ms",
                          "latency vs request rate", marker_x=scen["series"].get("knee_rate"))
        rows = [[p["rate"], p["n"], p["n_failed"], _ms(p["latency_ms"].get("p50")),
                 _ms(p["latency_ms"].get("p99"))] for p in points]
        return (f'<section id="sweep"><h2>Latency vs request rate '
                f'({_esc(scen["series"].get("profile", ""))})</h2>{chart}'
                f'{_table(["req/s", "n", "failed", "p50 ms", "p99 ms"], rows)}</section>')
    return ""


def _errors_section(doc: Mapping[str, Any]) -> str:
    bars, rows = [], []
    for scen in doc.get("scenarios", []):
        for variant, s in scen.get("summaries", {}).items():
            if not s.get("n_failed"):
                continue
            counts = {f"status {k}": float(v) for k, v in s["failures_by_status"].items()}
            counts.update({f"kind {k}": float(v) for k, v in s["failures_by_kind"].items()
                           if k != "http_error"})
            bars.append((f"{scen['name']}: {variant}", counts))
            rows.append([f"{scen['name']}: {variant}", s["n"], s["n_failed"],
                         json.dumps(s["failures_by_status"]), json.dumps(s["failures_by_kind"])])
    if not bars:
        return '<section id="errors"><h2>Errors</h2><p>No failed requests.</p></section>'
    return (f'<section id="errors"><h2>Error distribution</h2>'
            f'{svg_hbars(bars, "requests", "failures by status and kind")}'
            f'{_table(["variant", "n", "failed", "by status", "by kind"], rows)}</section>')


def _gpu_section(doc: Mapping[str, Any]) -> str:
    samples = doc.get("gpu_samples") or []
    if not any("gpu_memory_used_bytes" in s for s in samples):
        return ""
    mem = [(s["t_s"], s["gpu_memory_used_bytes"] / 2**30) for s in samples
           if "gpu_memory_used_bytes" in s]
    util = [(s["t_s"], s["gpu_utilization_percent"]) for s in samples
            if "gpu_utilization_percent" in s]
    charts = svg_lines({"GPU memory GiB": mem}, "seconds", "GiB", "GPU memory over time")
    if util:
        charts += svg_lines({"GPU utilisation %": util}, "seconds", "%", "GPU utilisation")
    return f'<section id="gpu"><h2>GPU over time</h2>{charts}</section>'


def _slowest_section(doc: Mapping[str, Any], k: int = 10) -> str:
    everything = [(scen["name"], rec) for scen in doc.get("scenarios", [])
                  for recs in scen.get("records", {}).values() for rec in recs]
    everything.sort(key=lambda item: item[1].get("latency_ms", 0.0), reverse=True)
    rows = [[name, rec["variant"], rec["trace_id"], _ms(rec["latency_ms"]), rec.get("status"),
             rec.get("error_kind") or ""] for name, rec in everything[:k]]
    return (f'<section id="slowest"><h2>Slowest requests (find them in the server log by trace '
            f'id)</h2>{_table(["scenario", "variant", "trace id", "ms", "status", "error"], rows)}'
            '</section>') if rows else ""


def _env_section(doc: Mapping[str, Any]) -> str:
    net = doc.get("network", {})
    rows = [[k, json.dumps(v) if isinstance(v, dict | list) else v] for k, v in net.items()]
    harness = doc.get("harness_overhead", {})
    rows += [[f"harness: {k}", v] for k, v in harness.items()]
    rows += [[k, doc.get(k)] for k in ("created", "server", "base_url", "quick", "host")
             if doc.get(k) is not None]
    return f'<section id="environment"><h2>Network and harness</h2>{_table(["", ""], rows)}</section>'


def _scenario_notes(doc: Mapping[str, Any]) -> str:
    items = []
    for scen in doc.get("scenarios", []):
        status = f"not available: {scen['skipped']}" if scen.get("skipped") else "; ".join(
            scen.get("notes", []))
        items.append(f"<li><b>{_esc(scen['name'])}</b>: {_esc(scen['description'])}. "
                     f"<span class='note'>{_esc(status)}</span></li>")
    return f'<section id="scenarios"><h2>Scenarios</h2><ul>{"".join(items)}</ul></section>'


def _slope_cell(slope: Mapping[str, Any] | None, unit: str) -> str:
    if not slope:
        return "n/a"
    err = slope.get("stderr")
    text = f"{slope['per_min']:+.4f} {unit}/min"
    if err is not None:
        text += f" ± {2 * err:.4f} (95%: {'within noise' if slope.get('within_noise') else 'a trend'})"
    return text


def _soak_section(doc: Mapping[str, Any]) -> str:
    """``python -m benchmarks soak``: RSS, fds and CPU per call over time, the fitted slopes
    after the warm-up, each window's counters, and (``--tracemalloc``) the sites that grew."""
    s = doc.get("soak")
    if not s:
        return ""
    samples = s.get("samples") or []
    rss = [(x["t_s"] / 60.0, x["rss_mb"]) for x in samples]
    fds = [(x["t_s"] / 60.0, x["fds"]) for x in samples]
    cpu = [(b["t_s"] / 60.0, (b["cpu_s"] - a["cpu_s"]) / (b["calls"] - a["calls"]) * 1e6)
           for a, b in itertools.pairwise(samples) if b["calls"] > a["calls"]]
    charts = svg_lines({"RSS MB": rss}, "minutes", "MB", "resident memory") if len(rss) > 1 else ""
    charts += svg_lines({"open fds": fds}, "minutes", "fds", "open file descriptors") if len(fds) > 1 else ""
    charts += svg_lines({"CPU µs per call": cpu}, "minutes", "µs", "client CPU per call") if len(cpu) > 1 else ""
    sl = s.get("slopes", {})
    slopes = [["RSS", _slope_cell(sl.get("rss_mb_per_min"), "MB")],
              ["open fds", _slope_cell(sl.get("fds_per_min"), "fds")],
              ["CPU per call", _slope_cell(sl.get("cpu_per_call_us_per_min"), "µs")]]
    if sl.get("cpu_per_call_us_per_min_given_load"):
        slopes.append(["CPU per call, the machine's load held fixed",
                       _slope_cell(sl.get("cpu_per_call_us_per_min_given_load"), "µs")])
    if sl.get("traced_mb_per_min"):
        slopes.append(["traced (tracemalloc)", _slope_cell(sl.get("traced_mb_per_min"), "MB")])
    if sl.get("malloc_used_mb_per_min"):
        slopes.append(["malloc: in use", _slope_cell(sl.get("malloc_used_mb_per_min"), "MB")])
        slopes.append(["malloc: free in its heaps", _slope_cell(sl.get("malloc_free_mb_per_min"), "MB")])
    rows = [[w["index"], f"{w['start_min']:.1f}-{w['end_min']:.1f}", w["calls"], w["streams"], w["error_total"],
             ", ".join(f"{k}: {v}" for k, v in sorted(w["errors"].items())), w["pool_waits"],
             _ms(w.get("pool_wait_ms_max")),
             "-" if w.get("cpu_per_call_us") is None else f"{w['cpu_per_call_us']:.0f}",
             "-" if w.get("rss_mb") is None else f"{w['rss_mb']:.1f}", w.get("fds_max")]
            for w in s.get("windows", [])]
    growth = [[f"{g['size_diff_kb']:.1f}", g["count_diff"], f"{g.get('kb_per_min', 0):.2f}", g["site"],
               g.get("llmclient_frame", ""), " <- ".join(g["traceback"][:4])]
              for g in (s.get("growth_tracebacks") or s.get("growth", []))]
    note = (f"{s.get('calls')} calls ({s.get('streams')} streams) over {s.get('minutes')} min, "
            f"{s.get('threads')} sync threads + {s.get('tasks')} async tasks, server restarted "
            f"{s.get('restarts')} times, GOAWAY every {s.get('goaway_every') or '-'} requests (nginx), "
            f"max_retries {s.get('max_retries')}; slopes after {sl.get('warmup_min', 0):.1f} min of warm-up"
            + ("; tracemalloc on (CPU figures not comparable with runs without it)" if s.get("tracemalloc") else ""))
    return (f'<section id="soak"><h2>Soak</h2><p class="note">{_esc(note)}</p>'
            f'{_table(["", "slope"], slopes)}{charts}'
            f'{_table(["window", "minutes", "calls", "streams", "errors", "by kind", "pool waits", "max wait ms", "CPU µs/call", "RSS MB", "max fds"], rows)}'
            + (f'<h3>Allocation sites that grew after the warm-up</h3>'
               f'{_table(["KiB", "blocks", "KiB/min", "site", "llmclient frame", "traceback"], growth)}' if growth else "")
            + "</section>")


def render_html(doc: Mapping[str, Any]) -> str:
    advice = "".join(f"<li>{_esc(a)}</li>" for a in doc.get("advice", []))
    sections = [
        _soak_section(doc),
        _headline_section(doc),
        _savings_section(doc),
        f'<section id="advice"><h2>Advice from these measurements</h2><ul class="advice">'
        f'{advice or "<li>No advice: nothing stood out.</li>"}</ul></section>',
        _cdf_section(doc), _breakdown_section(doc), _sweep_section(doc), _errors_section(doc),
        _gpu_section(doc), _env_section(doc), _scenario_notes(doc), _slowest_section(doc),
        _waterfall_section(doc),
    ]
    title = f"llmclient benchmark: {doc.get('network', {}).get('profile', '?')} network"
    return (f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{_esc(title)}"
            f"</title><style>{_CSS}</style></head><body><h1>{_esc(title)}</h1>"
            f"<p class='note'>{_esc(doc.get('created', ''))} · schema {_esc(doc.get('schema'))}"
            f"</p>{''.join(sections)}</body></html>")
