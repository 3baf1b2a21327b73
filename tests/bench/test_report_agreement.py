"""One verdict per claim, whatever section reads it: a result with rows of every kind (ratio,
mean, rate; won, lost, tied, not decidable; a technique named twice that agrees with itself and
one that does not) goes through build_result, and the headline, the savings chart, the HTML
table, the terminal table and the advice must give every claim the same outcome. Efforts come
from the arms' options."""

from __future__ import annotations

import html.parser
import random
import re
from typing import Any

import pytest

from benchmarks.harness._scenario import Arm, Rate, RequestRecord, Row, ScenarioResult
from benchmarks.harness.advice import advise
from benchmarks.harness.report import build_result, claims, headline, render_html, render_table
from benchmarks.harness.stats import LOSS, TIE, UNDECIDED, WIN

from ._results import records


def _flags(variant: str, events: int, trials: int) -> list[RequestRecord]:
    out = records(variant, 100.0, n=trials, seed=trials + events)
    for i, r in enumerate(out):
        r.extra["event"] = i < events
    return out


def _event(r: RequestRecord) -> bool | None:
    return bool(r.extra["event"])


def every_kind_doc() -> dict[str, Any]:
    rng = random.Random(3)
    v: dict[str, list[RequestRecord]] = {
        "openai": records("openai", 600.0, n=30, seed=1),
        "fast": records("fast", 200.0, n=30, seed=2),            # a clear win, by default
        "same": records("same", 600.0, n=30, seed=3),            # no difference
        "slow": records("slow", 1500.0, n=30, seed=4),           # a loss, with one option
        "cached": records("cached", 60.0, n=30, seed=5),         # a win with one option
        "few": records("few", 300.0, n=8, seed=6), "few-base": records("few-base", 600.0, n=8, seed=7),
        "app": records("app", 100.0, n=8, seed=8),               # a mean, an app change
    }
    for r in v["app"]:
        r.latency_ms *= rng.uniform(0.5, 1.5)
    v.update({"cut/openai": _flags("cut/openai", 0, 12), "cut/llmclient": _flags("cut/llmclient", 12, 12),
              "refused/openai": _flags("refused/openai", 5, 40), "refused/llmclient": _flags("refused/llmclient", 6, 40),
              "shed/openai": _flags("shed/openai", 0, 30), "shed/llmclient": _flags("shed/llmclient", 20, 30),
              "tiny/openai": _flags("tiny/openai", 1, 3), "tiny/llmclient": _flags("tiny/llmclient", 3, 3)})
    arms = {"openai": Arm("openai"), "few-base": Arm("openai"), "fast": Arm("llmclient"),
            "same": Arm("llmclient"), "slow": Arm("llmclient", {"embedding_batch": True}),
            "cached": Arm("llmclient", {"cache": "memory"}), "few": Arm("llmclient", {"hedge": True}),
            "app": Arm("llmclient", {"prefetch": ["continue"]}),
            "cut/openai": Arm("openai"), "cut/llmclient": Arm("llmclient"),
            "refused/openai": Arm("openai"), "refused/llmclient": Arm("llmclient", {"pacing": True}),
            "shed/openai": Arm("openai"), "shed/llmclient": Arm("llmclient", {"concurrency": "adaptive"}),
            "tiny/openai": Arm("openai"), "tiny/llmclient": Arm("llmclient")}
    rows: list[Row | Rate] = [
        Row("fast row", "openai", "fast", technique="warm things"),
        Row("fast row, again", "openai", "fast", technique="warm things"),       # agrees: one claim
        Row("same row", "openai", "same", technique="orjson bodies"),
        Row("slow row", "openai", "slow", technique="batching", context="the window's cost"),
        Row("cached row", "openai", "cached", technique="a cache"),
        Row("few row", "few-base", "few", statistic="p99", technique="hedging"),
        Row("mean row", "openai", "app", statistic="mean", technique="app sessions"),
        Row("split row a", "openai", "fast", technique="split"),                # win ...
        Row("split row b", "openai", "same", technique="split"),                # ... and tie
        Rate("cut row", "cut/openai", "cut/llmclient", event="streams finished", count=_event,
             technique="resumed streams"),
        Rate("refused row", "refused/openai", "refused/llmclient", event="calls refused",
             count=_event, higher_is_better=False, technique="pacing"),
        Rate("shed row", "shed/openai", "shed/llmclient", event="calls refused", count=_event,
             higher_is_better=False, technique="shedding"),
        Rate("tiny row", "tiny/openai", "tiny/llmclient", event="answers", count=_event,
             technique="too few trials"),
    ]
    scenario = ScenarioResult("every", "every kind of row", variants=v, rows=rows, arms=arms)
    skipped = ScenarioResult(name="gone", description="d", skipped="needs vision")
    meta = {"network": {"profile": "wan"}, "full_only": [
        {"name": "adaptive", "description": "d", "adds": "adaptive concurrency (TTFT p99)"}]}
    return build_result([scenario, skipped], meta)


