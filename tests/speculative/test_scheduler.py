import asyncio
import threading
import time

from llmclient.speculative import (
    BudgetConfig,
    HistoryPredictor,
    Speculator,
    fingerprint,
    followup_request,
    refresh_due,
    refresh_interval,
    run_in_task,
    run_in_thread,
    warm_request,
)

REQ = {"model": "m", "temperature": 0, "messages": [{"role": "user", "content": "Tell me about owls"}]}
ANS = {"choices": [{"message": {"role": "assistant", "content": "Owls are birds."}}]}


def spec(**kw):
    cfg = BudgetConfig(max_in_flight=4, max_load_share=2.0, burst=4, max_candidates=3)
    s = Speculator(cfg, **kw)
    s.budget.on_app_call()
    return s


def test_plan_builds_exact_followups():
    s = spec()
    plans = s.plan(REQ, ANS, ["continue", "more detail"])
    assert [p.request["messages"][-1]["content"] for p in plans] == ["continue", "more detail"]
    assert plans[0].request["messages"][1] == {"role": "assistant", "content": "Owls are birds."}
    assert plans[0].request["temperature"] == 0 and plans[0].kind == "followup"
    assert s.stats.sent == 2 and s.stats.predictions == 2


def test_observe_matches_exactly_and_cancels_the_rest():
    s = spec()
    plans = s.plan(REQ, ANS, ["continue", "more detail"])
    app_call = followup_request(REQ, ANS, "continue")
    assert app_call is not None
    match = s.observe(app_call | {"stream": True})  # streaming flag does not change the answer
    assert match is plans[0] and match.used
    assert plans[1].token.cancelled and not plans[0].token.cancelled
    assert s.stats.cancelled == 1


def test_a_different_parameter_is_not_a_match():
    s = spec()
    s.plan(REQ, ANS, ["continue"])
    other = followup_request(REQ, ANS, "continue") | {"temperature": 0.5}
    assert s.observe(other) is None
    assert s.in_flight()[0].token.cancelled  # the conversation moved on without it


def test_tools_are_not_speculated_unless_allowed():
    req = REQ | {"tools": [{"type": "function", "function": {"name": "f"}}]}
    assert spec().plan(req, ANS, ["go"]) == []
    assert len(spec(allow_tools=True).plan(req, ANS, ["go"])) == 1


def test_budget_limits_plans():
    s = Speculator(BudgetConfig(max_in_flight=1, max_load_share=1, burst=1, max_candidates=3))
    s.budget.on_app_call()
    assert len(s.plan(REQ, ANS, ["a", "b", "c"])) == 1
    assert s.stats.refused == {"max_in_flight": 2}


def test_prefix_warm_plan_has_one_token_and_the_answer():
    s = spec()
    (p,) = s.plan(REQ, ANS, "prefix")
    assert p.kind == "warm" and p.request["max_tokens"] == 1 and p.request["stream"] is False
    assert p.request["messages"][-1] == {"role": "assistant", "content": "Owls are birds."}
    assert warm_request({"model": "m", "messages": [], "max_completion_tokens": 9, "n": 1}) == {
        "model": "m", "messages": [], "max_tokens": 1, "stream": False,
    }


TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]
FORCED = {"type": "function", "function": {"name": "lookup"}}
TOOL_ANS = {"choices": [{"message": {
    "role": "assistant", "content": "",
    "tool_calls": [{"index": 0, "id": "call_1", "function": {"arguments": '{"q": "owls"}', "name": "lookup"},
                    "type": "function"}]}, "finish_reason": "tool_calls"}]}


def test_prefix_warm_after_tool_calls_carries_the_tool_call_turn():
    s = spec()
    req = REQ | {"tools": TOOLS, "tool_choice": FORCED, "max_tokens": 50, "stream_options": {}}
    (p,) = s.plan(req, TOOL_ANS, "prefix")
    assert p.kind == "warm" and p.request["max_tokens"] == 1 and p.request["stream"] is False
    assert "stream_options" not in p.request
    # exactly what the app sends back: keys in the request's order, no stream-only "index",
    # an empty streamed content as None
    turn = p.request["messages"][-1]
    assert turn == {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "owls"}'}}]}
    assert list(turn["tool_calls"][0]) == ["id", "type", "function"]
    assert list(turn["tool_calls"][0]["function"]) == ["name", "arguments"]
    assert p.request["messages"][:-1] == REQ["messages"]
    # the prompt is kept: tools and tool_choice as sent (a forced tool with max_tokens=1 is a
    # valid request on the reference server: it answers the call, arguments drawn from words)
    assert p.request["tools"] == TOOLS and p.request["tool_choice"] == FORCED
    assert s.stats.warmups == 1 and s.stats.refused == {}


