"""Several tool calls in one chat answer (``n_tool_calls``): the writer's fragments (pure), and
the official client reading them from a real reference server, streamed token by token and
whole, with the bad values named."""

from __future__ import annotations

import json

import openai
import pytest

from benchmarks.server.toolcalls import MAX_TOOL_CALLS, CallSpec, ToolCallWriter

MODEL = "gpt-4o-mini"
MESSAGES = [{"role": "user", "content": "Fix the failing test."}]
READ = {"type": "object", "properties": {"path": {"type": "string"}, "limit": {"type": "integer"},
                                         "query": {"type": "string"}, "mode": {"enum": ["fast", "full"]}}}
SEARCH = {"type": "object", "properties": {"q": {"type": "string"}}}
TOOLS = [{"type": "function", "function": {"name": "read_file", "parameters": READ}},
         {"type": "function", "function": {"name": "search", "parameters": SEARCH}}]


def _arguments(fragments: list[dict]) -> dict[int, str]:
    out: dict[int, str] = {}
    for f in fragments:
        out[f["index"]] = out.get(f["index"], "") + f["function"]["arguments"]
    return out


def test_the_calls_share_the_budget_in_order_and_each_token_writes_one_fragment() -> None:
    w = ToolCallWriter([CallSpec("read_file", READ), CallSpec("search", SEARCH)], 12, "k")
    per_token = [w.feed(f"w{t}" if t % 3 else None) for t in range(12)]
    assert w.finish() == []                                         # the budget was spent exactly
    assert all(len(f) <= 2 for f in per_token)       # a header and/or one text piece (none: a comma token)
    assert [f["index"] for f in per_token[0]] == [0, 0] and "id" in per_token[0][0]
    assert [f["index"] for f in per_token[6]] == [1, 1] and "id" in per_token[6][0]  # tokens 6-11: call 1
    assert all(f["index"] == 0 for fs in per_token[:6] for f in fs)
    done = _arguments([f for fs in per_token[:6] for f in fs])[0]
    assert json.loads(done) == {"path": "w1 w2", "limit": 5, "query": "w4 w5", "mode": "fast"}  # limit: a comma token
    calls = w.calls()
    assert [c["function"]["name"] for c in calls] == ["read_file", "search"]
    assert json.loads(calls[1]["function"]["arguments"]) == {"q": "w7 w8 w10 w11"}
    assert calls[0]["id"] != calls[1]["id"]


def test_a_call_is_complete_json_exactly_when_its_last_token_came() -> None:
    w = ToolCallWriter([CallSpec("search", SEARCH)] * 3, 9, "k")
    text = ""
    for t in range(9):
        text += "".join(f["function"]["arguments"] for f in w.feed(f"x{t}") if f["index"] == t // 3)
        if t % 3 < 2:
            with pytest.raises(json.JSONDecodeError):
                json.loads(text)
        else:
            assert json.loads(text) == {"q": f"x{t - 2} x{t - 1} x{t}"}
            text = ""


def test_an_early_end_closes_every_call_with_schema_values() -> None:
    w = ToolCallWriter([CallSpec("read_file", READ), CallSpec("search", SEARCH)], 40, "k")
    w.feed("alpha")
    rest = w.finish()
    assert {f["index"] for f in rest} == {0, 1}
    calls = [json.loads(c["function"]["arguments"]) for c in w.calls()]
    assert calls == [{"path": "alpha", "limit": 5, "query": "value", "mode": "fast"}, {"q": "value"}]


def test_the_ids_follow_the_key() -> None:
    def ids(key: str) -> list[str]:
        w = ToolCallWriter([CallSpec("search", SEARCH)] * 2, 4, key)
        w.finish()
        return [c["id"] for c in w.calls()]
    assert ids("a") == ids("a") != ids("b")
    assert len(set(ids("a"))) == 2


def _client(server) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0)


