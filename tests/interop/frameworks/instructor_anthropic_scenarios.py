"""instructor's ``from_anthropic`` handed a client: tools (``ANTHROPIC_TOOLS``, a forced
``tool_choice``) and partial streaming (``create_partial``: the tool's ``input_json_delta``
events), sync and async. ``python instructor_anthropic_scenarios.py BASE_URL llmclient|anthropic``
(``BASE_URL``: the server's root); prints, per scenario, ``"ok"``, the answer's ``request-id``
(``_request_id``) and whether the call went through llmclient (its trace id on the raw answer)."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import anthropic
import instructor
from _common import attempt, client_module  # this folder: shared by the scenario scripts
from pydantic import BaseModel

MODEL = "claude-haiku-4-5"  # one of the reference server's (benchmarks/server/anthropic.py)
ASK = [{"role": "user", "content": "Invent a person: a name and an age."}]
# Mode.JSON_SCHEMA (instructor 1.17 sends the older ``output_format`` with its beta) and
# Mode.ANTHROPIC_JSON (the schema in the prompt) are left out: the reference server follows a
# schema only where the request carries one it reads (a forced tool, ``output_config.format``),
# so they fail there for the official client as much as for llmclient.
MODES = ("ANTHROPIC_TOOLS",)


class Person(BaseModel):
    name: str
    age: int


def seen(result: Any) -> dict[str, Any]:
    raw = getattr(result, "_raw_response", None)
    return {"ok": isinstance(result, Person) and isinstance(raw, anthropic.types.Message),
            "request_id": bool(getattr(raw, "_request_id", None)),
            "trace_id": bool(getattr(raw, "trace_id", None))}


def partials_seen(partials: list[Any]) -> dict[str, Any]:
    return {"ok": len(partials) > 1 and partials[-1].name is not None and partials[-1].age is not None,
            "grew": partials[0].name is None or partials[0].age is None}


def sync_scenarios(module: Any, base_url: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for mode in MODES:
        client = instructor.from_anthropic(module.Anthropic(base_url=base_url, api_key="k", max_retries=0),
                                           mode=instructor.Mode[mode])
        out[f"sync {mode.lower()}"] = attempt(lambda c=client: seen(c.messages.create(
            model=MODEL, max_tokens=256, response_model=Person, messages=ASK, max_retries=1)))
    client = instructor.from_anthropic(module.Anthropic(base_url=base_url, api_key="k", max_retries=0),
                                       mode=instructor.Mode.ANTHROPIC_TOOLS)
    out["sync partial"] = attempt(lambda: partials_seen(list(client.messages.create_partial(
        model=MODEL, max_tokens=256, response_model=Person, messages=ASK))))
    return out


async def async_scenarios(module: Any, base_url: str) -> dict[str, Any]:
    async def run(coro: Any) -> dict[str, Any]:
        try:
            result: dict[str, Any] = await coro
        except Exception as exc:
            from _common import failure

            return failure(exc)
        return result

    async def one(c: Any) -> dict[str, Any]:
        return seen(await c.messages.create(model=MODEL, max_tokens=256, response_model=Person, messages=ASK,
                                            max_retries=1))

    async def partial(c: Any) -> dict[str, Any]:
        return partials_seen([p async for p in c.messages.create_partial(
            model=MODEL, max_tokens=256, response_model=Person, messages=ASK)])

    out: dict[str, Any] = {}
    clients = []
    for mode in MODES:
        given = module.AsyncAnthropic(base_url=base_url, api_key="k", max_retries=0)
        clients.append(given)
        out[f"async {mode.lower()}"] = await run(one(instructor.from_anthropic(given, mode=instructor.Mode[mode])))
    given = module.AsyncAnthropic(base_url=base_url, api_key="k", max_retries=0)
    clients.append(given)
    out["async partial"] = await run(partial(instructor.from_anthropic(given, mode=instructor.Mode.ANTHROPIC_TOOLS)))
    for given in clients:
        await given.close()  # on this loop (asyncio.run closes it after)
    return out


def main() -> None:
    base_url, kind = sys.argv[1], sys.argv[2]
    module = client_module(kind, "anthropic")
    results: dict[str, Any] = {"instructor": instructor.__version__, "anthropic": anthropic.__version__}
    results.update(sync_scenarios(module, base_url))
    results.update(asyncio.run(async_scenarios(module, base_url)))
    print(json.dumps(results))


if __name__ == "__main__":
    main()