def test_tool_call_turn_keeps_text_content_and_refuses_a_cut_call():
    ans = {"choices": [{"message": {"role": "assistant", "content": "Looking.",
                                    "tool_calls": TOOL_ANS["choices"][0]["message"]["tool_calls"]}}]}
    (p,) = spec().plan(REQ | {"tools": TOOLS}, ans, "prefix")
    assert p.request["messages"][-1]["content"] == "Looking."
    cut = {"choices": [{"message": {"role": "assistant", "content": None,
                                    "tool_calls": [{"id": None, "function": {"name": "", "arguments": "{"}}]}}]}
    assert spec().plan(REQ | {"tools": TOOLS}, cut, "prefix") == []


def test_tools_refused_for_followups_but_not_for_warmups():
    req = REQ | {"tools": TOOLS}
    s = spec()
    assert s.plan(req, TOOL_ANS, ["go"]) == [] and s.plan(req, ANS, ["go"]) == []
    assert len(s.stats.refused) == 1 and s.stats.warmups == 0
    assert len(spec().plan(req, ANS, "prefix")) == 1  # a text answer to a request with tools


def test_prefix_warm_refuses_n_above_one():
    s = spec()
    assert s.plan(REQ | {"tools": TOOLS, "n": 2}, TOOL_ANS, "prefix") == []
    assert s.stats.refused == {"n > 1": 1} and s.stats.warmups == 0


def test_followups_still_skip_tool_call_answers():
    assert spec(allow_tools=True).plan(REQ | {"tools": TOOLS}, TOOL_ANS, ["go"]) == []


def test_history_predictor_learns_through_observe():
    h = HistoryPredictor(min_support=2, threshold=0.5)
    s = spec(predictor=h)
    for _ in range(2):
        s.observe(REQ)
        s.observe(followup_request(REQ, ANS, "summarize that"))
    assert [p.request["messages"][-1]["content"] for p in s.plan(REQ, ANS, True)] == ["summarize that"]


def test_run_in_thread_reports_done_and_errors():
    s = spec()
    a, b = s.plan(REQ, ANS, ["a", "b"])
    done = threading.Event()
    seen = []

    def send(p):
        seen.append(p.key)
        if p is b:
            raise ConnectionError("server down")
        return 12

    run_in_thread(s, a, send)
    run_in_thread(s, b, send)
    deadline = time.monotonic() + 5
    while s.in_flight() and time.monotonic() < deadline:
        time.sleep(0.01)
    done.set()
    assert sorted(seen) == sorted([a.key, b.key])
    assert s.stats.errors == 1 and s.stats.used_tokens == 12 and s.budget.in_flight == 0


def test_run_in_task_is_cancelled_by_token():
    async def main():
        s = spec()
        (p,) = s.plan(REQ, ANS, ["x"])
        started = asyncio.Event()

        async def send(prefetch):
            started.set()
            await asyncio.sleep(30)
            return 1

        task = run_in_task(s, p, send)
        await started.wait()
        s.observe(followup_request(REQ, ANS, "something else"))  # moves on: cancels
        await asyncio.wait_for(asyncio.gather(task, return_exceptions=True), 5)
        return s

    s = asyncio.run(main())
    assert s.stats.cancelled == 1 and s.stats.errors == 0 and not s.in_flight()


def test_fingerprint_ignores_stream_flags_only():
    assert fingerprint(REQ) == fingerprint(REQ | {"stream": True, "stream_options": {"include_usage": True}})
    assert fingerprint(REQ) != fingerprint(REQ | {"seed": 1})


def test_keep_warm_schedule():
    assert refresh_interval(300) == 270
    assert not refresh_due(0, 100, 300) and refresh_due(0, 271, 300)
