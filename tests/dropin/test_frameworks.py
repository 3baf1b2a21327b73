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


def _official_chat(ref_server: Any, **kwargs: Any) -> Any:
    import openai

    sync = openai.OpenAI(base_url=ref_server.base_url, api_key="k")
    async_ = openai.AsyncOpenAI(base_url=ref_server.base_url, api_key="k")
    return langchain_openai.ChatOpenAI(model=MODEL, api_key="k", client=sync.chat.completions, root_client=sync,
                                       async_client=async_.chat.completions, root_async_client=async_, **kwargs)


@pytest.mark.parametrize("which", ["llmclient", "openai"])
@pytest.mark.parametrize(("status", "model", "headers"), [
    (404, "no-such-model", {}),  # the reference server's model_not_found
    (429, MODEL, {"x-fault": "status=429;retry_after=0"}),
])
def test_langchain_maps_a_404_and_a_429_to_its_own_errors_as_with_the_official_client(
        ref_server: Any, which: str, status: int, model: str, headers: dict[str, str]) -> None:
    """langchain-openai catches ``openai.APIError`` and raises its documented errors
    (``ModelNotFoundError``, ``ModelRateLimitError``); llmclient's errors are the official kind, so
    the same mapping happens, and the cause still carries llmclient's trace id."""
    from langchain_core.exceptions import ModelNotFoundError, ModelRateLimitError

    expected = {404: ModelNotFoundError, 429: ModelRateLimitError}[status]
    chat = (_chat if which == "llmclient" else _official_chat)(ref_server, max_retries=0).bind(extra_headers=headers)
    with pytest.raises(expected) as info:
        _invoke(chat, model)
    assert info.value.status_code == status  # type: ignore[attr-defined]
    if which == "llmclient":
        assert isinstance(info.value.__cause__, llmclient.APIStatusError) and info.value.__cause__.trace_id

    async def main() -> BaseException:
        with pytest.raises(expected) as ainfo:
            await _ainvoke(chat, model)
        return ainfo.value

    assert asyncio.run(main()).status_code == status  # type: ignore[attr-defined]


def _invoke(chat: Any, model: str) -> Any:
    return chat.invoke("hi", model=model)


async def _ainvoke(chat: Any, model: str) -> Any:
    return await chat.ainvoke("hi", model=model)
