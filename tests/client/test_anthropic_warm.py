"""``client.warm(...)`` on the Anthropic face (issue 45): the prompt's prefix sent ahead as a
Messages call of one token, so the server's prompt cache holds it when the app's call comes; and
``prefetch=``, which this face does not offer, refused with a clear error before anything is
sent. Against a real reference server with its prefix cache on (it reports Anthropic's
``cache_creation_input_tokens`` / ``cache_read_input_tokens``); sync and async.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import pytest

import llmclient
from tests._both import Drive
from tests.conftest import RefServer, start_ref_server, stop_ref_server

MODEL = "claude-haiku-4-5"


@pytest.fixture(scope="module")
def cached() -> Iterator[RefServer]:
    server = start_ref_server(profile="h200-1b")  # prefix caching on, millisecond steps
    yield server
    stop_ref_server(server)


def _system(drive: Drive, topic: str) -> list[dict[str, Any]]:
    text = f"{drive.kind} {topic}: you answer questions about ships, hulls and harbours. " * 30
    return [{"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}]


def test_warm_fills_the_cache_the_apps_call_then_reads(drive: Drive, cached: RefServer) -> None:
    client = drive.client(llmclient, face="Anthropic", base_url=cached.url, api_key="sk-ant-test", max_retries=0)
    system = _system(drive, "warm")
    ask = [{"role": "user", "content": "What is a keel?"}]
    warm = drive(client.warm(model=MODEL, system=system, messages=ask))
    assert isinstance(warm, anthropic.types.Message)
    assert warm.usage.output_tokens <= 1  # one token at most: the prefill is what it is for
    assert warm.usage.cache_creation_input_tokens > 0 and warm.usage.cache_read_input_tokens == 0
    answer = drive(client.messages.create(model=MODEL, max_tokens=8, system=system, messages=ask))
    assert answer.usage.cache_read_input_tokens >= warm.usage.cache_creation_input_tokens - 16  # whole blocks
    assert client.speculation_stats()["warmups"] == 1
    drive(client.close())


def test_keep_warm_holds_a_keeper_until_close(drive: Drive, cached: RefServer) -> None:
    client = drive.client(llmclient, face="Anthropic", base_url=cached.url, api_key="sk-ant-test", max_retries=0)
    drive(client.warm(model=MODEL, system=_system(drive, "keep"), messages=[{"role": "user", "content": "hi"}],
                      keep_warm=True))
    assert client.speculation_stats()["keep_warm"] == 1
    drive(client.close())
    assert client.speculation_stats()["keep_warm"] == 0


def test_prefetch_is_refused_on_this_face_before_anything_is_sent(drive: Drive, cached: RefServer) -> None:
    with pytest.raises(ValueError, match=r"prefetch= is not supported on the Anthropic face.*client\.warm"):
        drive.client(llmclient, face="Anthropic", base_url=cached.url, api_key="sk-ant-test", prefetch=True)
    client = drive.client(llmclient, face="Anthropic", base_url="http://127.0.0.1:9", api_key="sk-ant-test")
    # nothing listens on port 9: a request sent would be a connection error, not this
    with pytest.raises(ValueError, match="prefetch= is not supported"):
        drive(client.messages.create(model=MODEL, max_tokens=8, messages=[{"role": "user", "content": "hi"}],
                                     prefetch=True))