EXPECTED = {"warm things": WIN, "orjson bodies": TIE, "batching": LOSS, "a cache": WIN,
            "hedging": UNDECIDED, "app sessions": WIN, "split (split row a)": WIN,
            "split (split row b)": TIE, "resumed streams": WIN, "pacing": TIE,
            "shedding": LOSS, "too few trials": UNDECIDED}
EFFORT = {"warm things": "default", "orjson bodies": "default", "batching": "option",
          "a cache": "option", "hedging": "option", "app sessions": "app",
          "split (split row a)": "default", "split (split row b)": "default",
          "resumed streams": "default", "pacing": "option", "shedding": "option",
          "too few trials": "default"}


@pytest.fixture(scope="module")
def doc() -> dict[str, Any]:
    return every_kind_doc()


def test_the_claims_are_the_rows_judged_once(doc: dict[str, Any]) -> None:
    found = {c["claim"]: c for c in claims(doc)}
    assert {k: c["outcome"] for k, c in found.items()} == EXPECTED
    assert {k: c["effort"] for k, c in found.items()} == EFFORT
    assert found["app sessions"]["statistic"] == "mean" and found["pacing"]["kind"] == "rate"


class _Tags(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.chart: list[tuple[str, str]] = []
        self.table: list[tuple[str, str, list[str]]] = []
        self._row: list[str] | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "g" and a.get("class") == "claim":
            self.chart.append((str(a["data-claim"]), str(a["data-outcome"])))
        if tag == "tr" and "data-claim" in a:
            self._row = []
            self.table.append((str(a["data-claim"]), str(a["data-outcome"]), self._row))
        if tag == "td" and self._row is not None:
            self._cell = []

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._row is not None and self._cell is not None:
            self._row.append("".join(self._cell))
            self._cell = None
        if tag == "tr":
            self._row = None


WORDS = {WIN: ("faster", "better"), TIE: ("no measurable difference",), LOSS: ("slower", "worse"),
         UNDECIDED: ("needs --full",)}


def test_chart_and_table_give_each_claim_its_one_outcome(doc: dict[str, Any]) -> None:
    tags = _Tags()
    tags.feed(render_html(doc))
    assert sorted(tags.chart) == sorted(EXPECTED.items())          # each claim once, same outcome
    assert len(tags.table) == 13                                    # every row
    for claim, outcome, cells in tags.table:
        assert outcome == EXPECTED[claim], claim
        verdict = cells[7]
        assert verdict.startswith(WORDS[outcome]), (claim, verdict)


def test_headline_lists_each_claim_where_its_outcome_says(doc: dict[str, Any]) -> None:
    lines = headline(doc)
    assert len(lines) <= 6
    leads = {"What the defaults save (nothing to do)": "default", "With one option": "option",
             "With an app change": "app"}
    listed: dict[str, str] = {}
    for line in lines:
        lead, _, rest = line.partition(" — ")
        if lead in leads:
            for item in rest.rstrip(".").split("; "):
                name = item.split(": ", 1)[0]
                listed[name] = leads[lead]
    wins = {k for k, v in EXPECTED.items() if v == WIN}
    assert set(listed) == wins
    assert all(listed[k] == EFFORT[k] for k in wins)               # under its effort's line
    # the defaults first, then one option, then an app change
    assert [leads[ln.partition(" — ")[0]] for ln in lines[:3]] == ["default", "option", "app"]
    (flat,) = [ln for ln in lines if ln.startswith("Did not pay")]
    for name, outcome in EXPECTED.items():
        assert (name in flat) == (outcome in (TIE, LOSS)), name
    assert "(the window's cost)" in flat                            # why it lost
    (full,) = [ln for ln in lines if "--full" in ln]
    assert "hedging (p99, 8 of 200)" in full and "too few trials (rate, 3 of 5)" in full
    assert "adaptive (adaptive concurrency (TTFT p99))" in full
    assert lines[-1].startswith("How far to trust this run")


def test_the_advice_speaks_only_of_wins_and_losses_in_their_own_words(doc: dict[str, Any]) -> None:
    advice = advise(doc)
    for name, outcome in EXPECTED.items():
        said = [a for a in advice if a.startswith(f"{name}: ")]
        if outcome == WIN:
            assert said and re.search(r"cuts|shorter|better", said[0]), (name, said)
        elif outcome == LOSS:
            assert said and re.search(r"slower|worse", said[0]), (name, said)
        else:
            assert not said, (name, said)


def test_the_terminal_table_agrees(doc: dict[str, Any]) -> None:
    table = render_table(doc)
    by_label = {r["label"]: r for scen in doc["scenarios"] for r in scen.get("rows", [])}
    name_of = {r["label"]: r["claim"] for r in by_label.values()}
    for label, claim in name_of.items():
        (line,) = [ln for ln in table.splitlines() if ln.startswith(label + " ")]
        assert any(w in line for w in WORDS[EXPECTED[claim]]), line
    assert "adaptive" in table and "in --full only" in table
    assert "requests: requests sent by the baseline / by llmclient" in table   # columns explained


def test_the_terminal_ratio_lies_in_its_printed_interval() -> None:
    """A ratio within 1% of no change prints three decimals; its interval must too, or the
    table reads "0.998x [1.00-1.01]" (seen in a quick pass): a point outside its own interval."""
    v = {"a": records("a", 400.0, n=40), "b": records("b", 400.8, n=40)}
    doc = build_result([ScenarioResult("s", "d", variants=v, rows=[Row("near one", "a", "b")])], {})
    (line,) = [ln for ln in render_table(doc).splitlines() if ln.startswith("near one ")]
    m = re.search(r"([\d.]+)x \[([\d.]+)-([\d.]+)\]", line)
    assert m, line
    ratio, low, high = (float(g) for g in m.groups())
    assert low <= ratio <= high, line


def test_an_effort_written_by_hand_must_match_the_arms_options() -> None:
    v = {"openai": records("openai", 600.0, n=10), "fast": records("fast", 200.0, n=10)}
    wrong = ScenarioResult("s", "d", variants=v, arms={"openai": Arm("openai"), "fast": Arm("llmclient")},
                           rows=[Row("r", "openai", "fast", effort="option")])
    with pytest.raises(ValueError, match="effort 'option' written by hand"):
        build_result([wrong], {})
    # without arms, the written one stands (documents and tests that declare none)
    plain = ScenarioResult("s", "d", variants=v, rows=[Row("r", "openai", "fast", effort="option")])
    assert build_result([plain], {})["scenarios"][0]["rows"][0]["effort"] == "option"
