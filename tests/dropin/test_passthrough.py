"""The passed-through endpoints (``llmclient.api.passthrough``): what the differential suite
cannot show, because the official client behaves differently on purpose (our connections,
tracing) or because it is about ``openai`` being absent."""

from __future__ import annotations

import asyncio
import sys
import uuid
from typing import Any

import httpx
import openai
import pytest

import llmclient

MODEL = "gpt-4o-mini"


def test_passed_calls_use_our_http2_connection_and_carry_a_trace(ref_server: Any) -> None:
    seen: list[httpx.Request] = []
    client = llmclient.OpenAI(base_url=ref_server.base_url, api_key="k", max_retries=0)
    raw = client.get("/models", cast_to=httpx.Response)
    assert raw.http_version == "HTTP/2" and raw.status_code == 200
    seen.append(raw.request)
    with pytest.raises(llmclient.NotFoundError) as info:
        client.moderations.create(input="x")
    err = info.value
    assert isinstance(err, llmclient.APIStatusError) and err.status_code == 404
    sent = err.request.headers
    assert err.trace_id and sent["traceparent"].split("-")[1] == err.trace_id
    assert uuid.UUID(sent["x-request-id"]).hex == err.trace_id
    assert err.trace_id in str(err)
    assert client.files is not None and isinstance(client.files, openai.resources.Files)
    from llmclient.api.passthrough import official_client

    assert official_client(client) is official_client(client) is client.__dict__["_official"]


def test_async_passed_calls_map_errors_and_use_http2(ref_server: Any) -> None:
    async def main() -> tuple[str, str]:
        client = llmclient.AsyncOpenAI(base_url=ref_server.base_url, api_key="k", max_retries=0)
        raw = await client.get("/models", cast_to=httpx.Response)
        try:
            await client.moderations.create(input="hi")  # the reference server has none
        except llmclient.NotFoundError as exc:
            return raw.http_version, type(exc).__module__
        return raw.http_version, "no error"

    assert asyncio.run(main()) == ("HTTP/2", "llmclient._errors")


def test_an_official_only_error_class_keeps_its_name_under_ours() -> None:
    from llmclient.api.passthrough import translate

    exc = translate(openai.WebSocketConnectionClosedError("closed", unsent_messages=[]))
    assert type(exc).__name__ == "WebSocketConnectionClosedError"
    assert isinstance(exc, llmclient.OpenAIError) and str(exc) == "closed"
    assert translate(ValueError("x")) is None  # not the official client's: raised as it is


def test_official_only_settings_reach_the_official_client() -> None:
    client = llmclient.OpenAI(api_key="k", base_url="http://127.0.0.1:9/v1", webhook_secret="whsec_x")
    assert client.webhook_secret == "whsec_x"
    assert client.with_options(timeout=2.0).webhook_secret == "whsec_x"


def test_without_openai_installed_the_error_names_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    client = llmclient.OpenAI(api_key="k", base_url="http://127.0.0.1:9/v1")
    monkeypatch.setitem(sys.modules, "openai", None)  # `import openai` now fails as if absent
    with pytest.raises(AttributeError, match=r"client.responses .*`openai` package.*pip install openai"):
        client.responses.retrieve("resp_1")  # passed through: needs the official package
    with pytest.raises(AttributeError, match=r"client.files .*`openai` package.*pip install openai"):
        client.files.list()
    assert not hasattr(client, "files")
    # The accelerated calls need no openai: responses.create is ours (it reaches the network).
    assert client.chat.completions is not None
    with pytest.raises(llmclient.APIConnectionError):
        client.with_options(max_retries=0).responses.create(model=MODEL, input="hi")
