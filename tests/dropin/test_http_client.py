"""A caller's ``http_client`` (httpx or httpx2): what the differential suite cannot show."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import httpx2
import pytest

import llmclient

MODEL = "gpt-4o-mini"
MESSAGES = [{"role": "user", "content": "hi"}]


def test_an_httpx2_connection_failure_is_an_api_connection_error() -> None:
    client = llmclient.OpenAI(api_key="k", base_url="http://127.0.0.1:9/v1", max_retries=1,
                              http_client=httpx2.Client())
    with pytest.raises(llmclient.APIConnectionError) as info:
        client.chat.completions.create(model=MODEL, messages=MESSAGES)
    assert info.value.trace_id and info.value.timings.retries == 1  # retried as an httpx error


def test_an_httpx2_async_timeout_is_an_api_timeout_error(ref_server: Any) -> None:
    async def main() -> str:
        async with httpx2.AsyncClient() as http:
            client = llmclient.AsyncOpenAI(api_key="k", base_url=ref_server.base_url, max_retries=0,
                                           http_client=http, timeout=0.2)
            try:
                await client.chat.completions.create(model=MODEL, messages=MESSAGES,
                                                     extra_headers={"x-fault": "stall_ms=3000"})
            except llmclient.APITimeoutError as exc:
                return type(exc).__name__
        return "no error"

    assert asyncio.run(main()) == "APITimeoutError"


def test_the_http_clients_credential_headers_are_part_of_the_cache_scope() -> None:
    def scope(http: Any) -> str:
        return llmclient.OpenAI(api_key="k", base_url="http://h/v1", http_client=http)._scope

    a, b = httpx.Client(headers={"api-key": "one"}), httpx.Client(headers={"api-key": "two"})
    assert scope(a) != scope(b)
    assert scope(httpx.Client(headers={"x-other": "1"})) == scope(httpx.Client())
