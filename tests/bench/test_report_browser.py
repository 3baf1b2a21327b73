"""The benchmark report as a person sees it: opened in headless Chromium, read back as the
rendered text (``innerText``: what CSS leaves visible) and the headline's position on screen.

Chromium comes from scripts/ensure-system-deps.sh (Debian's ``chromium``). The report has no
JavaScript of its own; the test appends one small script to a copy of it that writes what
the browser rendered into the page, and reads it back with ``--dump-dom``.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from benchmarks.harness.report import render_html

from ._results import quick_pass_doc

WINDOW = (1280, 900)

_PROBE = """<script>
const seen = {
  viewport: window.innerHeight,
  headline: Array.from(document.querySelectorAll('#headline li')).map(li => ({
    text: li.innerText, bottom: li.getBoundingClientRect().bottom})),
  firstSection: document.querySelector('section').id,
  savingsRows: Array.from(document.querySelectorAll('#savings tr')).map(tr => tr.innerText),
  chart: Array.from(document.querySelectorAll('#savings svg text')).map(t => t.textContent),
  page: document.body.innerText,
};
const out = document.createElement('pre');
out.id = 'seen';
out.textContent = JSON.stringify(seen);
document.body.appendChild(out);
</script>"""


def _browser() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.skip("chromium not installed (scripts/ensure-system-deps.sh installs it)")
    return found


def seen_in_browser(page: str, tmp_path: Path, probe: str = _PROBE) -> dict[str, Any]:
    path = tmp_path / "report.html"
    path.write_text(page.replace("</body>", probe + "</body>"))
    proc = subprocess.run(
        [_browser(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         f"--user-data-dir={tmp_path / 'profile'}", f"--window-size={WINDOW[0]},{WINDOW[1]}",
         "--dump-dom", path.as_uri()],
        capture_output=True, text=True, timeout=120, check=False)
    found = re.search(r'<pre id="seen">(.*?)</pre>', proc.stdout, re.S)
    assert found, f"chromium rendered nothing (rc {proc.returncode}): {proc.stderr[-2000:]}"
    return dict(json.loads(html.unescape(found.group(1))))


@pytest.fixture(scope="module")
def seen(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return seen_in_browser(render_html(quick_pass_doc()), tmp_path_factory.mktemp("browser"))


def test_headline_is_first_short_and_on_the_first_screen(seen: dict[str, Any]) -> None:
    assert seen["firstSection"] == "headline"
    lines = seen["headline"]
    assert 2 <= len(lines) <= 6
    assert all(line["bottom"] <= seen["viewport"] for line in lines), lines
    texts = [line["text"] for line in lines]
    # what the defaults save first: the biggest win in user terms, with its interval
    lead, wins = texts[0].split(" — ", 1)
    assert lead == "What the defaults save (nothing to do)"
    assert re.fullmatch(r"image preparation \(12 MP photo\): \d\.\d s -> \d+ ms p50 latency, "
                        r"[\d.]+x \(95% CI [\d.]+-[\d.]+x\) faster\.", wins), texts[0]
    # what did not pay, grouped, and why
    assert any(t.startswith("Did not pay on the wan network: no measurable difference, the "
                            "95% interval includes 1.0x") and "orjson + zstd" in t for t in texts)
    # what the pass could not measure, said as such
    assert "Needs --full (too few samples in this pass for the statistic it targets): hedged " \
           "requests (slow replicas) (p95, 8 of 40)." in texts
    # how far to trust the run: achieved network against its targets, harness lag
    assert texts[-1] == ("How far to trust this run (wan network): RTT 51 ms (target 50), "
                         "down 48.7/50 Mbit/s, up 19.6/20 Mbit/s, harness send lag p99 1.2 ms, "
                         "3/3 scenarios ran.")


def _interval(text: str) -> tuple[float, float]:
    found = re.search(r"95% CI ([\d.]+)-([\d.]+)x", text)
    assert found, text
    return float(found.group(1)), float(found.group(2))


def test_every_judged_row_shows_its_interval_and_its_verdict_agrees(seen: dict[str, Any]) -> None:
    rows = {r.split("\t")[0]: r for r in seen["savingsRows"][1:]}
    assert set(rows) == {"images 12MP: raw upload -> prepared",
                         "encoding 16 KB chat: openai -> llmclient",
                         "slow replicas: llmclient -> + hedge"}
    low, high = _interval(rows["images 12MP: raw upload -> prepared"])
    assert low > 1.0 and "faster" in rows["images 12MP: raw upload -> prepared"]
    low, high = _interval(rows["encoding 16 KB chat: openai -> llmclient"])
    assert low <= 1.0 <= high
    assert "no measurable difference" in rows["encoding 16 KB chat: openai -> llmclient"]


def test_a_row_the_quick_pass_cannot_measure_shows_no_ratio(seen: dict[str, Any]) -> None:
    row = next(r for r in seen["savingsRows"] if r.startswith("slow replicas"))
    assert "needs --full (p95 needs 40 samples a side, has 8)" in row
    assert not re.search(r"\d\.\d+x", row), row          # no bare 1.0x, no number at all
    line = next(t for t in seen["chart"] if t.startswith("hedged requests"))
    assert line == "hedged requests (slow replicas) (p95)"
    assert "needs --full (p95 needs 40 samples a side, has 8)" in seen["chart"]


def test_chart_shows_each_technique_once_grouped_by_what_a_user_does(seen: dict[str, Any]) -> None:
    chart = seen["chart"]
    groups = [t for t in chart if t.startswith("What you do: ")]
    assert groups == ["What you do: nothing (llmclient's defaults)", "What you do: one option"]
    labels = [t for t in chart if t.endswith("(p50)") or t.endswith("(p95)")]
    assert labels == ["image preparation (12 MP photo) (p50)",
                      "orjson + zstd request bodies (p50)", "hedged requests (slow replicas) (p95)"]
    # defaults first, then the option: the hedging line comes after the second heading
    assert chart.index("What you do: one option") < chart.index(labels[2])


# ---- the savings chart and table laid out: a report with every kind of row ----------------------
# What the browser measured, in each chart's own units (getBBox) and on the page (CSS pixels).
_LAYOUT = """<script>
const charts = Array.from(document.querySelectorAll('svg.chart')).map(svg => {
  const box = el => { const b = el.getBBox(); return [b.x, b.x + b.width, b.y, b.y + b.height]; };
  return {
    kind: svg.classList.contains('rates') ? 'rates' : 'ratios',
    left: parseFloat(svg.dataset.plotLeft), right: parseFloat(svg.dataset.plotRight),
    width: svg.getBoundingClientRect().width,
    ticks: Array.from(svg.querySelectorAll('text.tick')).map(t => parseFloat(t.dataset.value)),
    marks: Array.from(svg.querySelectorAll('rect.interval, circle.dot')).map(box),
    lows: Array.from(svg.querySelectorAll('rect.interval')).map(r => parseFloat(r.dataset.low)),
    highs: Array.from(svg.querySelectorAll('rect.interval')).map(r => parseFloat(r.dataset.high)),
    references: Array.from(svg.querySelectorAll('line.reference')).map(l => [
      parseFloat(l.getAttribute('x1')), parseFloat(l.getAttribute('y1')),
      parseFloat(l.getAttribute('y2'))]),
    texts: Array.from(svg.querySelectorAll('text')).map(t => [t.textContent, ...box(t)]),
  };
});
const lines = td => { const r = document.createRange(); r.selectNodeContents(td);
  const tops = new Set(Array.from(r.getClientRects()).map(x => Math.round(x.top)));
  return tops.size; };
