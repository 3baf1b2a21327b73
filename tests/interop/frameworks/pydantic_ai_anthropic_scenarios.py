"""pydantic-ai's Anthropic model handed a client (``AnthropicProvider(anthropic_client=...)``):
a plain run, a structured ``output_type`` run (pydantic-ai forces its output tool), a streamed
run, and the error mapping for a 404 (unknown model) and a 429 (the reference server's
``x-fault``). pydantic-ai sends every call with ``client.beta.messages.create``.
``python pydantic_ai_anthropic_scenarios.py BASE_URL llmclient|anthropic`` (``BASE_URL``: the
server's root, the anthropic clients add ``/v1/messages``); prints one JSON object: per
scenario what pydantic-ai made of the answer (or its error class, status code and the class of
its cause, llmclient's on our side), and, with llmclient's client, whether the call ran through
llmclient's chain of layers (``chain``: its retry layer keeps a budget for the origin it
called; a call passed through to the official client leaves none)."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import anthropic
import pydantic_ai
from _common import attempt, client_module  # this folder: shared by the scenario scripts
from pydantic import BaseModel
from pydantic_ai import Agent
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.providers.anthropic import AnthropicProvider

MODEL = "claude-haiku-4-5"  # one of the reference server's (benchmarks/server/anthropic.py)


class City(BaseModel):
    name: str
    population: int


def client(kind: str, base_url: str) -> Any:
    return client_module(kind, "anthropic").AsyncAnthropic(base_url=base_url, api_key="k", max_retries=0)


def model(given: Any, name: str = MODEL) -> AnthropicModel:
    return AnthropicModel(name, provider=AnthropicProvider(anthropic_client=given))


def chain(given: Any) -> dict[str, bool]:
    """With llmclient's client: whether its chain ran the calls (its retry budgets, per origin)."""
    return {"chain": bool(given.retry_budgets)} if hasattr(given, "retry_budgets") else {}


def error(exc: BaseException) -> dict[str, Any]:
    """pydantic-ai's error: its classes (most derived first), its status code, its cause's class
    (``llmclient.X`` on our side) and whether that cause is anthropic's ``APIStatusError``."""
    cause = exc.__cause__
    return {"error": list(dict.fromkeys(k.__name__ for k in type(exc).__mro__
                                        if k.__module__.startswith("pydantic_ai"))),
            "status_code": getattr(exc, "status_code", None),
            "cause": f"{type(cause).__module__.split('.')[0]}.{type(cause).__name__}" if cause else None,
            "cause_is_official": isinstance(cause, anthropic.APIStatusError)}


def plain(kind: str, base_url: str) -> dict[str, Any]:
    given = client(kind, base_url)
    result = Agent(model(given)).run_sync("Say hi.", model_settings={"max_tokens": 8})
    usage = result.usage
    return {"ok": isinstance(result.output, str) and bool(result.output),
            "input_tokens": bool(usage.input_tokens), "output_tokens": bool(usage.output_tokens), **chain(given)}


def structured(kind: str, base_url: str) -> dict[str, Any]:
    given = client(kind, base_url)
    result = Agent(model(given), output_type=City).run_sync("Name a city.")
    return {"ok": isinstance(result.output, City), "requests": result.usage.requests, **chain(given)}


def streamed(kind: str, base_url: str) -> dict[str, Any]:
    async def run() -> dict[str, Any]:
        given = client(kind, base_url)
        agent = Agent(model(given))
        async with agent.run_stream("Tell me a story.", model_settings={"max_tokens": 16}) as result:
            # debounce_by=None: each text delta as it came (not grouped by time)
            deltas = [d async for d in result.stream_text(delta=True, debounce_by=None)]
            usage = result.usage
        await given.close()  # on this loop (asyncio.run closes it after)
        return {"ok": len(deltas) > 1 and all(isinstance(d, str) for d in deltas),
                "whole": "".join(deltas) == await result.get_output(),
                "output_tokens": bool(usage.output_tokens), **chain(given)}

    return asyncio.run(run())


def failing(kind: str, base_url: str, name: str, headers: dict[str, str]) -> dict[str, Any]:
    try:
        Agent(model(client(kind, base_url), name)).run_sync("Say hi.", model_settings={"max_tokens": 4,
                                                                              "extra_headers": headers})
    except Exception as exc:
        return error(exc)
    return {"error": None}


def main() -> None:
    base_url, kind = sys.argv[1], sys.argv[2]
    print(json.dumps({
        "pydantic_ai": pydantic_ai.__version__,
        "anthropic": anthropic.__version__,
        "plain": attempt(lambda: plain(kind, base_url)),
        "structured": attempt(lambda: structured(kind, base_url)),
        "streamed": attempt(lambda: streamed(kind, base_url)),
        "404": failing(kind, base_url, "no-such-model", {}),
        "429": failing(kind, base_url, MODEL, {"x-fault": "status=429;retry_after=0"}),
    }))


if __name__ == "__main__":
    main()
