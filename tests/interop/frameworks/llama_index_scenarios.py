"""llama-index's ``OpenAI`` LLM (llama-index-llms-openai, which wants ``openai<3``) handed clients
(``openai_client=`` / ``async_openai_client=``; with ``reuse_client`` left on it uses them and
makes none): ``complete``, ``stream_complete``, ``chat``, ``stream_chat``, ``achat``,
``astream_chat`` and ``chat_with_tools`` with ``tool_choice="required"`` (the reference server
then calls the tool with arguments that follow its schema); and ``OpenAILike`` (a subclass that
takes the same clients) with ``is_chat_model=False``: ``complete`` and ``stream_complete``
through the legacy Completions endpoint; and a 429, which must come out as
``openai.RateLimitError``. (``complete(..., use_chat_completions=False)`` is no
way there: llama-index passes that keyword on to ``completions.create``, a ``TypeError`` with
the official client too.)
``python llama_index_scenarios.py BASE_URL llmclient|openai``; prints, per scenario, what came of
it (``"ok"``, whether the call went through llmclient, the details compared with the official
client's run) or the error."""

from __future__ import annotations

import asyncio
import json
import sys
from importlib import metadata
from typing import Any

from _common import attempt, official_error  # this folder: shared by the scenario scripts
from llama_index.core.llms import ChatMessage
from llama_index.core.tools import FunctionTool
from llama_index.llms.openai import OpenAI
from llama_index.llms.openai_like import OpenAILike

MODEL = "gpt-4o-mini"
CHAT = [ChatMessage(role="user", content="Say hi.")]


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def clients(kind: str, base_url: str) -> tuple[Any, Any]:
    if kind == "llmclient":
        import llmclient as module
    else:
        import openai as module  # type: ignore[no-redef]
    sync = module.OpenAI(base_url=base_url, api_key="k", max_retries=0)
    async_ = module.AsyncOpenAI(base_url=base_url, api_key="k", max_retries=0)
    assert type(sync).__module__.split(".")[0] == kind, type(sync)
    return sync, async_


def llm(kind: str, base_url: str, cls: type[OpenAI] = OpenAI, **kwargs: Any) -> OpenAI:
    sync, async_ = clients(kind, base_url)
    built = cls(model=MODEL, api_key="k", api_base=base_url, max_tokens=8, openai_client=sync,
                async_openai_client=async_, **kwargs)
    assert built._get_client() is sync and built._get_aclient() is async_
    return built


def seen(text: str | None, raw: Any) -> dict[str, Any]:
    return {"ok": isinstance(text, str) and bool(text), "raw": type(raw).__name__,
            "trace_id": bool(getattr(raw, "trace_id", None))}


def streamed(texts: list[str], deltas: list[str | None]) -> dict[str, Any]:
    return {"ok": len(deltas) > 1 and bool(texts[-1]) and texts[-1] == "".join(d or "" for d in deltas),
            "deltas": len(deltas) > 1}


def complete(kind: str, base_url: str) -> dict[str, Any]:
    response = llm(kind, base_url).complete("Say hi.")
    return seen(response.text, response.raw)


def like_complete(kind: str, base_url: str) -> dict[str, Any]:
    response = llm(kind, base_url, OpenAILike, is_chat_model=False).complete("Say hi.")
    out = seen(response.text, response.raw)
    out["ok"] = out["ok"] and out["raw"] == "Completion"
    return out


def like_stream_complete(kind: str, base_url: str) -> dict[str, Any]:
    parts = list(llm(kind, base_url, OpenAILike, is_chat_model=False).stream_complete("Say hi."))
    out = streamed([p.text for p in parts], [p.delta for p in parts])
    out["raw"] = type(parts[-1].raw).__name__
    return out


def stream_complete(kind: str, base_url: str) -> dict[str, Any]:
    parts = list(llm(kind, base_url).stream_complete("Say hi."))
    return streamed([p.text for p in parts], [p.delta for p in parts])


def chat(kind: str, base_url: str) -> dict[str, Any]:
    response = llm(kind, base_url).chat(CHAT)
    out = seen(response.message.content, response.raw)
    out["role"] = str(response.message.role.value)
    return out


def stream_chat(kind: str, base_url: str) -> dict[str, Any]:
    parts = list(llm(kind, base_url).stream_chat(CHAT))
    return streamed([p.message.content or "" for p in parts], [p.delta for p in parts])


async def achat(kind: str, base_url: str) -> dict[str, Any]:
    response = await llm(kind, base_url).achat(CHAT)
    return seen(response.message.content, response.raw)


async def astream_chat(kind: str, base_url: str) -> dict[str, Any]:
    parts = [p async for p in await llm(kind, base_url).astream_chat(CHAT)]
    return streamed([p.message.content or "" for p in parts], [p.delta for p in parts])


def chat_with_tools(kind: str, base_url: str) -> dict[str, Any]:
    model = llm(kind, base_url)
    model.max_tokens = None  # the forced call's arguments must not be cut short
    response = model.chat_with_tools([FunctionTool.from_defaults(fn=add)], user_msg="Add two numbers.",
                                     tool_required=True)
    calls = model.get_tool_calls_from_response(response, error_on_no_tool_call=True)
    kwargs = [c.tool_kwargs for c in calls]
    return {"ok": [c.tool_name for c in calls] == ["add"]
            and all(isinstance(k.get("a"), int) and isinstance(k.get("b"), int) for k in kwargs),
            "tool_calls": [c.tool_name for c in calls],
            "trace_id": bool(getattr(response.raw, "trace_id", None))}



def rate_limited(kind: str, base_url: str) -> dict[str, Any]:
    """A 429 (the reference server's ``x-fault``) through llama-index's retry decorator (one
    attempt): it comes out as ``openai.RateLimitError``."""
    fault = {"extra_headers": {"x-fault": "status=429;retry_after=0"}}
    try:
        llm(kind, base_url, max_retries=1, additional_kwargs=fault).chat(CHAT)
    except Exception as exc:
        return official_error(exc, "RateLimitError")
    return {"ok": False, "error": "no error"}




def main() -> None:
    base_url, kind = sys.argv[1], sys.argv[2]
    results: dict[str, Any] = {"llama-index-llms-openai": metadata.version("llama-index-llms-openai"),
                               "llama-index-core": metadata.version("llama-index-core"),
                               "openai": metadata.version("openai")}
    for name, run in (("complete", complete), ("stream_complete", stream_complete), ("chat", chat),
                      ("stream_chat", stream_chat), ("chat_with_tools", chat_with_tools),
                      ("OpenAILike complete", like_complete),
                      ("OpenAILike stream_complete", like_stream_complete), ("429", rate_limited)):
        results[name] = attempt(lambda run=run: run(kind, base_url))
    for name, arun in (("achat", achat), ("astream_chat", astream_chat)):
        results[name] = attempt(lambda arun=arun: asyncio.run(arun(kind, base_url)))
    print(json.dumps(results))


if __name__ == "__main__":
    main()
