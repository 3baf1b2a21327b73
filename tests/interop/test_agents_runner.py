"""The agents benchmark's Runner arms (issue 44): the same chat task through openai-agents'
``Runner.run``, its ``OpenAIChatCompletionsModel`` handed the official ``AsyncOpenAI`` and
llmclient's, each in a process of openai-agents' own venv (made from PyPI on first use, shared
with the framework tests), against a reference server the command starts. Both arms must run
every task with the drawn calls and end on the same final output (the command exits 1 when they
do not); no timing is asserted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import agents

pytestmark = pytest.mark.interop


@pytest.mark.timeout(900)
def test_the_runner_arms_run_the_same_tasks_to_the_same_outputs(tmp_path: Path) -> None:
    out = tmp_path / "agents.json"
    assert agents.main(["--profile", "zero", "--tasks", "3", "--turns", "2,4", "--system-words", "50",
                        "--result-words", "10", "--tokens", "16", "--arms", "official-runner,llmclient-runner",
                        "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    tasks = data["tasks"]
    assert [t["arm"] for t in tasks].count("official-runner") == 3
    assert [t["arm"] for t in tasks].count("llmclient-runner") == 3
    assert all(t["final"] for t in tasks)
    assert set(data["summary"]["ratios"]) == {"official-runner/llmclient-runner"}
    assert data["summary"]["arms"]["llmclient-runner"]["cpu_per_task_ms"] > 0
