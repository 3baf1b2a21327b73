"""The ``agents`` scenario: its size from the environment, the plan of cut sockets, the count of
lost tasks, and a task through each client's WebSocket mode against a real reference server with
its socket cut (no timings asserted)."""

from __future__ import annotations

import random
import secrets
from collections.abc import Iterator

import pytest

from benchmarks import agents
from benchmarks.harness.records import RequestRecord
from benchmarks.scenarios.agents import (
    HEAD_EVENTS,
    PARTS,
    TURNS,
    chat_split,
    different_finals,
    lost_tasks,
    plan_cuts,
    settings,
)
from tests.conftest import FAULT_HEADERS, RefServer, start_ref_server, stop_ref_server

pytest.importorskip("websockets")


def test_the_run_is_sized_by_the_environment_and_a_bad_value_is_named() -> None:
    s = settings({})
    assert (s.turns, s.parts) == (TURNS, PARTS) and s.tasks >= 5
    s = settings({"BENCH_AGENTS_TASKS": "3", "BENCH_AGENTS_TURNS": "6,8", "BENCH_AGENTS_CUT_TASKS": "20",
                  "BENCH_AGENTS_PARTS": "cut,chat", "BENCH_AGENTS_CHAT_TASKS": "4"})
    assert (s.tasks, s.turns, s.cut_tasks, s.parts, s.chat_tasks) == (3, (6, 8), 20, ("cut", "chat"), 4)
    with pytest.raises(ValueError, match="BENCH_AGENTS_CHAT_TASKS='x'"):
        settings({"BENCH_AGENTS_CHAT_TASKS": "x"})
    with pytest.raises(ValueError, match="BENCH_AGENTS_TASKS='0'"):
        settings({"BENCH_AGENTS_TASKS": "0"})
    with pytest.raises(ValueError, match="BENCH_AGENTS_TURNS='8,6'"):
        settings({"BENCH_AGENTS_TURNS": "8,6"})
    with pytest.raises(ValueError, match=r"BENCH_AGENTS_PARTS: unknown part\(s\) \['speed'\]"):
        settings({"BENCH_AGENTS_PARTS": "time,speed"})


def test_exactly_the_share_of_sockets_is_cut_inside_the_first_answer_seeded() -> None:
    plan = plan_cuts(40, 0.05, 64, random.Random(3))
    assert len(plan) == 2 and all(0 <= i < 40 for i in plan)
    assert all(1 <= n <= HEAD_EVENTS + 48 for n in plan.values())
    assert plan == plan_cuts(40, 0.05, 64, random.Random(3))
    assert len(plan_cuts(5, 0.05, 64, random.Random(0))) == 1   # a small run still cuts one
    assert plan_cuts(40, 0.0, 64, random.Random(0)) == {}


def test_lost_tasks_are_the_failed_records_and_cuts_are_counted_apart() -> None:
    def rec(ok: bool, cut: int | None) -> RequestRecord:
        return RequestRecord(variant="v", trace_id="", start_s=0.0, latency_ms=1.0,
                             status=200 if ok else None, error_kind=None if ok else "RuntimeError",
                             extra={"cut_after": cut})
    assert lost_tasks([rec(True, None), rec(False, 7), rec(True, 3), rec(True, None)]) == (1, 4, 2)


def test_the_chat_split_takes_medians_of_finished_tasks_and_finals_are_compared_in_pairs() -> None:
    def rec(arm: str, ok: bool, early: float, final: str, cached: int = 0) -> RequestRecord:
        return RequestRecord(variant=arm, trace_id="", start_s=0.0, latency_ms=1.0, ttft_ms=early + 1,
                             status=200 if ok else None, error_kind=None if ok else "RuntimeError",
                             extra={"tool_head_start_ms": early, "tool_wait_ms": 2 * early, "warmups": 1,
                                    "stream_ms": 3 * early,
                                    "prompt_tokens": 100, "cached_tokens": cached, "final": final})
    records = {"official-chat": [rec("official-chat", True, 0, "a"), rec("official-chat", True, 0, "b"),
                                 rec("official-chat", False, 0, "z")],
               "llmclient-chat": [rec("llmclient-chat", True, 100, "a", 50), rec("llmclient-chat", True, 300, "c", 70),
                                  rec("llmclient-chat", True, 900, "y")]}
    split = chat_split(records)
    assert split["llmclient-chat"] == {"tool_head_start_ms": 300, "tool_wait_ms": 600, "stream_ms": 900,
                                       "ttft_ms": 301, "warmups": 1, "cached_share": 0.4}
    assert split["official-chat"]["tool_head_start_ms"] == 0
    assert different_finals(records) == 1      # the second pair; the third has a lost task


@pytest.fixture(scope="module")
def server() -> Iterator[RefServer]:
    s = start_ref_server(FAULT_HEADERS)
    yield s
    stop_ref_server(s)


def _task() -> agents.Task:
    return agents.draw_task(95, 0, (2, 2), 30, 5)


def _cut(after: int) -> dict[str, object]:
    return {"extra_headers": {"x-fault": f"cut_after={after};once={secrets.token_hex(8)}"}}


@pytest.mark.parametrize("arm", ["official-ws", "llmclient-ws"])
def test_a_task_whose_socket_is_cut_mid_answer_is_lost_by_either_client(server, arm) -> None:
    # store=False: nothing anywhere holds the cut response, so no client can give it back.
    client = agents.make_client(arm, server.base_url)
    connect = _cut(6)
    if arm.startswith("official"):
        connect["on_reconnecting"] = lambda _event: None
    try:
        with pytest.raises(Exception):  # noqa: B017 (each client raises its own error)
            agents.run_ws(client, _task(), arm, 16, store=False, connect=connect, turn_deadline_s=10.0)
        # the same task on a clean socket finishes: the loss was the cut's
        result = agents.run_ws(client, _task(), arm, 16, store=False)
    finally:
        client.close()
    assert len(result.ttft_ms) == 2


def test_llmclient_finishes_a_task_whose_socket_was_cut_before_the_answer_started(server) -> None:
    client = agents.make_client("llmclient-ws", server.base_url)
    try:
        result = agents.run_ws(client, _task(), "llmclient-ws", 16, store=True,
                               connect={"initial_delay": 0.01, **_cut(0)})
    finally:
        client.close()
    assert len(result.ttft_ms) == 2
