"""Tool calls handed over early from a chat-completions stream: ``ToolCallCollector`` (pure,
on fragmented chunks of several calls) and ``stream.tool_calls()`` against the reference
server, sync and async, with the official client's stream as the control for the message."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from openai.lib.streaming.chat import ChatCompletionStreamState

import llmclient
from llmclient.pipeline.early_tools import ToolCallCollector
from tests.conftest import RefServer, start_ref_server, stop_ref_server

MODEL = "gpt-4o-mini"
TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
    "required": ["city", "days"]}}}]


def _chunk(choice: int = 0, tools: list[dict[str, Any]] | None = None, content: str | None = None,
           finish: str | None = None) -> dict[str, Any]:
    delta: dict[str, Any] = {}
    if tools:
        delta["tool_calls"] = tools
    if content:
        delta["content"] = content
    return {"choices": [{"index": choice, "delta": delta, "finish_reason": finish}]}


def _frag(index: int, args: str, id: str | None = None, name: str | None = None) -> dict[str, Any]:
    fn: dict[str, Any] = {"arguments": args}
    if name:
        fn["name"] = name
    out: dict[str, Any] = {"index": index, "function": fn}
    if id:
        out["id"], out["type"] = id, "function"
    return out


def test_each_call_is_handed_over_when_its_arguments_close_while_the_next_is_written() -> None:
    c = ToolCallCollector()
    steps = [
        _chunk(content="Let me look."),
        _chunk(tools=[_frag(0, '{"city": "Pa', id="call_a", name="lookup")]),
        _chunk(tools=[_frag(0, 'ris", "days": 2')]),
        _chunk(tools=[_frag(0, "}")]),  # call 0 complete here, before call 1 starts
        _chunk(tools=[_frag(1, '{"city"', id="call_b", name="lookup")]),
        _chunk(tools=[_frag(1, ': "Rome", "days": 3}')]),
        _chunk(tools=[_frag(2, '{"city": "Oslo", "note": "a } inside"', id="call_c", name="lookup")]),
        _chunk(tools=[_frag(2, "}")]),
        _chunk(finish="tool_calls"),
    ]
    ready = [[(r.index, r.id) for r in c.feed(s)] for s in steps]
    assert ready == [[], [], [], [(0, "call_a")], [], [(1, "call_b")], [], [(2, "call_c")], []]
    assert c.finish() == []
    msg = c.message()
    assert msg["content"] == "Let me look." and [t["id"] for t in msg["tool_calls"]] == ["call_a", "call_b", "call_c"]
    assert msg["tool_calls"][0]["function"]["arguments"] == '{"city": "Paris", "days": 2}'
    assert c.changed == []


def test_a_call_whose_arguments_never_parse_is_handed_over_when_the_next_begins_or_the_choice_ends() -> None:
    c = ToolCallCollector()
    assert c.feed(_chunk(tools=[_frag(0, "not json", id="a", name="f")])) == []
    (first,) = c.feed(_chunk(tools=[_frag(1, "{", id="b", name="f")]))
    assert first.index == 0 and first.arguments == "not json"
    (second,) = c.feed(_chunk(finish="tool_calls"))
    assert second.index == 1 and second.arguments == "{"
    # choices are separate: n=2
    c2 = ToolCallCollector()
    out = c2.feed({"choices": [{"index": 0, "delta": {"tool_calls": [_frag(0, "{}", id="x", name="f")]}},
                               {"index": 1, "delta": {"tool_calls": [_frag(0, "{}", id="y", name="f")]}}]})
    assert [(r.choice, r.id, r.parsed()) for r in out] == [(0, "x", {}), (1, "y", {})]


def test_more_arguments_after_a_complete_object_are_kept_and_noted() -> None:
    c = ToolCallCollector()
    (r,) = c.feed(_chunk(tools=[_frag(0, "{}", id="a", name="f")]))
    c.feed(_chunk(tools=[_frag(0, " ")]))
    assert c.changed == [(0, 0)] and c.message()["tool_calls"][0]["function"]["arguments"] == "{} "
    assert r.arguments == "{}"


@pytest.fixture(scope="module")
def server() -> Iterator[RefServer]:
    s = start_ref_server()
    yield s
    stop_ref_server(s)


REQUEST = {"model": MODEL, "messages": [{"role": "user", "content": "Weather in Paris?"}],
           "tools": TOOLS, "tool_choice": "required", "temperature": 0, "seed": 1, "n": 2,
           "max_tokens": 24}


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_stream_tool_calls_against_the_reference_server(server, kind) -> None:
    official = openai.OpenAI(base_url=server.base_url, api_key="sk-x")
    state = ChatCompletionStreamState()
    for chunk in official.chat.completions.create(**REQUEST, stream=True):
        state.handle_chunk(chunk)
    control = state.get_final_completion()
    official.close()

    chunks: list[Any] = []
    if kind == "sync":
        client = llmclient.OpenAI(base_url=server.base_url, api_key="sk-x")
        stream = client.chat.completions.create(**REQUEST, stream=True)
        ready = list(stream.tool_calls(on_chunk=chunks.append))
        client.close()
    else:
        async def run() -> Any:
            client = llmclient.AsyncOpenAI(base_url=server.base_url, api_key="sk-x")
            stream = await client.chat.completions.create(**REQUEST, stream=True)
            out = [r async for r in stream.tool_calls(on_chunk=chunks.append)]
            await client.close()
            return stream, out

        stream, ready = asyncio.run(run())
    assert len(ready) == 2 and {r.choice for r in ready} == {0, 1}
    assert chunks and chunks[-1].choices[0].finish_reason == "tool_calls"
    for r in ready:
        want = control.choices[r.choice].message.tool_calls[r.index]
        assert r.name == want.function.name == "lookup" and r.id
        assert r.arguments == want.function.arguments
        assert set(r.parsed()) == {"city", "days"}
        msg = stream.tool_collector.message(r.choice)
        assert msg["tool_calls"][r.index]["function"]["arguments"] == r.arguments
        assert stream.tool_collector.finish_reason(r.choice) == "tool_calls"
