"""A caller's ``http_client`` (httpx or httpx2): what the differential suite cannot show.

Client calls run through ``OpenAI`` and ``AsyncOpenAI`` (``drive``: each runs on both)."""

from __future__ import annotations

from typing import Any

import httpx
import httpx2
import pytest

import llmclient
from tests._addresses import refused_url
from tests._both import Drive

MODEL = "gpt-4o-mini"
MESSAGES = [{"role": "user", "content": "hi"}]


def test_an_httpx2_connection_failure_is_an_api_connection_error(drive: Drive) -> None:
    # not 127.0.0.1: a refused connect to a loopback address is not retried at all
    client = drive.client(api_key="k", base_url=refused_url(), max_retries=1,
                          http_client=drive.http_client(module=httpx2))
    with pytest.raises(llmclient.APIConnectionError) as info:
        drive(client.chat.completions.create(model=MODEL, messages=MESSAGES))
    assert info.value.trace_id and info.value.timings.retries == 1  # retried as an httpx error


def test_an_httpx2_timeout_is_an_api_timeout_error(drive: Drive, ref_server: Any) -> None:
    client = drive.client(api_key="k", base_url=ref_server.base_url, max_retries=0,
                          http_client=drive.http_client(module=httpx2), timeout=0.2)
    with pytest.raises(llmclient.APITimeoutError) as info:
        drive(client.chat.completions.create(model=MODEL, messages=MESSAGES,
                                             extra_headers={"x-fault": "stall_ms=3000"}))
    assert type(info.value).__name__ == "APITimeoutError"


def test_the_http_clients_credential_headers_are_part_of_the_cache_scope() -> None:
    def scope(http: Any) -> str:
        return llmclient.OpenAI(api_key="k", base_url="http://h/v1", http_client=http)._scope

    a, b = httpx.Client(headers={"api-key": "one"}), httpx.Client(headers={"api-key": "two"})
    assert scope(a) != scope(b)
    assert scope(httpx.Client(headers={"x-other": "1"})) == scope(httpx.Client())
