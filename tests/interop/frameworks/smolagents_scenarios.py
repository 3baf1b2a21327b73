"""smolagents' ``OpenAIServerModel`` handed a client (``client=``: its ``ApiModel`` takes one and
creates none then): one ``generate`` call, one streamed call (``generate_stream``, usage in the
last chunk), a tool call (``tools_to_call_from``: smolagents sends ``tool_choice="required"``, so
the reference server calls the tool with arguments that follow its schema) and a
``ToolCallingAgent`` run to its ``final_answer``; and a 429, which smolagents must see as one.
``python smolagents_scenarios.py BASE_URL llmclient|openai``; prints, per scenario, what came of
it (``"ok"`` and the details compared with the official client's run) or the error."""

from __future__ import annotations

import json
import sys
from typing import Any

import smolagents
from _common import (  # this folder: shared by the scenario scripts
    attempt,
    client_module,
    official_error,
)
from smolagents import ChatMessage, OpenAIServerModel, ToolCallingAgent, tool
from smolagents.models import is_rate_limit_error

MODEL = "gpt-4o-mini"
ASK = [ChatMessage(role="user", content=[{"type": "text", "text": "Say hi."}])]


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: the first integer.
        b: the second integer.
    """
    return a + b


def client(kind: str, base_url: str) -> Any:
    handed = client_module(kind, "openai").OpenAI(base_url=base_url, api_key="k", max_retries=0)
    assert type(handed).__module__.split(".")[0] == kind, type(handed)
    return handed


def model(kind: str, base_url: str) -> OpenAIServerModel:
    handed = client(kind, base_url)
    built = OpenAIServerModel(model_id=MODEL, client=handed, retry=False)
    assert built.client is handed
    return built


def generate(kind: str, base_url: str) -> dict[str, Any]:
    message = model(kind, base_url).generate(ASK, max_tokens=8)
    usage = message.token_usage
    return {"ok": isinstance(message.content, str) and bool(message.content) and usage is not None
            and usage.output_tokens > 0, "role": str(getattr(message.role, "value", message.role)),
            "raw": type(message.raw).__name__, "trace_id": bool(getattr(message.raw, "trace_id", None))}


def stream(kind: str, base_url: str) -> dict[str, Any]:
    deltas = list(model(kind, base_url).generate_stream(ASK, max_tokens=8))
    text = "".join(d.content or "" for d in deltas)
    usage = [d.token_usage for d in deltas if d.token_usage is not None]
    return {"ok": bool(text) and len(usage) == 1 and usage[0].output_tokens > 0,
            "deltas": len(deltas) > 1, "usage_chunks": len(usage)}


def tool_call(kind: str, base_url: str) -> dict[str, Any]:
    message = model(kind, base_url).generate(
        [ChatMessage(role="user", content=[{"type": "text", "text": "Add two numbers."}])],
        tools_to_call_from=[add])
    calls = message.tool_calls or []
    args = [c.function.arguments for c in calls]
    parsed = [json.loads(a) if isinstance(a, str) else a for a in args]
    return {"ok": [c.function.name for c in calls] == ["add"] and all(isinstance(p.get("a"), int)
                                                                      and isinstance(p.get("b"), int)
                                                                      for p in parsed),
            "tool_calls": [c.function.name for c in calls]}


def agent_run(kind: str, base_url: str) -> dict[str, Any]:
    agent = ToolCallingAgent(tools=[], model=model(kind, base_url), max_steps=2, verbosity_level=0)
    output = agent.run("Say hi.")
    steps = [type(step).__name__ for step in agent.memory.steps]
    return {"ok": output is not None and "ActionStep" in steps, "steps": steps}



def rate_limited(kind: str, base_url: str) -> dict[str, Any]:
    """A 429 (the reference server's ``x-fault``): smolagents retries what its
    ``is_rate_limit_error`` (the error's text) calls one; retries are off here."""
    try:
        model(kind, base_url).generate(ASK, extra_headers={"x-fault": "status=429;retry_after=0"})
    except Exception as exc:
        out = official_error(exc, "RateLimitError")
        out["is_rate_limit_error"] = is_rate_limit_error(exc)
        out["ok"] = out["ok"] and out["is_rate_limit_error"]
        return out
    return {"ok": False, "error": "no error"}




def main() -> None:
    base_url, kind = sys.argv[1], sys.argv[2]
    results: dict[str, Any] = {"smolagents": smolagents.__version__}
    for name, run in (("generate", generate), ("generate_stream", stream), ("tool_call", tool_call),
                      ("agent_run", agent_run), ("429", rate_limited)):
        results[name] = attempt(lambda run=run: run(kind, base_url))
    print(json.dumps(results))


if __name__ == "__main__":
    main()