def test_the_official_client_reads_several_calls_streamed_and_whole(ref_server) -> None:
    c = _client(ref_server)
    kw = {"model": MODEL, "messages": MESSAGES, "tools": TOOLS, "tool_choice": "required",
          "max_tokens": 30, "temperature": 0, "extra_body": {"n_tool_calls": 3}}
    chunks = list(c.chat.completions.create(stream=True, **kw))
    frags = [d for ch in chunks if ch.choices for d in (ch.choices[0].delta.tool_calls or [])]
    order = [f.index for f in frags]
    assert order == sorted(order) and set(order) == {0, 1, 2}       # one call after the other
    heads = [f for f in frags if f.id]
    assert [f.function.name for f in heads] == ["read_file", "search", "read_file"]  # round the tools
    assert len(frags) >= 30                                          # a fragment per token at least
    streamed = {k: "".join(f.function.arguments or "" for f in frags if f.index == k) for k in range(3)}
    assert chunks[-1].choices[0].finish_reason == "tool_calls"
    whole = c.chat.completions.create(**kw).choices[0]
    assert whole.finish_reason == "tool_calls"
    assert [t.id for t in whole.message.tool_calls] == [f.id for f in heads]  # greedy: the same ids
    assert [json.loads(t.function.arguments) for t in whole.message.tool_calls] == \
        [json.loads(streamed[k]) for k in range(3)]
    named = c.chat.completions.create(**{**kw, "tool_choice": {"type": "function", "function": {"name": "search"}}})
    assert [t.function.name for t in named.choices[0].message.tool_calls] == ["search"] * 3


@pytest.mark.parametrize(("extra", "match"), [
    ({"n_tool_calls": 0}, "n_tool_calls' must be a whole number from 1 to 16"),
    ({"n_tool_calls": MAX_TOOL_CALLS + 1}, "from 1 to 16"),
    ({"n_tool_calls": "2"}, "whole number"),
    ({"n_tool_calls": 2, "parallel_tool_calls": False}, "parallel_tool_calls"),
])
def test_a_bad_count_is_a_400_naming_it(ref_server, extra, match) -> None:
    with pytest.raises(openai.BadRequestError, match=match):
        _client(ref_server).chat.completions.create(model=MODEL, messages=MESSAGES, tools=TOOLS, max_tokens=8,
                                                    tool_choice="required", extra_body=extra)


def test_a_count_without_a_forced_call_is_a_400(ref_server) -> None:
    c = _client(ref_server)
    for kw in ({"tools": TOOLS}, {"tools": TOOLS, "tool_choice": "auto"}, {}):
        with pytest.raises(openai.BadRequestError, match="n_tool_calls' needs"):
            c.chat.completions.create(model=MODEL, messages=MESSAGES, max_tokens=8,
                                      extra_body={"n_tool_calls": 2}, **kw)


def test_a_plan_gives_each_tool_turn_its_calls_then_text(ref_server) -> None:
    """``tool_call_plan``: the same settings every turn (as an agents SDK sends them), the calls of
    the turn told by the conversation's earlier tool-call turns, then a text answer."""
    c = _client(ref_server)
    messages: list = list(MESSAGES)
    counts, reasons = [], []
    for _ in range(4):
        choice = c.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS, max_tokens=24,
                                           temperature=0, extra_body={"tool_call_plan": [2, 3, 1]}).choices[0]
        calls = choice.message.tool_calls or []
        counts.append(len(calls))
        reasons.append(choice.finish_reason)
        messages += [choice.message.model_dump(exclude_none=True),
                     *({"role": "tool", "tool_call_id": t.id, "content": "ok"} for t in calls)]
    assert counts == [2, 3, 1, 0] and reasons[:3] == ["tool_calls"] * 3 and reasons[3] != "tool_calls"
    assert choice.message.content


@pytest.mark.parametrize(("extra", "match"), [
    ({"tool_call_plan": [0]}, "tool_call_plan' must be a list of whole numbers from 1 to 16"),
    ({"tool_call_plan": 2}, "must be a list"),
    ({"tool_call_plan": [2], "n_tool_calls": 2}, "without 'n_tool_calls'"),
    ({"tool_call_plan": [2], "tool_choice": "required"}, "tool_choice' auto"),
])
def test_a_bad_plan_is_a_400_naming_it(ref_server, extra, match) -> None:
    with pytest.raises(openai.BadRequestError, match=match):
        _client(ref_server).chat.completions.create(model=MODEL, messages=MESSAGES, tools=TOOLS, max_tokens=8,
                                                    extra_body=extra)
