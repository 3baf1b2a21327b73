"""openai-agents' Chat Completions model handed a client
(``OpenAIChatCompletionsModel(model=..., openai_client=...)``), tracing disabled (nothing
reaches OpenAI): ``Runner.run`` and ``Runner.run_sync``, a streamed run (``Runner.run_streamed``)
a run with a function tool the model is made to call (``tool_choice="required"``: the
reference server then calls the first tool with arguments that follow its schema; the Agent
resets the choice after the call, so the next turn answers in text), and the error a 404
(unknown model) comes out as.
``python openai_agents_scenarios.py BASE_URL llmclient|openai``; prints, per scenario, what came
of it (``"ok"`` and the details compared with the official client's run) or the error."""

from __future__ import annotations

import asyncio
import json
import sys
from importlib import metadata
from typing import Any

from _common import (  # this folder: shared by the scenario scripts
    attempt,
    client_module,
    official_error,
)
from agents import (
    Agent,
    ModelSettings,
    OpenAIChatCompletionsModel,
    Runner,
    function_tool,
    set_tracing_disabled,
)
from agents.items import ToolCallItem, ToolCallOutputItem

MODEL = "gpt-4o-mini"
ASK = "Say hi."
calls: list[tuple[int, int]] = []


@function_tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    calls.append((a, b))
    return a + b


def client(kind: str, base_url: str) -> Any:
    return client_module(kind, "openai").AsyncOpenAI(base_url=base_url, api_key="k", max_retries=0)


def agent(kind: str, base_url: str, **kwargs: Any) -> Agent[Any]:
    handed = client(kind, base_url)
    assert type(handed).__module__.split(".")[0] == kind, type(handed)
    model = OpenAIChatCompletionsModel(model=MODEL, openai_client=handed)
    return Agent(name="assistant", instructions="Be brief.", model=model, **kwargs)


def text_result(result: Any) -> dict[str, Any]:
    output = result.final_output
    return {"ok": isinstance(output, str) and bool(output), "output_type": type(output).__name__,
            "responses": len(result.raw_responses),
            "usage": result.raw_responses[-1].usage.output_tokens > 0}


async def run_async(kind: str, base_url: str) -> dict[str, Any]:
    return text_result(await Runner.run(agent(kind, base_url), ASK))


def run_sync(kind: str, base_url: str) -> dict[str, Any]:
    return text_result(Runner.run_sync(agent(kind, base_url), ASK))


async def run_streamed(kind: str, base_url: str) -> dict[str, Any]:
    # include_usage: the final chunk's usage (sent by default only to api.openai.com)
    result = Runner.run_streamed(agent(kind, base_url, model_settings=ModelSettings(include_usage=True)), ASK)
    deltas: list[str] = []
    async for event in result.stream_events():
        if event.type == "raw_response_event" and event.data.type == "response.output_text.delta":
            deltas.append(event.data.delta)
    out = text_result(result)
    out["ok"] = out["ok"] and out["usage"] and len(deltas) > 1 and "".join(deltas) == result.final_output
    out["deltas"] = len(deltas) > 1
    return out


async def run_tool(kind: str, base_url: str, streamed: bool) -> dict[str, Any]:
    calls.clear()
    tool_agent = agent(kind, base_url, tools=[add], model_settings=ModelSettings(tool_choice="required"))
    if streamed:
        result: Any = Runner.run_streamed(tool_agent, "Add two numbers.")
        async for _ in result.stream_events():
            pass
    else:
        result = await Runner.run(tool_agent, "Add two numbers.")
    called = [item.raw_item.name for item in result.new_items if isinstance(item, ToolCallItem)]
    outputs = [item.output for item in result.new_items if isinstance(item, ToolCallOutputItem)]
    out = text_result(result)
    out.update({"tool_calls": called, "tool_ran": len(calls) == 1 and outputs == [sum(calls[0])]})
    out["ok"] = out["ok"] and called == ["add"] and out["tool_ran"]
    return out



async def run_not_found(kind: str, base_url: str) -> dict[str, Any]:
    """An unknown model: the server's 404 comes out of ``Runner.run`` as the client raised it."""
    model = OpenAIChatCompletionsModel(model="no-such-model", openai_client=client(kind, base_url))
    try:
        await Runner.run(Agent(name="assistant", model=model), ASK)
    except Exception as exc:
        return official_error(exc, "NotFoundError")
    return {"ok": False, "error": "no error"}




def main() -> None:
    base_url, kind = sys.argv[1], sys.argv[2]
    set_tracing_disabled(True)
    results: dict[str, Any] = {"openai-agents": metadata.version("openai-agents"),
                               "openai": metadata.version("openai")}
    results["run_sync"] = attempt(lambda: run_sync(kind, base_url))
    results["run"] = attempt(lambda: asyncio.run(run_async(kind, base_url)))
    results["run_streamed"] = attempt(lambda: asyncio.run(run_streamed(kind, base_url)))
    results["tool"] = attempt(lambda: asyncio.run(run_tool(kind, base_url, streamed=False)))
    results["tool streamed"] = attempt(lambda: asyncio.run(run_tool(kind, base_url, streamed=True)))
    results["404"] = attempt(lambda: asyncio.run(run_not_found(kind, base_url)))
    print(json.dumps(results))


if __name__ == "__main__":
    main()
