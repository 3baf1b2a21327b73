"""``python -m benchmarks.agents``: the task draw is the same for every arm, the summary's
figures come from the runs, and a tiny run of every arm completes against a reference server it
starts (profile zero; no timings asserted)."""

from __future__ import annotations

import json

import pytest

from benchmarks import agents

pytest.importorskip("websockets")


def test_a_task_is_drawn_the_same_for_every_arm_and_within_its_bounds() -> None:
    a = agents.draw_task(44, 3, (6, 20), 100, 10)
    assert a == agents.draw_task(44, 3, (6, 20), 100, 10)
    assert a != agents.draw_task(44, 4, (6, 20), 100, 10)
    assert 6 <= a.turns <= 20 and len(a.tools) == a.turns - 1 == len(a.results)
    assert all(1 <= len(calls) <= 4 and all(50 <= ms <= 800 for ms in calls) for calls in a.tools)
    assert [len(r) for r in a.results] == [len(c) for c in a.tools]
    assert len(a.system.split()) == 100


def test_the_summary_takes_medians_and_ratios_of_the_runs() -> None:
    runs = [agents.TaskResult("official-http", 3.0, 0.2, [10.0], 50.0),
            agents.TaskResult("official-http", 5.0, 0.4, [30.0], 70.0),
            agents.TaskResult("llmclient-ws", 2.0, 0.1, [5.0], 0.0),
            agents.TaskResult("llmclient-ws", 2.0, 0.1, [7.0], 0.0)]
    s = agents.summarize(runs, ["official-http", "llmclient-ws"])
    assert s["arms"]["official-http"]["task_p50_s"] == 4.0
    assert s["arms"]["official-http"]["reload_per_task_ms"] == 60.0
    assert s["arms"]["llmclient-ws"]["ttft_median_ms"] == 6.0
    assert s["ratios"] == {"official-http/llmclient-ws": 2.0}


def test_a_tiny_run_of_every_arm_completes(tmp_path) -> None:
    out = tmp_path / "agents.json"
    assert agents.main(["--profile", "zero", "--tasks", "2", "--turns", "2,3", "--system-words", "50",
                        "--result-words", "10", "--tokens", "16", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert {t["arm"] for t in data["tasks"]} == set(agents.ARMS)
    assert len(data["tasks"]) == 2 * len(agents.ARMS)
    assert all(len(t["ttft_ms"]) >= 2 for t in data["tasks"])