const table = document.querySelector('table.savings');
const seen = {
  charts,
  pageWidth: document.documentElement.clientWidth,
  bodyWidth: document.body.getBoundingClientRect().width,
  tableWidth: table.getBoundingClientRect().width,
  headers: Array.from(table.querySelectorAll('th')).map(th => [th.textContent, th.title]),
  explained: Array.from(document.querySelectorAll('dl.columns dt')).map(dt => dt.textContent),
  ratioLines: Array.from(table.querySelectorAll('td.ratio')).map(td => [td.textContent, lines(td)]),
  scrollWidth: document.documentElement.scrollWidth,
};
const out = document.createElement('pre');
out.id = 'seen';
out.textContent = JSON.stringify(seen);
document.body.appendChild(out);
</script>"""


@pytest.fixture(scope="module")
def layout(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from .test_report_agreement import every_kind_doc

    return seen_in_browser(render_html(every_kind_doc()), tmp_path_factory.mktemp("layout"),
                           _LAYOUT)


def test_each_chart_axis_covers_every_dot_and_interval(layout: dict[str, Any]) -> None:
    charts = layout["charts"]
    assert {c["kind"] for c in charts} == {"ratios", "rates"}
    for chart in charts:
        for x0, x1, _, _ in chart["marks"]:
            assert chart["left"] - 5 <= x0 and x1 <= chart["right"] + 5, (chart["kind"], x0, x1)
        # the ticks run from at or below the lowest bound to at or above the highest
        assert min(chart["ticks"]) <= min(chart["lows"]) and max(chart["ticks"]) >= max(chart["highs"])
    # one ratio chart per effort group, each on its own axis; one holds a loss and a win, both
    # sides of 1.0x, and its axis reaches below the loss's interval
    ratios = [c for c in charts if c["kind"] == "ratios"]
    assert len(ratios) == 3
    both = min(ratios, key=lambda c: min(c["lows"]))          # the one with the 0.42x loss
    assert min(both["lows"]) < 0.5 and max(both["highs"]) > 1.0
    assert 1.0 in both["ticks"] and min(both["ticks"]) < 0.5


def test_no_text_crosses_the_reference_line(layout: dict[str, Any]) -> None:
    charts = [c for c in layout["charts"] if c["kind"] == "ratios"]
    assert all(c["references"] for c in charts)
    for chart in charts:
        for x, y0, y1 in chart["references"]:
            for text, left, right, top, bottom in chart["texts"]:
                if bottom > y0 and top < y1:  # on the line's rows
                    assert not left < x < right, (text, left, right, x)


def test_ratios_stay_on_one_line_every_column_is_explained_the_page_uses_its_width(
        layout: dict[str, Any]) -> None:
    assert layout["ratioLines"] and all(n <= 1 for _, n in layout["ratioLines"]), layout["ratioLines"]
    headers = [h for h, _ in layout["headers"]]
    assert "requests b/c" in headers
    assert all(title for _, title in layout["headers"]), layout["headers"]   # a tooltip each
    assert headers == layout["explained"]                                    # and a line below
    usable = layout["pageWidth"] - 48                                        # the body's margins
    assert layout["tableWidth"] >= 0.95 * usable, (layout["tableWidth"], usable)
    assert all(c["width"] >= 0.95 * usable for c in layout["charts"])
    assert layout["scrollWidth"] <= layout["pageWidth"]                      # nothing sticks out
