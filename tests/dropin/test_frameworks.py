"""Frameworks that build their own official client can be handed llmclient's instead: LangChain's
``ChatOpenAI(client=..., root_client=..., async_client=..., root_async_client=...)`` (the
README's recipe), against the reference server; the calls then go through llmclient (trace ids,
timings, its connections)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel

import llmclient

langchain_openai = pytest.importorskip("langchain_openai")  # the test extra installs it

MODEL = "gpt-4o-mini"


class Person(BaseModel):
    name: str
    age: int


def _chat(ref_server: Any, **kwargs: Any) -> Any:
    sync = llmclient.OpenAI(base_url=ref_server.base_url, api_key="k")
    async_ = llmclient.AsyncOpenAI(base_url=ref_server.base_url, api_key="k")
    return langchain_openai.ChatOpenAI(model=MODEL, api_key="k", client=sync.chat.completions, root_client=sync,
                                       async_client=async_.chat.completions, root_async_client=async_, **kwargs)


def test_langchain_invoke_stream_and_structured_output_through_llmclient(ref_server: Any) -> None:
    chat = _chat(ref_server, max_tokens=6)
    message = chat.invoke("Say something about the sea.")
    assert message.content and message.response_metadata["finish_reason"] == "length"
    assert message.response_metadata["model_name"] == MODEL
    pieces = [chunk.content for chunk in chat.stream("Say something about the sea.")]
    assert "".join(pieces) and len(pieces) > 2
    person = _chat(ref_server).with_structured_output(Person).invoke("Who is it?")
    assert isinstance(person, Person)


def test_langchain_async_through_llmclient(ref_server: Any) -> None:
    chat = _chat(ref_server, max_tokens=6)

    async def main() -> tuple[Any, list[str], Any]:
        message = await chat.ainvoke("Say something about the sea.")
        pieces = [chunk.content async for chunk in chat.astream("Hi")]
        person = await _chat(ref_server).with_structured_output(Person).ainvoke("Who is it?")
        return message, pieces, person

    message, pieces, person = asyncio.run(main())
    assert message.content and "".join(pieces) and isinstance(person, Person)


def test_the_framework_sees_llmclients_errors_with_trace_ids(ref_server: Any) -> None:
    chat = _chat(ref_server, max_retries=0)
    with pytest.raises(llmclient.BadRequestError) as info:
        chat.invoke("hi", extra_headers={"x-fault": "status=400"})
    assert info.value.trace_id
