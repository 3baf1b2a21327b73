"""pydantic-ai's OpenAI model handed a client (``OpenAIProvider(openai_client=...)``): a call
that works, and the error mapping for a 404 (unknown model) and a 429 (the reference server's
``x-fault``). ``python pydantic_ai_scenarios.py BASE_URL llmclient|openai``; prints, per
scenario, the pydantic-ai error class, its status code and the class of its cause."""

from __future__ import annotations

import json
import sys
from typing import Any

import pydantic_ai
from _common import client_module  # this folder: shared by the scenario scripts
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

MODEL = "gpt-4o-mini"


def client(kind: str, base_url: str) -> Any:
    return client_module(kind, "openai").AsyncOpenAI(base_url=base_url, api_key="k", max_retries=0)


def run(kind: str, base_url: str, model: str, headers: dict[str, str]) -> dict[str, Any]:
    agent = Agent(OpenAIChatModel(model, provider=OpenAIProvider(openai_client=client(kind, base_url))))
    try:
        result = agent.run_sync("Say hi.", model_settings={"extra_headers": headers, "max_tokens": 4})
    except Exception as exc:
        cause = exc.__cause__
        return {"error": [k.__name__ for k in type(exc).__mro__ if k.__module__.startswith("pydantic_ai")],
                "status_code": getattr(exc, "status_code", None),
                "cause": f"{type(cause).__module__.split('.')[0]}.{type(cause).__name__}" if cause else None}
    return {"output": bool(result.output)}


def main() -> None:
    base_url, kind = sys.argv[1], sys.argv[2]
    print(json.dumps({
        "pydantic_ai": pydantic_ai.__version__,
        "call": run(kind, base_url, MODEL, {}),
        "404": run(kind, base_url, "no-such-model", {}),
        "429": run(kind, base_url, MODEL, {"x-fault": "status=429;retry_after=0"}),
    }))


if __name__ == "__main__":
    main()
