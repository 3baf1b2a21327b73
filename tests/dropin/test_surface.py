"""llmclient-only behaviour of the drop-in surface that the differential suite cannot show
(the official client behaves differently on purpose, or has no equivalent)."""

from __future__ import annotations

import asyncio
from typing import Any

import openai
import pytest

import llmclient
from llmclient.api.models import ChatCompletion, jsonable

MODEL = "gpt-4o-mini"
MESSAGES = [{"role": "user", "content": "Say something about the sea."}]


def test_a_stream_cut_by_a_reset_is_an_api_connection_error(ref_server: Any) -> None:
    client = llmclient.OpenAI(base_url=ref_server.base_url, api_key="k", max_retries=0)
    stream = client.chat.completions.create(model=MODEL, messages=MESSAGES, max_tokens=50, stream=True,
                                            extra_headers={"x-fault": "cut_after=3"})
    with pytest.raises(llmclient.APIConnectionError) as info:
        list(stream)
    assert isinstance(info.value, llmclient.IncompleteStreamError)
    assert info.value.trace_id and "Incomplete stream" in info.value.message


def test_a_reset_stream_async_is_caught_as_a_connection_error(ref_server: Any) -> None:
    async def main() -> str:
        client = llmclient.AsyncOpenAI(base_url=ref_server.base_url, api_key="k", max_retries=0)
        try:
            stream = await client.chat.completions.create(model=MODEL, messages=MESSAGES, max_tokens=50,
                                                          stream=True, extra_headers={"x-fault": "reset"})
            async for _ in stream:
                pass
        except llmclient.APIConnectionError as exc:
            return type(exc).__name__
        return "no error"

    assert asyncio.run(main()) in ("IncompleteStreamError", "APIConnectionError")


def test_the_official_sentinels_are_dropped_like_ours(ref_server: Any) -> None:
    # Frameworks built on the official client pass openai.NOT_GIVEN / openai.omit for every
    # argument they leave unset; sent as they are, orjson would refuse them.
    client = llmclient.OpenAI(base_url=ref_server.base_url, api_key="k")
    r = client.chat.completions.create(model=MODEL, messages=MESSAGES, max_tokens=3,
                                       temperature=openai.NOT_GIVEN, top_p=openai.omit, tools=openai.not_given,
                                       timeout=openai.NOT_GIVEN, extra_headers={"x-drop": openai.omit})
    assert r.choices[0].finish_reason == "length"


def test_jsonable_turns_response_objects_into_the_fields_that_were_sent() -> None:
    data = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}
    ours = ChatCompletion({"choices": [{"message": data}]}).choices[0].message
    official = openai.types.chat.ChatCompletionMessage.model_validate(data)
    plain = [{"role": "user", "content": "x"}]
    assert jsonable(plain) is plain  # plain data is not copied
    assert jsonable([ours, official]) == [data, data]
    assert jsonable({"m": {"tool_calls": ours.tool_calls}}) == {"m": {"tool_calls": data["tool_calls"]}}


def test_module_level_client_follows_its_settings(ref_server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(llmclient, "api_key", "sk-a")
    monkeypatch.setattr(llmclient, "base_url", ref_server.base_url)
    from llmclient._module_client import load_client

    first = load_client()
    assert llmclient.chat.completions.create(model=MODEL, messages=MESSAGES, max_tokens=2).choices
    monkeypatch.setattr(llmclient, "api_key", "sk-b")
    second = load_client()
    assert second is not first and second.api_key == "sk-b" and load_client() is second


def test_azure_sends_the_official_shape_of_request() -> None:
    client = llmclient.AzureOpenAI(azure_endpoint="https://res.openai.azure.com/", api_version="2024-10-21",
                                   api_key="az")
    call = client._build_call("POST", "/chat/completions", {"model": "dep", "messages": []})
    assert call.url == "https://res.openai.azure.com/openai/deployments/dep/chat/completions"
    assert call.query == {"api-version": "2024-10-21"} and call.headers["api-key"] == "az"
    assert "authorization" not in call.headers
    other = client.with_options(timeout=3.0)
    assert other._build_call("GET", "/models").query == {"api-version": "2024-10-21"}
