"""The official client's documented usage (openai-python README), with only the import changed.

Each pattern runs four times: with ``openai`` (the reference behaviour) and with ``llmclient``,
each through its ``OpenAI`` and its ``AsyncOpenAI`` (``drive``: ``await`` where the official
README's async example awaits, ``async for`` / ``async with`` where it iterates or enters).
"""

from __future__ import annotations

import importlib
import json
from types import ModuleType
from typing import Any

import pytest

from tests._both import Drive

from .fakeserver import HypercornServer

MODULES = ["openai", "llmclient"]


@pytest.fixture(params=MODULES)
def sdk(request: pytest.FixtureRequest, fake: HypercornServer, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
    return importlib.import_module(request.param)


def test_basic_chat(drive: Drive, sdk: ModuleType) -> None:
    client = drive.client(sdk)
    completion = drive(client.chat.completions.create(
        model="gpt-4o", messages=[{"role": "developer", "content": "Talk like a pirate."},
                                  {"role": "user", "content": "How do I check if a Python object is an instance of a class?"}]))
    assert completion.choices[0].message.content == "Hello world"
    assert completion.usage.total_tokens == 7 and completion.choices[0].message.role == "assistant"
    assert completion._request_id.startswith("srv-")
    assert json.loads(completion.model_dump_json(indent=2))["id"] == "chatcmpl-test"
    assert completion.to_dict()["object"] == "chat.completion"
    assert completion.model_dump()["choices"][0]["message"]["content"] == "Hello world"


def test_streaming(drive: Drive, sdk: ModuleType) -> None:
    client = drive.client(sdk)
    stream = drive(client.chat.completions.create(
        model="gpt-4o", messages=[{"role": "user", "content": "Say this is a test"}], stream=True))
    out = "".join(chunk.choices[0].delta.content or "" for chunk in drive.iterate(stream))
    assert out == "tok0 tok1 tok2 tok3 tok4 "
    with drive.enter(drive(client.chat.completions.create(model="gpt-4o", messages=[], stream=True))) as stream2:
        chunks = drive.iterate(stream2)
        assert chunks
        for chunk in chunks:
            assert chunk.id == "chunk-test"


def test_error_handling(drive: Drive, sdk: ModuleType) -> None:
    client = drive.client(sdk, max_retries=0)
    caught: list[Any] = []
    for spec in ("status=429", "status=404", "status=500"):
        try:
            drive(client.chat.completions.create(model="gpt-4o", messages=[], extra_headers={"x-test-fault": spec}))
        except sdk.APIConnectionError as e:
            caught.append(("conn", e.__cause__))
        except sdk.RateLimitError as e:
            caught.append(("rate", e.status_code))
        except sdk.APIStatusError as e:
            caught.append(("status", e.status_code, e.response.status_code, e.message[:14]))
    assert caught == [("rate", 429), ("status", 404, 404, "Error code: 40"), ("status", 500, 500, "Error code: 50")]
    dead = drive.client(sdk, base_url="http://127.0.0.1:9/v1", max_retries=0)
    with pytest.raises(sdk.APIConnectionError) as info:
        drive(dead.models.list())
    assert info.value.__cause__ is not None


def test_retries_and_timeouts_options(drive: Drive, sdk: ModuleType) -> None:
    client = drive.client(sdk, max_retries=0, timeout=20.0)
    r = drive(client.with_options(max_retries=5).chat.completions.create(
        model="gpt-4o", messages=[], extra_headers={"x-test-fault": "status=503;retry_after=0;times=1"}))
    assert r.choices[0].message.content == "Hello world"
    with pytest.raises(sdk.APITimeoutError):
        drive(client.with_options(timeout=0.2).chat.completions.create(
            model="gpt-4o", messages=[], extra_headers={"x-test-fault": "stall_ms=1000"}))


def test_raw_response_and_models(drive: Drive, sdk: ModuleType) -> None:
    client = drive.client(sdk)
    response = drive(client.chat.completions.with_raw_response.create(
        model="gpt-4o", messages=[{"role": "user", "content": "x"}]))
    assert response.headers.get("x-request-id").startswith("srv-")
    assert drive(response.parse()).choices[0].message.content == "Hello world"
    assert [m.id for m in drive.iterate(client.models.list())] == ["test-model"]
    assert drive(client.embeddings.create(input="text", model="text-embedding-3-small")).data[0].embedding == \
        [0.5, -1.25, 2.0]


def test_tools(drive: Drive, sdk: ModuleType) -> None:
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}}}}]
    r = drive(drive.client(sdk).chat.completions.create(model="gpt-4o", messages=[], tools=tools,
                                                        tool_choice="auto"))
    call = r.choices[0].message.tool_calls[0]
    assert (call.id, call.type, call.function.name) == ("call_1", "function", "get_weather")
    assert json.loads(call.function.arguments) == {"city": "Paris"}
