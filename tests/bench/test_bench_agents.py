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
    here = set(agents.RESPONSES_ARMS + agents.CHAT_ARMS)  # the Runner arms need their venv: tests/interop
    assert {t["arm"] for t in data["tasks"]} == here
    assert len(data["tasks"]) == 2 * len(here)
    assert all(len(t["ttft_ms"]) >= 2 for t in data["tasks"])


# -- the chat-completions tool loop -------------------------------------------------------------
def _chat_task() -> agents.Task:
    return agents.Task(3, ((60, 90, 120), (60, 60)), "system words " * 20, "Task 0: fix it.",
                       (("one", "two", "three"), ("four", "five")))


def test_a_chat_turn_asks_for_the_drawn_calls_and_the_last_for_text() -> None:
    task = _chat_task()
    messages = agents.chat_first_messages(task)
    assert messages == [{"role": "system", "content": task.system}, {"role": "user", "content": task.question}]
    first = agents.chat_request(task, 0, messages, 64, 32)
    assert (first["tool_choice"], first["max_tokens"], first["extra_body"]) == ("required", 96, {"n_tool_calls": 3})
    assert first["temperature"] == 0 and first["stream"] and first["tools"] == list(agents.CHAT_TOOLS)
    assert agents.chat_request(task, 1, messages, 64, 32)["extra_body"] == {"n_tool_calls": 2}
    last = agents.chat_request(task, 2, messages, 64, 32)
    assert (last["tool_choice"], last["max_tokens"]) == ("none", 64) and "extra_body" not in last


def test_each_call_gets_its_result_as_a_tool_message_and_a_wrong_count_is_named() -> None:
    calls = [{"id": "a"}, {"id": "b"}]
    assert agents.tool_messages(_chat_task(), 1, calls) == [
        {"role": "tool", "tool_call_id": "a", "content": "tool result 0: four"},
        {"role": "tool", "tool_call_id": "b", "content": "tool result 1: five"}]
    with pytest.raises(RuntimeError, match="made 2 tool calls, the task drew 3"):
        agents.tool_messages(_chat_task(), 0, calls)


def test_the_app_s_reading_of_a_stream_is_the_assistant_turn_it_sends_back() -> None:
    acc = agents.ChatAccumulator()
    chunks = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c0", "type": "function",
                                                             "function": {"name": "read_file", "arguments": ""}}]}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": '{"path":'}}]}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": '"x"}'}}]}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 1, "id": "c1", "type": "function",
                                                             "function": {"name": "search_code", "arguments": "{}"}}]}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        {"choices": [], "usage": {"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": 4}}},
    ]
    for c in chunks:
        acc.feed(c)
    assert acc.message() == {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c0", "type": "function", "function": {"name": "read_file", "arguments": '{"path":"x"}'}},
        {"id": "c1", "type": "function", "function": {"name": "search_code", "arguments": "{}"}}]}
    assert agents._usage_tokens(acc.usage) == (10, 4)
    assert [agents.has_token(c) for c in chunks] == [False, True, True, True, True, False, False]


def test_the_tools_head_start_and_wait_are_taken_from_the_stream_end() -> None:
    runs = [agents.ToolRun(0, 1.0, 1.5), agents.ToolRun(1, 1.6, 2.4), agents.ToolRun(2, 2.0, 2.1)]
    early, wait = agents.tool_timing(1.8, runs)
    assert early == pytest.approx(1000.0)       # 0.8 s + 0.2 s before the end, the third after
    assert wait == pytest.approx(600.0)         # the last result 0.6 s after the end
    assert agents.tool_timing(1.0, []) == (0.0, 0.0)


def test_the_chat_summary_and_the_final_messages_are_compared_per_task() -> None:
    runs = [agents.TaskResult("official-chat", 4.0, 0.2, [10.0], final="a"),
            agents.TaskResult("llmclient-chat", 2.0, 0.1, [5.0], early_ms=300.0, warmups=2, prompt_tokens=100,
                              cached_tokens=80, final="a"),
            agents.TaskResult("official-chat", 4.0, 0.2, [10.0], final="b"),
            agents.TaskResult("llmclient-chat", 2.0, 0.1, [5.0], final="c")]
    s = agents.summarize(runs, ["official-chat", "llmclient-chat"])
    assert s["ratios"] == {"official-chat/llmclient-chat": 2.0}
    assert s["arms"]["llmclient-chat"]["cached_share"] == 0.8     # 80 of 100 prompt tokens
    assert agents.different_finals(runs) == [1]


@pytest.fixture(scope="module")
def paced_server():
    from tests.conftest import start_ref_server, stop_ref_server

    s = start_ref_server(profile="h100-8b")   # a token rate: the calls' arguments take time to write
    yield s
    stop_ref_server(s)


def test_llmclient_starts_tools_while_the_model_writes_the_next_and_warms_the_next_turn(paced_server) -> None:
    task = _chat_task()
    results = {}
    for arm in agents.CHAT_ARMS:
        client = agents.make_client(arm, paced_server.base_url)
        try:
            results[arm] = agents.run_chat(client, task, arm, 16, call_tokens=12)
        finally:
            client.close()
    theirs, ours = results["official-chat"], results["llmclient-chat"]
    assert ours.final == theirs.final and ours.final                 # the same conversation, the same answer
    assert len(ours.ttft_ms) == len(theirs.ttft_ms) == 3
    # by order, not by clock: all but each turn's last call were started before the model began
    # the last call (3 + 2 calls: 2 + 1); the official app starts them after the stream
    assert ours.early_calls >= 3 and theirs.early_calls == 0
    assert ours.early_ms > 0 and theirs.early_ms == 0
    assert ours.warmups >= 1 and theirs.warmups == 0                 # the next turn was warmed
    assert ours.prompt_tokens == theirs.prompt_tokens > 0            # the same prompts, by the server's usage


# -- openai-agents' Runner (its process runs in tests/interop/test_agents_runner.py) -----------
def test_the_runner_task_carries_the_drawn_calls_and_each_call_finds_its_slot() -> None:
    from benchmarks import agents_runner

    task = _chat_task()
    sent = agents.runner_task(task, 24)
    assert sent["tools"] == [[60, 90, 120], [60, 60]] and sent["tokens"] == 24 and sent["turns"] == 3
    assert agents_runner.plan(sent["tools"]) == [3, 2]
    assert [agents_runner.call_slot(sent["tools"], n) for n in range(5)] == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1)]
    with pytest.raises(IndexError, match="more tool calls than the task drew"):
        agents_runner.call_slot(sent["tools"], 5)
    assert agents.runner("official-runner") is agents.run_runner
